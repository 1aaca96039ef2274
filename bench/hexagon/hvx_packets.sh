#!/usr/bin/env bash
# Executed Hexagon packets of int8 products with the HVX dot products against the scalar loop
# kernel (RLX_HEXAGON_HVX=0), counted by qemu-hexagon (one translation block per packet,
# -singlestep -d exec,nochain). Packet counts are deterministic, so one run per case; they are
# an instruction-level measure, not DSP time (no caches, no VTCM, no pipeline stalls).
#   bench/hexagon/hvx_packets.sh [path/to/rlx]
set -euo pipefail
rlx=${1:-build/bin/rlx}
qemu=${QEMU_HEXAGON:-qemu-hexagon}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Each case: its IR in $work/<name>.rlx and its inputs as name:bytes (i8 elements).
cat >"$work/i8-dot-16x128x512.rlx" <<'IR'
graph @t(%p: i8[16,512], %q: i8[128,512]) {
  %y = dot_general(%p, %q) {lhs_batch = [], lhs_contract = [1], rhs_batch = [], rhs_contract = [1]} : i8[16,128]
  return %y
}
IR
cat >"$work/widened-i32-16x128x512.rlx" <<'IR'
graph @t(%p: i8[16,512], %q: i8[128,512]) {
  %pi = convert(%p) {dtype = i32} : i32[16,512]
  %qi = convert(%q) {dtype = i32} : i32[128,512]
  %y = dot_general(%pi, %qi) {lhs_batch = [], lhs_contract = [1], rhs_batch = [], rhs_contract = [1]} : i32[16,128]
  return %y
}
IR
cases=("i8-dot-16x128x512|p:8192 q:65536" "widened-i32-16x128x512|p:8192 q:65536")

packets() {  # folder -> executed packets
  (cd "$1" && "$qemu" -singlestep -d exec,nochain -D exec.log ./hexagon_program.elf && grep -c '^Trace' exec.log)
}

printf '| case | HVX packets | scalar packets | scalar / HVX |\n|---|---|---|---|\n'
for c in "${cases[@]}"; do
  IFS='|' read -r name inputs <<<"$c"
  for mode in hvx scalar; do
    dir="$work/$name-$mode"
    RLX_HEXAGON_HVX=$([[ $mode == hvx ]] && echo 1 || echo 0) \
      "$rlx" compile "$work/$name.rlx" --target hexagon -o "$dir" >/dev/null
    j=0
    for spec in $inputs; do
      python3 -c "import random,sys; random.seed($j); sys.stdout.buffer.write(bytes(random.randrange(256) for _ in range(${spec#*:})))" \
        >"$dir/in${j}_${spec%%:*}.bin"
      j=$((j + 1))
    done
  done
  hvx=$(packets "$work/$name-hvx")
  scalar=$(packets "$work/$name-scalar")
  cmp -s "$work/$name-hvx/out0_y.bin" "$work/$name-scalar/out0_y.bin" || { echo "$name: outputs differ" >&2; exit 1; }
  printf '| %s | %s | %s | %.1fx |\n' "$name" "$hvx" "$scalar" "$(echo "$scalar / $hvx" | bc -l)"
done
