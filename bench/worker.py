"""Runs one peer on one task in its own process (and its own venv's Python), so peers never
share memory, threads or imports, and each one's peak memory is its own:

    PYTHON bench/worker.py PEER TASK.json RESULT.json [export]

TASK.json names the weights, the inputs (safetensors), where to write the outputs, and the
warm-up and run counts. RESULT.json receives the timings of lib/timing.py and the peer's
description, or {"error": ...} (exit 1) or {"unsupported": ...} (exit 3)."""
import importlib
import json
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import st, timing  # noqa: E402


def main():
    peer_name, task_path, result_path = sys.argv[1:4]
    mode = sys.argv[4] if len(sys.argv) > 4 else "run"
    with open(task_path) as f:
        task = json.load(f)
    result = {}
    code = 0
    try:
        peer = importlib.import_module("peers." + task.get("module", peer_name))
        if mode == "export":
            result = peer.export(task) if hasattr(peer, "export") else {}
        else:
            inputs = st.read(task["inputs"])
            outputs, result = timing.measure(lambda: peer.prepare(task, inputs), task["warmup"],
                                             task["runs"], task.get("budget_s"))
            st.write(task["output"], outputs)
            result.update(peer.describe(task))
    except NotImplementedError as e:
        result, code = {"unsupported": str(e)}, 3
    except ImportError as e:
        result, code = {"error": f"not importable: {e}"}, 1
    except Exception as e:  # noqa: BLE001 - every failure is reported in the table
        traceback.print_exc()
        result, code = {"error": f"{type(e).__name__}: {e}".splitlines()[0][:300]}, 1
    with open(result_path, "w") as f:
        json.dump(result, f, indent=1)
    sys.exit(code)


if __name__ == "__main__":
    main()
