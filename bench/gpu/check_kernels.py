"""Checks the shared renderer's cooperative kernels on each GPU-style target against float64
NumPy, at sizes the fixtures do not reach: native LayerNorm over R rows of 384, a product with a
fused bias + x * erf(x) epilogue ([R, 384] x [384, 1536]) and a single-row product (the GEMV's
shared tree). Run on the GPU machine after `. bench/gpu/on_device.sh`:

    python3 bench/gpu/check_kernels.py 4096 gpu,opengl,vulkan,webgpu

It found NVIDIA's OpenGL compiler getting LayerNorm's shared-memory tree wrong for some rows
(render_norm.cpp says how it sums instead)."""
import json, struct, subprocess, sys, os
import numpy as np
def save(path, tensors):
    header, off, blobs = {}, 0, []
    for k, v in tensors.items():
        b = np.ascontiguousarray(v).tobytes()
        header[k] = {"dtype": "F32", "shape": list(v.shape), "data_offsets": [off, off + len(b)]}
        off += len(b); blobs.append(b)
    h = json.dumps(header).encode(); h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h))); f.write(h); [f.write(b) for b in blobs]
def load(path):
    d = open(path, "rb").read(); n = struct.unpack("<Q", d[:8])[0]; h = json.loads(d[8:8 + n]); out = {}
    for k, v in h.items():
        if k == "__metadata__": continue
        a, b = v["data_offsets"]; out[k] = np.frombuffer(d[8 + n + a:8 + n + b], dtype=np.float32).reshape(v["shape"])
    return out
rng = np.random.default_rng(1)
R, N, F = int(sys.argv[1]), 384, 1536
x = rng.uniform(-2, 3, (R, N)).astype(np.float32); g = rng.uniform(0, 2, N).astype(np.float32); b = rng.uniform(-1, 1, N).astype(np.float32)
w = rng.uniform(-0.1, 0.1, (F, N)).astype(np.float32); bias = rng.uniform(-1, 1, F).astype(np.float32)
ir = f"""graph @t(%x: f32[{R},{N}], %g: f32[{N}], %b: f32[{N}], %w: f32[{F},{N}], %bias: f32[{F}]) {{
  %l = LayerNorm(%x, %g, %b) {{epsilon = 1e-12}} : f32[{R},{N}]
  %y = dot_general(%x, %w) {{lhs_batch = [], lhs_contract = [1], rhs_batch = [], rhs_contract = [1]}} : f32[{R},{F}]
  %bb = broadcast_in_dim(%bias) {{dims = [1], shape = [{R}, {F}]}} : f32[{R},{F}]
  %z = add(%y, %bb) : f32[{R},{F}]
  %e = erf(%z) : f32[{R},{F}]
  %q = mul(%z, %e) : f32[{R},{F}]
  return %l, %q
}}
"""
open("/tmp/ck.rlx", "w").write(ir); save("/tmp/ck_in.safetensors", {"x": x, "g": g, "b": b, "w": w, "bias": bias})
xd = x.astype(np.float64); m = xd.mean(1, keepdims=True); v = ((xd - m) ** 2).mean(1, keepdims=True)
want_l = (xd - m) / np.sqrt(v + 1e-12) * g + b
import math
zd = xd @ w.astype(np.float64).T + bias; want_q = zd * np.vectorize(math.erf)(zd)
for t in sys.argv[2].split(","):
    r = subprocess.run(["rlx", "run", "/tmp/ck.rlx", "-t", t, "-i", "/tmp/ck_in.safetensors", "-o", f"/tmp/ck_{t}.safetensors"], capture_output=True, text=True)
    if r.returncode: print(t, r.stderr[-500:]); continue
    o = load(f"/tmp/ck_{t}.safetensors")
    el = np.abs(o["l"] - want_l); eq = np.abs(o["q"] - want_q)
    print(t, "LN max err", el.max(), "rows bad", int((el.max(1) > 1e-3).sum()), "first bad row", int(np.argmax(el.max(1) > 1e-3)) if (el.max(1) > 1e-3).any() else -1,
          "| dot+gelu max err", eq.max(), "rows bad", int((eq.max(1) > 1e-3).sum()))
# GEMV (m = 1) through the shared tree of render_matmul
x1 = x[:1]
ir2 = f"""graph @t(%x: f32[1,{N}], %w: f32[{F},{N}]) {{
  %y = dot_general(%x, %w) {{lhs_batch = [], lhs_contract = [1], rhs_batch = [], rhs_contract = [1]}} : f32[1,{F}]
  return %y
}}
"""
open("/tmp/ck2.rlx", "w").write(ir2); save("/tmp/ck2_in.safetensors", {"x": x1, "w": w})
want_y = x1.astype(np.float64) @ w.astype(np.float64).T
for t in sys.argv[2].split(","):
    r = subprocess.run(["rlx", "run", "/tmp/ck2.rlx", "-t", t, "-i", "/tmp/ck2_in.safetensors", "-o", f"/tmp/ck2_{t}.safetensors"], capture_output=True, text=True)
    if r.returncode: print(t, r.stderr[-500:]); continue
    o = load(f"/tmp/ck2_{t}.safetensors")
    print(t, "gemv max err", np.abs(o["y"] - want_y).max())
