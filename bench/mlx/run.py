#!/usr/bin/env python3
"""all-MiniLM-L6-v2 on the mlx target against MLX's own Python model, both on MLX's cpu device.

    .venv/bin/python bench/mlx/run.py [--model DIR] [--batches 1 8 32] [--seq 128] [--rounds 5]

rlx side: `rlx bench MODEL --target mlx --inputs IN --output OUT --json` (its p50 over --runs
timed runs after --warmup), so the time includes rlx's copies of inputs in and outputs out.
MLX side: bench/peers/mlx.py (lib/bert_ops.py's encoder in mlx.core under mx.compile, the peer
of bench/run.sh), timed in this process the same way on the same inputs, outputs converted to
NumPy as rlx's are copied out. Rounds alternate the two so a change in the machine's load reaches
both; printed: the medians over rounds, their ratio rlx/MLX and the largest difference of the
sentence embeddings. The model is --model, else $RLX_MINILM_DIR (scripts/test.sh installs it).
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

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
from lib import st  # noqa: E402
from peers import mlx as mlx_peer  # noqa: E402


def rlx_p50(binary, model, warmup, runs, inputs, output=None):
    cmd = [binary, "bench", model, "--target", "mlx", "--inputs", inputs, "--warmup", str(warmup),
           "--runs", str(runs), "--json"]
    if output:
        cmd += ["--output", output]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr}")
    return json.loads(r.stdout)["p50_ms"]


def python_p50(fn, warmup, runs):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return float(np.median(times))


def make_inputs(batch, seq, vocab, rng):
    ids = rng.integers(1000, vocab, size=(batch, seq), dtype=np.int64)
    mask = np.ones((batch, seq), dtype=np.int64)
    for b in range(batch):  # a ragged batch: row b keeps seq - 3b tokens (at least 8)
        mask[b, max(8, seq - 3 * b):] = 0
    return {"input_ids": ids, "attention_mask": mask,
            "token_type_ids": np.zeros((batch, seq), dtype=np.int64)}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=os.environ.get("RLX_MINILM_DIR"))
    p.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32])
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--rlx", default=os.path.join(ROOT, "build", "bin", "rlx"))
    args = p.parse_args()
    if not args.model:
        sys.exit("give --model DIR or set RLX_MINILM_DIR (scripts/test.sh installs the model)")
    with open(os.path.join(args.model, "config.json")) as f:
        cfg = json.load(f)
    rng = np.random.default_rng(1234)
    print(f"{args.model}: seq {args.seq}; p50 of {args.runs} runs after {args.warmup} warm-ups, "
          f"median over {args.rounds} interleaved rounds")
    print("| batch | rlx on mlx (ms) | MLX (ms) | rlx / MLX | max abs diff of embeddings |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for batch in args.batches:
            x = make_inputs(batch, args.seq, cfg["vocab_size"], rng)
            path_in = os.path.join(tmp, f"b{batch}.inputs.safetensors")
            path_out = os.path.join(tmp, f"b{batch}.outputs.safetensors")
            st.write(path_in, x)
            task = {"kind": "bert", "config": cfg,
                    "weights": os.path.join(args.model, "model.safetensors")}
            call = mlx_peer.prepare(task, x)
            want = call()["sentence_embedding"]
            rlx_p50(args.rlx, args.model, 1, 1, path_in, path_out)
            got = st.read(path_out)["sentence_embedding"]
            diff = float(np.max(np.abs(got.astype(np.float64) - want)))
            ours, theirs = [], []
            for _ in range(args.rounds):
                ours.append(rlx_p50(args.rlx, args.model, args.warmup, args.runs, path_in))
                theirs.append(python_p50(call, args.warmup, args.runs))
            o, t = statistics.median(ours), statistics.median(theirs)
            print(f"| {batch} | {o:.2f} | {t:.2f} | {o / t:.3f} | {diff:.2g} |", flush=True)


if __name__ == "__main__":
    main()
