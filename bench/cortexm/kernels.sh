#!/usr/bin/env bash
# Instructions per inference of a model `rlx compile --target cortexm` wrote, on the three qemu
# boards, with each dot-product path the core has: Helium (M55), SMLAD (-DRLX_CM_NO_MVE) and plain
# C (-DRLX_CM_NO_MVE -DRLX_CM_NO_SMLAD), built and run side by side in one go. qemu counts
# instructions (-icount), not cycles.
#   bench/cortexm/kernels.sh OUT_DIR [SAMPLES]
# OUT_DIR is the folder of `rlx compile MODEL --target cortexm -o OUT_DIR`; the inputs are
# pseudo-random int8 rows (the kernels have no data-dependent branches but the clamps).
set -euo pipefail
dir=$(cd "$1" && pwd)
samples=${2:-100}
here=$(cd "$(dirname "$0")" && pwd)
fw=$here/../../plugins/cortexm/tests/firmware
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
size=$(sed -n 's/^#define RLX_MODEL_INPUT_SIZE //p' "$dir/model.h")
{
  echo '#include <stdint.h>'
  echo '#include "model.h"'
  echo "#define RLX_FW_SAMPLES $samples"
  echo 'extern const int8_t rlx_fw_inputs[RLX_FW_SAMPLES][RLX_MODEL_INPUT_SIZE];'
} > "$work/inputs.h"
awk -v n="$samples" -v k="$size" 'BEGIN {
  srand(1); print "#include \"inputs.h\"";
  print "const int8_t rlx_fw_inputs[RLX_FW_SAMPLES][RLX_MODEL_INPUT_SIZE] = {";
  for (i = 0; i < n; i++) { printf "{"; for (j = 0; j < k; j++) printf "%d,", int(rand() * 256) - 128; print "},"; }
  print "};" }' > "$work/inputs.c"
printf '| core (board) | Helium | SMLAD | plain C | plain / best |\n|---|---|---|---|---|\n'
for triple in cortex-m4:mps2-an386:soft cortex-m7:mps2-an500:soft cortex-m55:mps3-an547:softfp; do
  IFS=: read -r cpu board abi <<< "$triple"
  declare -A insn=([mve]=0)
  variants="smlad plain"
  [ "$cpu" = cortex-m55 ] && variants="mve smlad plain"
  for variant in $variants; do
    case $variant in
      mve) extra="" ;;
      smlad) extra="-DRLX_CM_NO_MVE" ;;
      plain) extra="-DRLX_CM_NO_MVE -DRLX_CM_NO_SMLAD" ;;
    esac
    arm-none-eabi-gcc -mcpu="$cpu" -mthumb -mfloat-abi="$abi" -O2 -std=c99 $extra -nostartfiles \
      --specs=rdimon.specs -T "$fw/mps.ld" -I "$dir" -I "$work" "$fw/startup.c" \
      "$fw/harness.c" "$dir/model.c" "$work/inputs.c" -o "$work/$variant.elf"
    insn[$variant]=$(timeout 300 qemu-system-arm -machine "$board" -nographic -monitor none \
      -serial none -semihosting-config enable=on,target=native -icount shift=0 \
      -kernel "$work/$variant.elf" | sed -n 's/^insn_per_inference //p')
  done
  awk -v c="$cpu ($board)" -v m="${insn[mve]}" -v s="${insn[smlad]}" -v p="${insn[plain]}" \
    'BEGIN { best = (m > 0) ? m : s; mve = (m > 0) ? m : "-";
             printf "| %s | %s | %d | %d | %.2fx |\n", c, mve, s, p, p / best }'
done
