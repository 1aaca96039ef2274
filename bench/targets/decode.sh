#!/usr/bin/env bash
# Decode speed of `rlx generate` on each executing target, same model and prompt, rounds
# interleaved across targets (this machine is shared and noisy): prints the median ms/token and
# tokens/s per target, from `rlx -v generate`'s own timing of the decode loop (prefill and
# compilation excluded).
#
#   bench/targets/decode.sh [MODEL] [TARGETS] [ROUNDS] [NEW_TOKENS]
#   bench/targets/decode.sh tests/data/fixtures/qwen3-tiny cpu,gpu,vulkan,opengl,webgpu 3 64
#
# RLX (default build/bin/rlx) picks the binary; webgpu needs RLX_WGPU_NATIVE (scripts/test.sh
# shows where the wgpu wheel keeps it).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
model=${1:-$root/tests/data/fixtures/qwen3-tiny}
IFS=, read -r -a targets <<< "${2:-cpu,gpu,vulkan,opengl,webgpu}"
rounds=${3:-3}
new=${4:-64}
rlx=${RLX:-$root/build/bin/rlx}
declare -A times
for ((r = 1; r <= rounds; r++)); do
  for t in "${targets[@]}"; do
    line=$("$rlx" -v generate "$model" --target "$t" --prompt-ids 1,2,3,4,5,6,7,8 \
             --max-new-tokens "$new" --ignore-eos 2>&1 >/dev/null | grep -o '([0-9.]* ms/token)' || true)
    ms=${line//[!0-9.]/}
    [ -n "$ms" ] || { echo "$t: no timing (run it by hand to see why)" >&2; continue; }
    times[$t]+="$ms "
  done
done
printf '%-8s %12s %10s   %s\n' target "ms/token" "tokens/s" "rounds (ms/token)"
for t in "${targets[@]}"; do
  [ -n "${times[$t]:-}" ] || continue
  median=$(printf '%s\n' ${times[$t]} | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}')
  printf '%-8s %12.2f %10.1f   %s\n' "$t" "$median" "$(awk -v m="$median" 'BEGIN {print 1000/m}')" "${times[$t]}"
done
