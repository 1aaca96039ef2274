"""A Qwen3-layout decoder on the GPU: rlx --target cuda against PyTorch (eager and torch.compile) on
the same random weights (bench/run.py's qwen3 suite: hidden 1024, 8 layers, 16 query and 8 kv heads
of 64, a 32k tied vocabulary).

Prefill: `rlx bench --graph prefill -b 1 -s 512` (its p50 includes copying the logits and the new
keys and values back to the host, so PyTorch's call copies its logits and caches back too). Decode:
`rlx generate` (the KV cache stays on the device; its decode tokens/s over --steps steps) against a
PyTorch step at the same position over a cache on the device, timed with CUDA events. Each decode
row reports the weight bytes one step reads divided by the step's time, as a share of the copy
bandwidth measured in the same run (a decode step at batch 1 reads every weight once).

  python3 bench/gpu/qwen3.py [--rlx rlx] [--modes f32,amp-f16,amp-bf16] [--torch-compile]
A mode may name environment variables for rlx after an @ (`amp-f16@RLX_CUDA_GEMV=0`), to race
two settings of the same build in one run.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import numpy as np

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, BENCH)
from lib import st  # noqa: E402
import run as bench_run  # noqa: E402  (QWEN3_CONFIG and make_qwen3)


def split_mode(mode):
    """("amp-f16", {"RLX_CUDA_GEMV": "0"}) for "amp-f16@RLX_CUDA_GEMV=0"."""
    precision, *settings = mode.split("@")
    env = dict(os.environ)
    for s in settings:
        key, _, value = s.partition("=")
        env[key] = value
    return precision, env


def rlx_prefill(rlx, folder, mode, seq, runs):
    mode, env = split_mode(mode)
    cmd = [rlx, "bench", folder, "--target", "cuda", "--graph", "prefill", "-b", "1", "-s",
           str(seq), "--warmup", "3", "--runs", str(runs), "--json"]
    if mode != "f32":
        cmd += ["--precision", mode]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    if p.returncode != 0:
        return {"error": p.stderr.strip().splitlines()[-1:]}
    return {"p50_ms": json.loads(p.stdout)["p50_ms"]}


def rlx_decode(rlx, folder, mode, prompt, steps):
    mode, env = split_mode(mode)
    cmd = [rlx, "generate", folder, "--target", "cuda", "--prompt-ids",
           ",".join(str(int(t)) for t in prompt), "-n", str(steps), "--ignore-eos", "--json"]
    if mode != "f32":
        cmd += ["--precision", mode, "--kv-cache", mode.split("-")[-1]]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    if p.returncode != 0:
        return {"error": p.stderr.strip().splitlines()[-1:]}
    rate = json.loads(p.stdout)["decode_tokens_per_s"]
    return {"step_ms": 1000.0 / rate, "tokens_per_s": rate}


class TorchQwen3:
    """The decoder as a PyTorch user writes it today: F.scaled_dot_product_attention with grouped
    kv heads, the cache updated in place, everything in one dtype."""

    def __init__(self, weights, cfg, dtype, device):
        import torch
        self.torch, self.cfg = torch, cfg
        self.w = {k: torch.from_numpy(v).to(device=device, dtype=dtype) for k, v in weights.items()}
        self.h, self.hkv, self.d = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
        theta = cfg["rope_theta"]
        self.inv_freq = 1.0 / (theta ** (torch.arange(0, self.d, 2, dtype=torch.float64, device=device) / self.d))
        self.device, self.dtype = device, dtype

    def rms(self, x, w):
        t = self.torch
        xf = x.float()
        return (xf * t.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.cfg["rms_norm_eps"])).to(x.dtype) * w

    def __call__(self, ids, pos0, caches):
        t, F = self.torch, self.torch.nn.functional
        w, b, s = self.w, ids.shape[0], ids.shape[1]
        positions = pos0 + t.arange(s, device=self.device, dtype=t.float64)
        f = positions[:, None] * self.inv_freq[None, :]
        e = t.cat([f, f], dim=-1)
        cos, sin = e.cos().to(self.dtype), e.sin().to(self.dtype)

        def rotate(x):
            half = x.shape[-1] // 2
            return x * cos + t.cat([-x[..., half:], x[..., :half]], dim=-1) * sin

        x = F.embedding(ids, w["model.embed_tokens.weight"])
        for i in range(self.cfg["num_hidden_layers"]):
            p = f"model.layers.{i}."
            h = self.rms(x, w[p + "input_layernorm.weight"])
            q = F.linear(h, w[p + "self_attn.q_proj.weight"]).view(b, s, self.h, self.d)
            k = F.linear(h, w[p + "self_attn.k_proj.weight"]).view(b, s, self.hkv, self.d)
            v = F.linear(h, w[p + "self_attn.v_proj.weight"]).view(b, s, self.hkv, self.d)
            q = rotate(self.rms(q, w[p + "self_attn.q_norm.weight"]).transpose(1, 2))
            k = rotate(self.rms(k, w[p + "self_attn.k_norm.weight"]).transpose(1, 2))
            ck, cv = caches[i]
            ck[:, :, pos0:pos0 + s] = k
            cv[:, :, pos0:pos0 + s] = v.transpose(1, 2)
            a = F.scaled_dot_product_attention(q, ck[:, :, :pos0 + s], cv[:, :, :pos0 + s],
                                               is_causal=s > 1, enable_gqa=True)
            x = x + F.linear(a.transpose(1, 2).reshape(b, s, self.h * self.d), w[p + "self_attn.o_proj.weight"])
            h = self.rms(x, w[p + "post_attention_layernorm.weight"])
            x = x + F.linear(F.silu(F.linear(h, w[p + "mlp.gate_proj.weight"])) *
                             F.linear(h, w[p + "mlp.up_proj.weight"]), w[p + "mlp.down_proj.weight"])
        x = self.rms(x[:, -1:], w["model.norm.weight"])
        return F.linear(x, w["model.embed_tokens.weight"])


def cuda_ms(torch, fn, warmup, runs):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def copy_bandwidth(torch):
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms = cuda_ms(torch, lambda: dst.copy_(src), 3, 10)
    return 2 * src.numel() / (ms / 1000) / 1e9  # GB/s, read + write


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlx", default=shutil.which("rlx") or "rlx")
    ap.add_argument("--modes", default="f32,amp-f16,amp-bf16")
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--torch-compile", action="store_true",
                    help="also torch.compile(mode='reduce-overhead') of the f16 model (minutes)")
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False

    work = args.work or tempfile.mkdtemp(prefix="rlx-qwen3-")
    folder = os.path.join(work, "qwen3-h1024-l8")
    bench_run.make_qwen3(folder)
    cfg = bench_run.QWEN3_CONFIG
    weights = st.read(os.path.join(folder, "model.safetensors"))
    params = sum(v.size for v in weights.values())
    rng = np.random.default_rng(7)
    prompt = rng.integers(0, cfg["vocab_size"], args.seq)
    bw = copy_bandwidth(torch)
    print(f"copy bandwidth {bw:.0f} GB/s; {params / 1e6:.1f} M parameters", flush=True)

    rows = []
    for mode in [m for m in args.modes.split(",") if m]:
        bytes_per = 4 if mode.split("@")[0] == "f32" else 2
        pre = rlx_prefill(args.rlx, folder, mode, args.seq, args.runs)
        dec = rlx_decode(args.rlx, folder, mode, prompt, args.steps)
        rows.append({"who": f"rlx cuda {mode}", "prefill": pre, "decode": dec, "bytes": params * bytes_per})
        print(json.dumps(rows[-1]), flush=True)

    cap = args.seq + args.steps
    contenders = [("torch eager f32", torch.float32, False), ("torch eager f16", torch.float16, False)]
    if args.torch_compile:
        contenders.append(("torch.compile f16", torch.float16, True))
    for name, dtype, compiled in contenders:
        model = TorchQwen3(weights, cfg, dtype, "cuda")
        caches = [(torch.zeros(1, cfg["num_key_value_heads"], cap, cfg["head_dim"], dtype=dtype, device="cuda"),
                   torch.zeros(1, cfg["num_key_value_heads"], cap, cfg["head_dim"], dtype=dtype, device="cuda"))
                  for _ in range(cfg["num_hidden_layers"])]
        ids = torch.from_numpy(prompt[None]).cuda()
        step = torch.from_numpy(prompt[None, :1]).cuda()
        call = torch.compile(model.__call__, mode="reduce-overhead", dynamic=False) if compiled else model.__call__

        def prefill():
            with torch.inference_mode():
                logits = call(ids, 0, caches)
                logits.float().cpu()
                for k, v in caches:
                    k[:, :, :args.seq].float().cpu()
                    v[:, :, :args.seq].float().cpu()

        def decode():
            with torch.inference_mode():
                call(step, args.seq, caches)

        pre = cuda_ms(torch, prefill, 3, args.runs)
        dec = cuda_ms(torch, decode, 5, args.runs * 3)
        rows.append({"who": name, "prefill": {"p50_ms": pre},
                     "decode": {"step_ms": dec, "tokens_per_s": 1000.0 / dec},
                     "bytes": params * (4 if dtype == torch.float32 else 2)})
        print(json.dumps(rows[-1]), flush=True)
        del model, caches

    print(f"\n| contender | prefill {args.seq} (ms) | decode step, batch 1 (ms) | tokens/s | weight reads, % of copy bandwidth |")
    print("|---|---|---|---|---|")
    for r in rows:
        pre, dec = r["prefill"], r["decode"]
        p = f"{pre['p50_ms']:.2f}" if "p50_ms" in pre else str(pre.get("error"))
        if "step_ms" in dec:
            share = r["bytes"] / (dec["step_ms"] / 1000) / 1e9 / bw * 100
            d = f"{dec['step_ms']:.3f} | {dec['tokens_per_s']:.0f} | {share:.0f}%"
        else:
            d = f"{dec.get('error')} | - | -"
        print(f"| {r['who']} | {p} | {d} |")


if __name__ == "__main__":
    main()
