#!/usr/bin/env python3
"""MiniLM batch 1 through rlx's Python API against `rlx bench` on the same model and inputs.

    PYTHONPATH=build/python RLX_PLUGIN_PATH=build/share/rlx/plugins.d \\
        .venv/bin/python bench/python_minilm.py [--model DIR] [--seq 128] [--rounds 5]

The model is --model, else $RLX_MINILM_DIR (the real all-MiniLM-L6-v2, which scripts/test.sh
installs), else the 2-layer fixture tests/data/fixtures/minilm-l2-f16. Each round runs
`rlx bench MODEL --batch 1 --seq S --json` (its p50 over --runs timed runs after --warmup) and
then times compiled(**inputs) and rlx.embed(model, input_ids=...) in this process the same way
on the inputs `rlx bench` made up (--save-inputs); the rounds alternate so that a change in the
machine's load reaches both sides. Prints the medians over rounds and the ratio Python / CLI
(the goal: within 3%).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import rlx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
from reference_files import MINILM, read_safetensors  # noqa: E402


def cli_p50(binary, model, seq, warmup, runs, save=None):
    cmd = [binary, "bench", model, "--target", "cpu", "--batch", "1", "--seq", str(seq),
           "--warmup", str(warmup), "--runs", str(runs), "--json"]
    if save:
        cmd += ["--save-inputs", save]
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(r.stdout)["p50_ms"]


def python_p50(fn, warmup, runs):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return float(np.median(times))  # as rlx bench: NumPy's interpolated median


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=os.environ.get("RLX_MINILM_DIR") or MINILM)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--rlx", default=os.path.join(ROOT, "build", "bin", "rlx"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        saved = os.path.join(tmp, "inputs.safetensors")
        cli_p50(args.rlx, args.model, args.seq, 1, 1, save=saved)
        inputs = read_safetensors(saved)
    model = rlx.load(args.model)
    compiled = model.compile("cpu")
    rlx.embed(model, input_ids=inputs["input_ids"])  # compiles the encoder once
    cases = {
        "compiled(**inputs)": lambda: compiled(**inputs),
        "rlx.embed(input_ids=)": lambda: rlx.embed(model, input_ids=inputs["input_ids"],
                                                  attention_mask=inputs["attention_mask"],
                                                  token_type_ids=inputs["token_type_ids"]),
    }
    results = {"rlx bench": []}
    results.update({name: [] for name in cases})
    for _ in range(args.rounds):
        results["rlx bench"].append(cli_p50(args.rlx, args.model, args.seq, args.warmup,
                                            args.runs))
        for name, fn in cases.items():
            results[name].append(python_p50(fn, args.warmup, args.runs))
    cli = statistics.median(results["rlx bench"])
    print(f"{args.model}: batch 1, seq {args.seq}; p50 of {args.runs} runs after "
          f"{args.warmup} warm-ups, median over {args.rounds} interleaved rounds; ratio: of "
          f"the medians, and the median of each round's ratio")
    for name, values in results.items():
        med = statistics.median(values)
        per_round = statistics.median(v / c for v, c in zip(values, results["rlx bench"]))
        rounds = " ".join(f"{v:.2f}" for v in values)
        print(f"  {name:<24} {med:8.3f} ms  {med / cli:6.3f}x  {per_round:6.3f}x  "
              f"(rounds: {rounds})")


if __name__ == "__main__":
    main()
