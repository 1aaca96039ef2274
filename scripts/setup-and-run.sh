#!/usr/bin/env bash
# README command 1: install what is needed, build, compile and run the bundled tiny-gpt model on
# the cpu target, then list the targets.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
rlx="${RLX_BUILD_DIR:-$root/build}/bin/rlx"
model="$root/models/tiny-gpt"
out=$(mktemp -d)
"$rlx" compile "$model/model.rlx" --target cpu -o "$out/compiled" --bind S=6 --timings
"$rlx" run "$model/model.rlx" --target cpu --inputs "$model/inputs.safetensors" --output "$out/logits.safetensors"
"$rlx" --list-targets
echo "outputs in $out"
