"""rlx's tpu target against JAX's own jit of the same model, on the same XLA device, in one run
(issue 17): both hand XLA a StableHLO program of the BERT encoder, so their times should agree
within about 10%; a larger gap is a defect of the StableHLO rlx emits (layouts, constants,
transposes) to explain.

For each batch at one sequence length, the same inputs go through `rlx bench --target tpu` (with
RLX_PJRT_PLUGIN naming the PJRT plugin) and through lib/bert_ops.py's encoder under jax.jit
(bench/peers/jax.py's ops), rounds interleaved, medians of the rounds' p50s reported with the
output error against JAX. Both read the same f32 weights (f16 files are widened, as
bench/gpu/run.py does), keep them on the device, and per call take the inputs from host memory
and bring the outputs back. Products run at full f32 precision on both sides (rlx emits
precision HIGHEST; JAX is set to "highest"), so neither uses TF32.

    RLX_PJRT_PLUGIN=.../xla_cuda_plugin.so python3 bench/gpu/tpu_vs_jax.py --model /tmp/minilm \
        --batches 1,8,32 --seq 128 --rounds 3

Needs python3 with jax (its CUDA plugin for the GPU, or its CPU backend with XLA's CPU PJRT plugin
to try it here) and NumPy, and rlx on PATH (or --rlx).
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, ".."))
sys.path.insert(0, here)
from lib import bert_ops, st, timing  # noqa: E402
from run import compare, f32_folder, rlx_case  # noqa: E402


def jax_case(fn, weights, inputs, warmup, runs):
    args = [inputs[n] for n in ("input_ids", "attention_mask", "token_type_ids")]

    def call():
        last, emb = fn(weights, *args)  # NumPy inputs: copied to the device on each call
        return {"last": np.asarray(last), "emb": np.asarray(emb)}
    out, stats = timing.measure(lambda: call, warmup, runs)
    return stats["p50_ms"], out["last"], out["emb"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rlx", default=shutil.which("rlx") or "rlx")
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    if not os.environ.get("RLX_PJRT_PLUGIN"):
        sys.exit("set RLX_PJRT_PLUGIN to the PJRT plugin of the device JAX runs on")

    # JAX would take 75% of the GPU at start, leaving too little for the client of each `rlx
    # bench` process (XLA's GPU client preallocates too); JAX allocates as it goes instead.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax
    jax.config.update("jax_default_matmul_precision", "highest")
    from peers.jax import Ops

    work = args.work or tempfile.mkdtemp(prefix="rlx-tpu-vs-jax-")
    folder = f32_folder(args.model, work)
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    weights = {k: jax.device_put(v) for k, v in
               bert_ops.encoder_weights(st.read(os.path.join(folder, "model.safetensors"))).items()}
    print(f"jax {jax.__version__} on {jax.devices()[0]}; rlx tpu through {os.environ['RLX_PJRT_PLUGIN']}")
    rows = []
    for b in [int(x) for x in args.batches.split(",")]:
        rng = np.random.default_rng(b)
        inputs = {"input_ids": rng.integers(0, cfg["vocab_size"], (b, args.seq)).astype(np.int64),
                  "attention_mask": np.ones((b, args.seq), np.int64),
                  "token_type_ids": np.zeros((b, args.seq), np.int64)}
        in_path = os.path.join(work, f"in-b{b}.safetensors")
        out_path = os.path.join(work, f"out-tpu-b{b}.safetensors")
        st.write(in_path, inputs)
        fn = jax.jit(lambda w, i, m, t, b=b: bert_ops.encoder(Ops, w, cfg, i, m, t, b, args.seq))
        p50 = {"jax": [], "tpu": []}
        case = {"batch": b, "seq": args.seq}
        for r in range(args.rounds):
            ms, last, emb = jax_case(fn, weights, inputs, args.warmup, args.runs)
            p50["jax"].append(ms)
            res = rlx_case(args.rlx, folder, "tpu", in_path, out_path, args.warmup, args.runs)
            if "error" in res:
                case["error"] = res["error"]
                break
            p50["tpu"].append(res["p50_ms"])
            if r == 0:
                case.update(compare(out_path, last.astype(np.float64), emb))
        for k, v in p50.items():
            if v:
                case[k + "_ms"] = statistics.median(v)
        rows.append(case)
        print(json.dumps(case), flush=True)
    print()
    print("| batch | JAX jit | rlx tpu | ratio | max abs err |")
    print("|---|---|---|---|---|")
    for c in rows:
        if "tpu_ms" not in c:
            print(f"| {c['batch']} | {c.get('jax_ms', float('nan')):.2f} ms | failed: {c.get('error')} | | |")
            continue
        print(f"| {c['batch']} | {c['jax_ms']:.2f} ms | {c['tpu_ms']:.2f} ms | "
              f"{c['tpu_ms'] / c['jax_ms']:.2f}x | {c.get('max_abs_err', float('nan')):.1e} |")


if __name__ == "__main__":
    main()
