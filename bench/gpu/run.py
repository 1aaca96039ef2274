"""rlx's GPU-style targets against PyTorch eager f32 on the same GPU, in one run (issue 26's table).

For each BERT-layout model folder (the real all-MiniLM-L6-v2, the minilm-l2-f16 fixture) and each
batch at one sequence length, the same inputs go through `rlx bench --target T` for every target
and through bench/peers/torch.py's BertEncoder on CUDA; rounds are interleaved (rlx targets and
PyTorch take turns) and the medians of the rounds' p50s are reported, with the output error
against PyTorch and the share of the GPU's f32 rate each reaches. Weights stored as f16 are widened
to f32 first, so every contender reads the same f32 weights and computes in f32. PyTorch runs with
TF32 off (its default for matmul), and its timing includes what rlx's does: inputs from host
memory to the GPU and outputs back. A second table has, per rlx contender, its compile time with
an empty kernel cache (the first round's, NVRTC included) and what a target whose device keeps a
clock and counts memory (cuda) reports: the p50 on the device's clock and the peak device memory.

    python3 bench/gpu/run.py --model DIR [--model DIR]... --targets vulkan,gpu,opengl,webgpu \
        --batches 1,8,32,128 --seq 128 --rounds 3 --out results.json

Needs python3 with torch and NumPy, and rlx on PATH (or --rlx); bench/gpu/on_device.sh sets up
the H200 machine. The f32 peak is the argument --peak-tflops (the H200's 66.9: 132 SMs x 128 f32
lanes x 2 flops x 1.98 GHz).
"""
import argparse
import copy
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lib import st, timing  # noqa: E402


def f32_folder(src, work):
    """A copy of a Hugging Face folder whose f16 weights are f32 (model.safetensors)."""
    dst = os.path.join(work, os.path.basename(os.path.normpath(src)) + "-f32")
    if os.path.exists(dst):
        return dst
    os.makedirs(dst)
    weights = None
    for name in sorted(os.listdir(src)):
        path = os.path.join(src, name)
        if name.endswith(".safetensors"):
            if name.startswith("model"):
                weights = path
            continue
        (shutil.copytree if os.path.isdir(path) else shutil.copy)(path, os.path.join(dst, name))
    t = st.read(weights)
    st.write(os.path.join(dst, "model.safetensors"),
             {k: v.astype(np.float32) if v.dtype == np.float16 else v for k, v in t.items()})
    cfg_path = os.path.join(dst, "config.json")
    with open(cfg_path) as f:
        cfg = json.load(f)
    cfg["dtype"] = cfg["torch_dtype"] = "float32"
    with open(cfg_path, "w") as f:
        json.dump(cfg, f, indent=1)
    return dst


def bert_flops(cfg, b, s):
    h, f, layers = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    per_token = 2 * (4 * h * h + 2 * h * f) + 2 * 2 * s * h  # projections, FFN, scores and mix
    return per_token * b * s * layers


def rlx_case(rlx, folder, target, inputs, out, warmup, runs, cold=False):
    """`target` is a target name, NAME:PRECISION to run it with `--precision PRECISION`
    (cuda:amp-f16), and either with @VAR=VALUE[@VAR=VALUE] to run it with those variables set
    (cuda@RLX_CUDA_GEMM=kernel: rlx's own tiled products instead of cuBLASLt). `cold` gives rlx
    an empty kernel cache, so its compile_ms includes every kernel's compilation (NVRTC)."""
    name, *assignments = target.split("@")
    name, _, precision = name.partition(":")
    env = dict(os.environ, **dict(a.split("=", 1) for a in assignments))
    if cold:
        env["RLX_CACHE_DIR"] = tempfile.mkdtemp(prefix="rlx-cold-cache-")
    cmd = [rlx, "bench", folder, "--target", name, "--inputs", inputs, "--output", out,
           "--warmup", str(warmup), "--runs", str(runs), "--json"]
    if precision:
        cmd += ["--precision", precision]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    if p.returncode != 0:
        return {"error": (p.stderr or p.stdout).strip().splitlines()[-1:] or ["failed"]}
    return json.loads(p.stdout)


def torch_case(model, inputs, warmup, runs, device):
    """PyTorch's time through lib/timing.py's loop, as every peer is measured; each call copies
    the inputs to the device and brings the outputs back, as `rlx bench` does."""
    import torch
    t = {k: torch.from_numpy(v) for k, v in inputs.items()}

    def call():
        with torch.inference_mode():
            g = {k: v.to(device) for k, v in t.items()}
            last, emb = model(g["input_ids"], g["attention_mask"], g["token_type_ids"])
            return {"last": last.float().cpu().numpy(), "emb": emb.float().cpu().numpy()}
    out, stats = timing.measure(lambda: call, warmup, runs)
    return {"p50_ms": stats["p50_ms"]}, out["last"], out["emb"]


def compare(out_path, last, emb):
    got = st.read(out_path)
    r = {}
    if "last_hidden_state" in got:
        r["max_abs_err"] = float(np.abs(got["last_hidden_state"].astype(np.float64) - last).max())
    if "sentence_embedding" in got:
        a, b = got["sentence_embedding"].astype(np.float64), emb.astype(np.float64)
        cos = (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
        r["min_cosine"] = float(cos.min())
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", action="append", required=True)
    ap.add_argument("--targets", default="vulkan,gpu,opengl,webgpu")
    ap.add_argument("--batches", default="1,8,32,128")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rlx", default=shutil.which("rlx") or "rlx")
    ap.add_argument("--peak-tflops", type=float, default=66.9)
    ap.add_argument("--device", default="cuda", help="PyTorch's device (cpu to try the script without a GPU)")
    ap.add_argument("--work", default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--torch-modes", default="eager-f32",
                    help="PyTorch contenders: eager-f32, eager-f16, and torch.compile of the f16 "
                         "model: compile-f16 (mode reduce-overhead, CUDA graphs), "
                         "compile-f16-autotune (max-autotune-no-cudagraphs; minutes to compile)")
    args = ap.parse_args()

    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))
    from peers import torch as torch_peer

    work = args.work or tempfile.mkdtemp(prefix="rlx-gpu-bench-")
    targets = [t for t in args.targets.split(",") if t]
    rows = []
    for src in args.model:
        folder = f32_folder(src, work)
        with open(os.path.join(folder, "config.json")) as f:
            cfg = json.load(f)
        model = torch_peer.BertEncoder(torch_peer._tensors(os.path.join(folder, "model.safetensors")),
                                       cfg).eval().to(args.device)
        modes = [m for m in args.torch_modes.split(",") if m]
        half = copy.deepcopy(model).half() if any("f16" in m for m in modes) else None
        contenders = {}
        for m in modes:
            if m == "eager-f32":
                contenders[m] = model
            elif m == "eager-f16":
                contenders[m] = half
            elif m == "compile-f16":
                contenders[m] = torch.compile(half, mode="reduce-overhead", dynamic=False)
            elif m == "compile-f16-autotune":
                contenders[m] = torch.compile(half, mode="max-autotune-no-cudagraphs", dynamic=False)
            else:
                sys.exit(f"run.py: unknown --torch-modes entry {m}")
        first = modes[0]
        for b in [int(x) for x in args.batches.split(",")]:
            rng = np.random.default_rng(b)
            inputs = {"input_ids": rng.integers(0, cfg["vocab_size"], (b, args.seq)).astype(np.int64),
                      "attention_mask": np.ones((b, args.seq), np.int64),
                      "token_type_ids": np.zeros((b, args.seq), np.int64)}
            in_path = os.path.join(work, f"in-b{b}.safetensors")
            st.write(in_path, inputs)
            case = {"model": os.path.basename(os.path.normpath(src)), "batch": b, "seq": args.seq,
                    "gflop": bert_flops(cfg, b, args.seq) / 1e9, "p50_ms": {}, "check": {}}
            p50 = {k: [] for k in modes + targets}
            for r in range(args.rounds):
                for m in modes:
                    res, out_last, out_emb = torch_case(contenders[m], inputs, args.warmup, args.runs,
                                                        args.device)
                    p50[m].append(res["p50_ms"])
                    if m == first:
                        last, emb = out_last, out_emb
                    elif r == 0:
                        case["check"][m] = {"max_abs_err": float(np.abs(out_last - last).max())}
                for t in targets:
                    out_path = os.path.join(work, f"out-{t}-b{b}.safetensors")
                    res = rlx_case(args.rlx, folder, t, in_path, out_path, args.warmup, args.runs,
                                   cold=r == 0)
                    if "error" in res:
                        case["check"][t] = {"error": res["error"]}
                        continue
                    p50[t].append(res["p50_ms"])
                    if r == 0:
                        case["check"][t] = compare(out_path, last.astype(np.float64), emb)
                        # What the device says (cuda): the p50 on its clock, its peak memory;
                        # and the compile time with an empty kernel cache.
                        case.setdefault("rlx", {})[t] = {
                            k: res[k] for k in ("compile_ms", "device_p50_ms", "peak_device_mb")
                            if k in res}
            for k, v in p50.items():
                if v:
                    case["p50_ms"][k] = statistics.median(v)
            rows.append(case)
            print(json.dumps(case), flush=True)

    print()
    first = [m for m in args.torch_modes.split(",") if m][0]
    others = [m for m in args.torch_modes.split(",") if m][1:]
    print(f"| model | batch | torch {first} | " + " | ".join(["torch " + m for m in others] + targets) + " |")
    print("|---|---|---|" + "---|" * (len(others) + len(targets)))
    for c in rows:
        tp = c["p50_ms"].get(first)
        for m in others:
            ms = c["p50_ms"].get(m)
            c.setdefault("torch_cells", []).append(f"{ms:.2f} ms ({ms / tp:.2f}x)" if ms else "-")
        cells = []
        for t in targets:
            ms = c["p50_ms"].get(t)
            if ms is None:
                cells.append("failed: " + " ".join(c["check"].get(t, {}).get("error", ["?"])))
                continue
            pct = c["gflop"] / ms / args.peak_tflops * 100
            chk = c["check"].get(t, {})
            cells.append(f"{ms:.2f} ms ({ms / tp:.2f}x, {pct:.1f}% f32 peak, err {chk.get('max_abs_err', float('nan')):.1e})")
        tpct = c["gflop"] / tp / args.peak_tflops * 100
        print(f"| {c['model']} | {c['batch']} | {tp:.2f} ms ({tpct:.1f}%) | " +
              " | ".join(c.get("torch_cells", []) + cells) + " |")
    print()
    print("| model | batch | target | cold compile (empty kernel cache) | p50 on the device | peak device memory |")
    print("|---|---|---|---|---|---|")
    for c in rows:
        for t, r in c.get("rlx", {}).items():
            cells = [f"{r[k]:.{d}f} {u}" if k in r else "-"
                     for k, d, u in (("compile_ms", 0, "ms"), ("device_p50_ms", 2, "ms"),
                                     ("peak_device_mb", 1, "MB"))]
            print(f"| {c['model']} | {c['batch']} | {t} | " + " | ".join(cells) + " |")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"rows": rows, "targets": targets, "torch": torch.__version__,
                       "gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu", "peak_tflops": args.peak_tflops}, f, indent=1)


if __name__ == "__main__":
    main()
