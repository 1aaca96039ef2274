"""Quantized all-MiniLM-L6-v2 on the cpu: rlx int8 (dynamic and calibrated), int4-weight and
amp-bf16 next to rlx f32, ONNX Runtime f32 and int8 (quantize_dynamic on the same ONNX graph) and
PyPI's current PyTorch (bench/.venvs/torch-pypi) in f32, under bf16 autocast and after its dynamic
int8 quantization of nn.Linear, in one run with interleaved rounds, each output checked against
rlx f32; then the int8 GEMM's GOP/s against the peak of its ISA (VNNI, or AMX where the CPU grants
it) measured right after (bench/quant/int8_gemm_bench.cpp).

    bench/.venv/bin/python bench/quant/run.py [--seqs 128,32] [--batches 1,8,32] [--rounds 3]
        [--peers onnxruntime,torch-pypi-bf16,...] [--no-gemm-peak]

It reuses bench/run.py's runner, peers and ONNX export (see bench/README.md); results go to
bench/results/quant-<date-time>.{json,md}."""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
import run as bench  # noqa: E402
from lib import st  # noqa: E402

bench.PEERS["onnxruntime-int8"] = ("onnxruntime", "main", {"int8": True})
# peers/torch.py in PyPI's torch, one intra-op thread per CPU (bench/setup.sh torch-pypi).
bench.PEERS["torch-pypi"] = ("torch", "torch-pypi", {"threads": "cpus"})
bench.PEERS["torch-pypi-bf16"] = ("torch", "torch-pypi", {"threads": "cpus", "autocast": "bf16"})
bench.PEERS["torch-pypi-int8"] = ("torch", "torch-pypi", {"threads": "cpus", "int8": True})
PEERS = ["onnxruntime", "onnxruntime-int8", "torch-pypi", "torch-pypi-bf16", "torch-pypi-int8"]
# Each ratio column: (title, rlx column, peer column), shown when the peer ran.
RATIOS = [("rlx int8-dyn / ORT int8", "rlx-int8-dynamic", "onnxruntime-int8"),
          ("rlx int8 / ORT int8", "rlx-int8", "onnxruntime-int8"),
          ("rlx int8-dyn / ORT f32", "rlx-int8-dynamic", "onnxruntime"),
          ("rlx int8-dyn / torch int8", "rlx-int8-dynamic", "torch-pypi-int8"),
          ("rlx amp-bf16 / torch bf16", "rlx-amp-bf16", "torch-pypi-bf16")]
SCHEMES = ["int8-dynamic", "int8", "int4-weight"]
NAMES = ["last_hidden_state", "sentence_embedding"]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def calibration_inputs(path):
    """The token ids of tests/data/all-minilm-l6-v2 (37 real sentences), for --scheme int8."""
    ref = st.read(os.path.join(ROOT, "tests", "data", "all-minilm-l6-v2", "reference.safetensors"))
    ids = ref["input_ids"].astype(np.int64)
    st.write(path, {"input_ids": ids, "attention_mask": ref["attention_mask"].astype(np.int64),
                    "token_type_ids": np.zeros_like(ids)})


def quantize(rlx, folder, work):
    out = {}
    calib = os.path.join(work, "calibration.safetensors")
    calibration_inputs(calib)
    for scheme in SCHEMES:
        dst = os.path.join(work, f"minilm-{scheme}")
        if not os.path.exists(dst):
            cmd = [rlx, "quantize", folder, "--scheme", scheme, "-o", dst, "--json"]
            if scheme == "int8":
                cmd += ["--calibration", calib]
            subprocess.run(cmd, check=True, capture_output=True, text=True)
        out[scheme] = dst
    return out


def accuracy(ref, got):
    """Against rlx f32: the smallest cosine over sentence embeddings and token states."""
    if ref is None or got is None:
        return None
    c = bench.compare(ref, got, NAMES)
    return {"min_cosine": c.get("min_cosine"), "max_rel_err": c.get("max_rel_err")}


def case_run(runner, folder, models, onnx_path, cfg, seq, batch, rng, args, peers):
    case = f"minilm-s{seq}-b{batch}"
    inputs = os.path.join(runner.work, f"{case}.inputs.safetensors")
    st.write(inputs, bench.minilm_inputs(batch, seq, cfg["vocab_size"], rng))
    task = {"suite": "minilm", "case": case, "kind": "bert", "config": cfg,
            "weights": os.path.join(folder, "model.safetensors"), "onnx": onnx_path,
            "inputs": inputs, "warmup": args.warmup, "runs": args.runs}
    rounds = {k: [] for k in ["rlx-f32"] + [f"rlx-{s}" for s in SCHEMES] + ["rlx-amp-bf16"] +
              peers}
    checks = {}
    for r in range(args.rounds):
        log(f"quant bench: {case} round {r + 1}/{args.rounds}")
        stats, ref = runner.run_rlx(case, folder, "main", inputs)
        rounds["rlx-f32"].append(stats)
        for s in SCHEMES:
            stats, out = runner.run_rlx(f"{case}-{s}", models[s], "main", inputs)
            rounds[f"rlx-{s}"].append(stats)
            checks.setdefault(f"rlx-{s}", accuracy(ref, out))
        # The products in bf16 (on AMX tiles where the CPU has them), the rest in f32.
        stats, out = runner.run_rlx(f"{case}-amp-bf16", folder, "main", inputs, "amp-bf16")
        rounds["rlx-amp-bf16"].append(stats)
        checks.setdefault("rlx-amp-bf16", accuracy(ref, out))
        for p in peers:
            res = runner.run_peer(p, task, ref, NAMES)
            rounds[p].append(res)
            if "check" in res:
                checks.setdefault(p, {"min_cosine": res["check"].get("min_cosine"),
                                      "max_rel_err": res["check"].get("max_rel_err")})
    merged = {k: bench.merge_rounds(v) for k, v in rounds.items()}
    return {"case": case, "seq": seq, "batch": batch, "results": merged, "accuracy": checks}


def gemm_peak(runner):
    build = os.path.dirname(os.path.dirname(runner.rlx))
    r = subprocess.run(["cmake", "--build", build, "--target", "rlx_bench_int8_gemm"],
                       capture_output=True, text=True)
    binary = os.path.join(build, "bench", "quant", "rlx_bench_int8_gemm")
    if r.returncode != 0 or not os.path.exists(binary):
        return {"error": (r.stderr.strip()[-300:] or "no " + binary)}
    threads = len(os.sched_getaffinity(0))
    r = subprocess.run([binary, "--threads", str(threads)], capture_output=True, text=True)
    try:
        return json.loads(r.stdout)
    except ValueError:
        return {"error": r.stderr.strip()[-300:]}


def p50(res):
    return res.get("p50_ms") if isinstance(res, dict) else None


def markdown(results):
    peers = results["meta"].get("peers", PEERS)
    cols = ["rlx-f32"] + [f"rlx-{s}" for s in SCHEMES] + ["rlx-amp-bf16"] + peers
    ratios = [x for x in RATIOS if x[2] in peers]
    lines = ["| case | " + " | ".join(f"{c} p50 ms" for c in cols) +
             "".join(f" | {t}" for t, _, _ in ratios) + " |",
             "|---|" + "---|" * (len(cols) + len(ratios))]
    for c in results["cases"]:
        r = c["results"]
        cells = []
        for k in cols:
            v = p50(r[k])
            cells.append(f"{v:.2f}" if v is not None else
                         (r[k].get("error") or r[k].get("skipped") or "-")[:40])

        def ratio(a, b):
            x, y = p50(r[a]), p50(r[b])
            return f"{x / y:.2f}" if x and y else "-"
        lines.append(f"| {c['case']} | " + " | ".join(cells + [ratio(a, b) for _, a, b in ratios])
                     + " |")
    lines += ["", "Accuracy against rlx f32 (min cosine over every token state and sentence "
              "embedding, random token ids):", "",
              "| case | " + " | ".join(cols[1:]) + " |", "|---|" + "---|" * (len(cols) - 1)]
    for c in results["cases"]:
        row = []
        for k in cols[1:]:
            a = c["accuracy"].get(k)
            row.append(f"{a['min_cosine']:.5f}" if a and a.get("min_cosine") is not None else "-")
        lines.append(f"| {c['case']} | " + " | ".join(row) + " |")
    settings = {}
    for c in results["cases"]:
        for k in peers:
            r = c["results"][k]
            if isinstance(r, dict) and "version" in r:
                settings.setdefault(k, f"{r['version']}, threads {r.get('threads')}, "
                                       f"{r.get('setting')}")
    if settings:
        lines += ["", "Peers: " + "; ".join(f"{k}: {v}" for k, v in settings.items()) + "."]
    g = results.get("int8_gemm", {})
    if "results" in g:
        amx = g.get("amx_peak_gops", 0) > 0
        peak = g["amx_peak_gops"] if amx else g["vnni_peak_gops"]
        lines += ["", f"int8 GEMM ({g['isa']}, {g['threads']} threads), {'AMX' if amx else 'VNNI'} "
                  f"peak {peak:.0f} GOP/s measured in the same run (VNNI "
                  f"{g['vnni_peak_gops']:.0f}):", "",
                  "| M | N | K | GOP/s | of peak |", "|---|---|---|---|---|"]
        for x in g["results"]:
            lines.append(f"| {x['M']} | {x['N']} | {x['K']} | {x['gops']:.0f} | "
                         f"{100 * x['of_peak']:.0f}% |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rlx")
    ap.add_argument("--model", help="the all-MiniLM-L6-v2 folder (default: the installed one)")
    ap.add_argument("--seqs", default="128,32")
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--target", default="cpu")
    ap.add_argument("--cpus")
    ap.add_argument("--peers", default=",".join(PEERS),
                    help="comma-separated subset of: " + ", ".join(PEERS))
    ap.add_argument("--no-gemm-peak", action="store_true",
                    help="leave out the int8 GEMM's GOP/s (it builds rlx_bench_int8_gemm)")
    args = ap.parse_args()
    peers = [p for p in args.peers.split(",") if p]
    for p in peers:
        if p not in PEERS:
            ap.error(f"unknown peer '{p}' (known: {', '.join(PEERS)})")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    work = os.path.join(BENCH, "results", "work-quant")
    os.makedirs(work, exist_ok=True)
    runner = bench.Runner(args, work)
    folder = args.model or bench.minilm_folder()
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    onnx_path = os.path.join(work, "minilm.onnx")
    bench.export_minilm_onnx(folder, cfg, onnx_path)
    models = quantize(runner.rlx, folder, work)
    rng = np.random.default_rng(1234)
    results = {"meta": {"date": stamp, "machine": bench.machine(), "rlx": runner.rlx,
                        "rounds": args.rounds, "warmup": args.warmup, "runs": args.runs,
                        "peers": peers},
               "cases": []}
    for seq in [int(s) for s in args.seqs.split(",")]:
        for batch in [int(b) for b in args.batches.split(",")]:
            results["cases"].append(case_run(runner, folder, models, onnx_path, cfg, seq, batch,
                                             rng, args, peers))
    if not args.no_gemm_peak:
        log("quant bench: int8 GEMM against its ISA's peak")
        results["int8_gemm"] = gemm_peak(runner)
    base = os.path.join(BENCH, "results", f"quant-{stamp}")
    with open(base + ".json", "w") as f:
        json.dump(results, f, indent=1)
    text = markdown(results)
    with open(base + ".md", "w") as f:
        f.write(text)
    print(text)
    log(f"quant bench: wrote {base}.json, {base}.md")


if __name__ == "__main__":
    main()
