#!/usr/bin/env python3
"""Writes the bundled tiny-gpt model (random weights), its example inputs, and a float64 NumPy
reference of its outputs. The product never runs this; it documents where the files come from.

    python3 tools/make_tiny_gpt.py models/tiny-gpt
"""
import json
import struct
import sys
from pathlib import Path

import numpy as np

V, D, H, F, S = 64, 32, 4, 64, 6
DH = D // H
EPS = 1e-5


def write_safetensors(path, tensors):
    names = sorted(tensors)
    header, offset, blobs = {}, 0, []
    for n in names:
        a = np.ascontiguousarray(tensors[n])
        dt = {np.float32: "F32", np.int64: "I64", np.float64: "F64"}[a.dtype.type]
        b = a.tobytes()
        header[n] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    Path(path).write_bytes(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def layer_norm(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + EPS) * g + b


def rope(x, pos):  # x [H, S, DH], half layout
    half = DH // 2
    inv = 10000.0 ** (-2.0 * np.arange(half) / DH)
    ang = pos[:, None].astype(np.float64) * inv[None, :]
    c, s = np.cos(ang), np.sin(ang)
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], -1)


def forward(w, ids, pos):
    w = {k: v.astype(np.float64) for k, v in w.items()}
    x = w["embed"][ids]
    h = layer_norm(x, w["ln1_g"], w["ln1_b"])
    q, k, v = (h @ w[n].T for n in ("wq", "wk", "wv"))
    q, k, v = (t.reshape(len(ids), H, DH).transpose(1, 0, 2) for t in (q, k, v))
    q, k = rope(q, pos), rope(k, pos)
    sc = q @ k.transpose(0, 2, 1) / np.sqrt(DH)
    sc = np.where(np.tril(np.ones((len(ids), len(ids)), bool)), sc, -np.inf)
    p = np.exp(sc - sc.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    a = (p @ v).transpose(1, 0, 2).reshape(len(ids), D)
    x = x + a @ w["wo"].T
    h = layer_norm(x, w["ln2_g"], w["ln2_b"])
    u = h @ w["w1"].T + w["b1"]
    u = 0.5 * u * (1 + np.tanh(np.sqrt(2 / np.pi) * (u + 0.044715 * u ** 3)))
    x = x + u @ w["w2"].T + w["b2"]
    x = layer_norm(x, w["lnf_g"], w["lnf_b"])
    return x @ w["embed"].T


def main(out):
    rng = np.random.default_rng(20261129)
    f = lambda *s, scale=0.2: (rng.standard_normal(s) * scale).astype(np.float32)
    w = {
        "embed": f(V, D, scale=0.5),
        "ln1_g": 1 + f(D, scale=0.1), "ln1_b": f(D, scale=0.1),
        "wq": f(D, D), "wk": f(D, D), "wv": f(D, D), "wo": f(D, D),
        "ln2_g": 1 + f(D, scale=0.1), "ln2_b": f(D, scale=0.1),
        "w1": f(F, D), "b1": f(F, scale=0.1), "w2": f(D, F), "b2": f(D, scale=0.1),
        "lnf_g": 1 + f(D, scale=0.1), "lnf_b": f(D, scale=0.1),
    }
    ids = np.array([3, 17, 42, 5, 60, 11], np.int64)
    pos = np.arange(S, dtype=np.int64)
    out = Path(out)
    write_safetensors(out / "model.safetensors", w)
    write_safetensors(out / "inputs.safetensors", {"ids": ids, "positions": pos})
    write_safetensors(out / "reference.safetensors", {"logits": forward(w, ids, pos)})


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "models/tiny-gpt")
