#!/usr/bin/env bash
# One device call's worth of cuda measurements, each into its own log under $OUT (the device
# tool brings back only the last 12,000 characters of a command's output, so the logs carry the
# detail and stdout a few summary lines per step). On the GPU machine, from the repository root,
# after `. bench/gpu/on_device.sh` (tests/gpu/run-on-device.sh pack packed .device/ here):
#
#   bench/gpu/measure.sh STEP...
#     suite               the cuda conformance suite (tests/gpu/run-on-device.sh run suite)
#     suite@VAR=VALUE     the same with an opt-in path set (suite@RLX_CUDA_NORMED_PROLOGUE=1)
#     train               rlx train --target cuda on issue 16's recipe: images/s, then RLX_PROFILE's table
#     train@VAR=VALUE     the same with a switch set (train@RLX_CUDA_GEMM=kernel)
#     train-peers         bench/train_mlp/run.py: rlx cuda against PyTorch eager and torch.compile
#     qwen3[=MODES]       bench/gpu/qwen3.py's decoder (MODES as its --modes; default amp-f16,f32)
#     minilm              bench/gpu/run.py on /tmp/minilm: cuda f32 and f16 against PyTorch
#     profile-minilm=B    RLX_PROFILE of the f16 MiniLM at batch B, seq 128
#     ncu-decode          Nsight Compute's time of every kernel of a decode step (amp-f16, T=576)
#     ncu-minilm=B        the same for one f16 MiniLM run at batch B, seq 128
#     ncu-why=REGEX       Nsight Compute's reasons (throughputs, issue, occupancy) for the f16
#                         MiniLM kernels at batch 32 whose names match REGEX, first call of each
# Each step has its own time limit, so one slow step leaves the others their share of the call.
set -u
out=${OUT:-/tmp/rlx-measure}
mkdir -p "$out"
q3=/tmp/q3/qwen3-h1024-l8
decode_args=(--graph decode --bind T=576 --bind B=1 -t cuda --precision amp-f16 --kv-cache f16)

step() {  # step NAME LIMIT COMMAND...: runs it into $out/NAME.log, says how it ended
  local name=$1 limit=$2
  shift 2
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  echo "== $name: exit $? ($out/$name.log)"
}

minilm_f16() {  # the bundle's weights are model.f16.safetensors (run.py makes its own f32 copy)
  mkdir -p /tmp/minilm-f16 && cp /tmp/minilm/config.json /tmp/minilm-f16/
  ln -sf /tmp/minilm/model.f16.safetensors /tmp/minilm-f16/model.safetensors
}

for s in "$@"; do
  case $s in
    suite) step suite 240 tests/gpu/run-on-device.sh run suite
      grep -E "PASSED|FAILED|Failure" "$out/suite.log" | head -8 ;;
    suite@*) setting=${s#suite@}
      step "suite-${setting%%=*}" 240 env "$setting" tests/gpu/run-on-device.sh run suite
      grep -E "PASSED|FAILED|Failure" "$out/suite-${setting%%=*}.log" | head -8 ;;
    train|train@*) setting=RLX_TRAIN_PLAIN=1 name=train
      [ "$s" != train ] && setting=${s#train@} name=train-${setting%%=*}
      train=(rlx train --model mlp:784,128,10 --data synthetic:60000 --batch 128 --epochs 2
        --optimizer sgd:lr=0.02,momentum=0.9 --target cuda --json)
      step "$name" 60 env "$setting" "${train[@]}"
      grep -E '"images_per_s"' "$out/$name.log"
      step "$name-profile" 60 env "$setting" RLX_PROFILE=1 "${train[@]}"
      # The training step's table is the last: its title and eight largest rows.
      awk '/rlx profile/ {n = 0} {rows[n++] = $0} END {for (i = 0; i < 10 && i < n; i++) print rows[i]}' \
        <(grep -E "rlx profile|^ +[0-9.]+ +[0-9.]+%" "$out/$name-profile.log") ;;
    train-peers) step train-peers 240 python3 bench/train_mlp/run.py --rlx "$(command -v rlx)" \
        --rounds 2 --target cuda --torch-device cuda --peers torch,torch-compile
      grep -E "^\|" "$out/train-peers.log" | head -12 ;;
    qwen3|qwen3=*) modes=amp-f16,f32
      [ "$s" != qwen3 ] && modes=${s#qwen3=}
      step qwen3 300 python3 bench/gpu/qwen3.py --work /tmp/q3 --modes "$modes" --runs 10
      grep -E "^copy|^\|" "$out/qwen3.log" ;;
    minilm) step minilm 300 python3 bench/gpu/run.py --model /tmp/minilm --targets cuda,cuda:f16 \
        --torch-modes eager-f32,eager-f16,compile-f16 --batches 1,8,32,128 --rounds 2 --runs 20
      grep -E "^\|" "$out/minilm.log" | head -30 ;;
    profile-minilm=*) b=${s#profile-minilm=}
      minilm_f16
      step "profile-minilm-$b" 90 env RLX_PROFILE=1 rlx bench /tmp/minilm-f16 -t cuda --precision f16 \
        --batch "$b" --seq 128 --runs 10 --warmup 3
      head -16 "$out/profile-minilm-$b.log" ;;
    ncu-decode|ncu-minilm=*) name=ncu-decode what=("$q3" "${decode_args[@]}")
      if [ "$s" != ncu-decode ]; then
        name=ncu-minilm-${s#ncu-minilm=}
        what=(/tmp/minilm-f16 -t cuda --precision f16 --batch "${s#ncu-minilm=}" --seq 128)
        minilm_f16
      fi
      step "$name" 150 ncu --clock-control none --metrics gpu__time_duration.sum \
        --csv rlx bench "${what[@]}" --warmup 1 --runs 1
      python3 - "$out/$name.log" <<'PY'
import collections, csv, re, sys
rows = list(csv.reader(l for l in open(sys.argv[1]) if l.startswith('"')))
if rows:
    name, value = rows[0].index("Kernel Name"), rows[0].index("Metric Value")
    total, count = collections.defaultdict(float), collections.Counter()
    for r in rows[1:]:
        kind = re.sub(r"^k[0-9]+_", "", r[name])[:60]  # every layer's kernel of a kind together
        try:
            total[kind] += float(r[value].replace(",", "")) / 1000.0
            count[kind] += 1
        except ValueError:
            pass
    print(f"kernels {sum(count.values())}, {sum(total.values()):.1f} us (warm-up and timed run)")
    for k in sorted(total, key=lambda k: -total[k])[:15]:
        print(f"{total[k]:9.1f} us {count[k]:4d}x {total[k] / count[k]:7.2f} {k}")
PY
      ;;
    ncu-why=*) minilm_f16
      step ncu-why 150 ncu --clock-control none -k "regex:${s#ncu-why=}" -c 3 \
        --section SpeedOfLight --section Occupancy --section ComputeWorkloadAnalysis \
        --section SchedulerStats rlx bench /tmp/minilm-f16 -t cuda --precision f16 --batch 32 \
        --seq 128 --warmup 1 --runs 1
      grep -E "^  k[0-9]+_|Duration|DRAM Throughput|Compute \(SM\) Th|Issue Slots Busy|Executed Ipc A|Achieved Occ|No Eligible|Memory Throughput" \
        "$out/ncu-why.log" | head -40 ;;
    *) echo "measure.sh: unknown step '$s' (see the comment at the top)" >&2; exit 2 ;;
  esac
done
