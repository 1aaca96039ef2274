#!/usr/bin/env bash
# A long fuzz campaign: every importer's libFuzzer binary (built by the fuzz_importers test into
# BUILD/fuzz, or copied elsewhere) run by several workers at once until each target has done
# RUNS executions in total or SECONDS have passed, whichever comes first. The suite's own run
# (tests/fuzz/run_fuzzers.cmake) is short and repeatable; this one explores, with a new seed per
# worker, and is how the ">= 10M executions per importer" figure of docs/testing.md is reached.
#
#   tests/fuzz/campaign.sh FUZZ_DIR CORPUS_DIR OUT_DIR [RUNS] [SECONDS] [WORKERS] [TARGETS]
#   tests/fuzz/campaign.sh build/fuzz tests/fuzz/corpus /tmp/campaign 10000000 3600 2 gguf,rten
#
# CORPUS_DIR holds one folder of seeds per target (the repository's tests/fuzz/corpus); the
# workers of a target share a working copy in OUT_DIR/corpus-TARGET, so what one finds the others
# read (-reload). Crashes, leaks and sanitizer reports are kept as OUT_DIR/crash-TARGET-* (add
# each one, minimised, to tests/fuzz/corpus/TARGET/ as a regression seed once fixed).
# OUT_DIR/summary.txt gets one line per target: executions, workers, crashes. Exit 1 if any
# worker found something.
#
# The hf target writes three files per input, and libFuzzer's per-input leak check (LeakSanitizer
# run whenever an input allocates more than it frees, which its static caches do) dominates its
# time: DETECT_LEAKS=0 in the environment turns that check off for a faster campaign; the suite's
# run keeps it on.
set -uo pipefail
fuzz_dir=$1 corpus_dir=$2 out=$3
runs=${4:-10000000} seconds=${5:-3600} workers=${6:-$(nproc)} only=${7:-}
mkdir -p "$out"
: >"$out/summary.txt"
pids=()
for fuzzer in "$fuzz_dir"/*_fuzz; do
  target=$(basename "$fuzzer" _fuzz)
  if [ -n "$only" ] && [[ ",$only," != *",$target,"* ]]; then continue; fi
  work="$out/corpus-$target"
  mkdir -p "$work"
  cp -r "$corpus_dir/$target/." "$work/" 2>/dev/null || true
  per_worker=$(((runs + workers - 1) / workers))
  for ((w = 0; w < workers; w++)); do
    "$fuzzer" "$work" -seed=$((RANDOM * 32768 + RANDOM + w)) -runs="$per_worker" \
      -max_total_time="$seconds" -print_final_stats=1 -rss_limit_mb=2048 -timeout=10 \
      -detect_leaks="${DETECT_LEAKS:-1}" ${MAX_LEN:+-max_len=$MAX_LEN} -artifact_prefix="$out/crash-$target-" \
      >"$out/log-$target-$w.txt" 2>&1 &
    pids+=($!)
  done
done
wait "${pids[@]}"
status=0
for fuzzer in "$fuzz_dir"/*_fuzz; do
  target=$(basename "$fuzzer" _fuzz)
  if [ -n "$only" ] && [[ ",$only," != *",$target,"* ]]; then continue; fi
  total=0 count=0
  for log in "$out"/log-"$target"-*.txt; do
    n=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
    total=$((total + ${n:-0}))
    count=$((count + 1))
  done
  crashes=$(find "$out" -maxdepth 1 -name "crash-$target-*" | wc -l)
  [ "$crashes" -eq 0 ] || status=1
  echo "$target: $total executions by $count workers, $crashes findings" | tee -a "$out/summary.txt"
done
exit $status
