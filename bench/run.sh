#!/usr/bin/env bash
# The one command of bench/: races rlx against its peers (see bench/README.md).
#   bench/setup.sh                      # once: the peers, in bench/.venv and bench/.venvs/
#   bench/run.sh --quick                # MiniLM, Qwen3 and sgemm with few runs
#   bench/run.sh --suite minilm --peers onnxruntime-fused,torch
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -x "$here/.venv/bin/python" ]; then
  echo "bench: bench/.venv is missing; run bench/setup.sh first" >&2
  exit 1
fi
exec "$here/.venv/bin/python" "$here/run.py" "$@"
