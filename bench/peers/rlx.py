"""rlx itself, through `rlx bench` (cli/src/bench.cpp): the same loop as lib/timing.py, in C++,
on the model folder (HF importer) with the inputs and outputs as safetensors files."""
import json
import subprocess


def run(task, binary, target, preexec_fn=None):
    cmd = [binary, "bench", task["model"], "--target", target, "--graph", task.get("graph", "main"),
           "--inputs", task["inputs"], "--output", task["output"], "--warmup", str(task["warmup"]),
           "--runs", str(task["runs"]), "--json"]
    if task.get("precision"):
        cmd += ["--precision", task["precision"]]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=task.get("timeout", 3600),
                       preexec_fn=preexec_fn)
    if r.returncode != 0:
        return {"error": (r.stderr.strip() or f"exit {r.returncode}").splitlines()[0][:300],
                "command": " ".join(cmd)}
    stats = json.loads(r.stdout)
    stats["command"] = " ".join(cmd)
    return stats
