"""Float64 NumPy reference of rlx's MLP training step (tests/unit/autodiff/test_trainer.cpp).

Usage: train_reference.py DIR. DIR holds init.safetensors (fc<i>.weight [out, in], fc<i>.bias),
data.safetensors (x f32 [n, in], labels i32 [n]) and config.json; writes losses.txt (one loss
per step) and accuracy.txt (accuracy on all of x after the last step). Written independently of
rlx: plain forward and backward passes, PyTorch's SGD and AdamW update rules.
"""
import json
import struct
import sys
from pathlib import Path

import numpy as np

DTYPES = {"F32": np.float32, "F64": np.float64, "I32": np.int32, "I64": np.int64}


def read_safetensors(path):
    raw = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    data = raw[8 + n :]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        out[name] = np.frombuffer(data[lo:hi], dtype=DTYPES[info["dtype"]]).reshape(info["shape"])
    return out


def forward_backward(params, layers, x, labels):
    acts = [x]
    h = x
    for i in range(layers):
        z = h @ params[f"fc{i}.weight"].T + params[f"fc{i}.bias"]
        acts.append(z)
        h = np.maximum(z, 0.0) if i + 1 < layers else z
    logits = h
    m = logits.max(axis=1, keepdims=True)
    e = np.exp(logits - m)
    p = e / e.sum(axis=1, keepdims=True)
    n = x.shape[0]
    loss = float(np.mean(np.log(e.sum(axis=1)) + m[:, 0] - logits[np.arange(n), labels]))
    g = p
    g[np.arange(n), labels] -= 1.0
    g /= n
    grads = {}
    for i in reversed(range(layers)):
        inp = x if i == 0 else np.maximum(acts[i], 0.0)
        grads[f"fc{i}.weight"] = g.T @ inp
        grads[f"fc{i}.bias"] = g.sum(axis=0)
        if i > 0:
            g = (g @ params[f"fc{i}.weight"]) * (acts[i] > 0)
    return loss, grads


def main():
    d = Path(sys.argv[1])
    cfg = json.loads((d / "config.json").read_text())
    params = {k: v.astype(np.float64) for k, v in read_safetensors(d / "init.safetensors").items()}
    data = read_safetensors(d / "data.safetensors")
    x = data["x"].astype(np.float64)
    labels = data["labels"].astype(np.int64)
    layers = len(cfg["sizes"]) - 1
    b = cfg["batch"]
    state = {k: (np.zeros_like(v), np.zeros_like(v)) for k, v in params.items()}
    losses = []
    for step in range(cfg["steps"]):
        at = (step * b) % x.shape[0]
        loss, grads = forward_backward(params, layers, x[at : at + b], labels[at : at + b])
        losses.append(loss)
        lr, wd = cfg["lr"], cfg["weight_decay"]
        for k in params:
            p, g = params[k], grads[k]
            m, v = state[k]
            if cfg["optimizer"] == "sgd":
                g = g + wd * p
                m = cfg["momentum"] * m + g
                g = g + cfg["momentum"] * m if cfg["nesterov"] else m
                p = p - lr * g
            else:  # adamw
                t = step + 1
                p = p * (1.0 - lr * wd)
                m = cfg["beta1"] * m + (1.0 - cfg["beta1"]) * g
                v = cfg["beta2"] * v + (1.0 - cfg["beta2"]) * g * g
                m_hat = m / (1.0 - cfg["beta1"] ** t)
                v_hat = v / (1.0 - cfg["beta2"] ** t)
                p = p - lr * m_hat / (np.sqrt(v_hat) + cfg["eps"])
            params[k] = p
            state[k] = (m, v)
    (d / "losses.txt").write_text("".join(f"{l!r}\n" for l in losses))
    h = x
    for i in range(layers):
        h = h @ params[f"fc{i}.weight"].T + params[f"fc{i}.bias"]
        if i + 1 < layers:
            h = np.maximum(h, 0.0)
    acc = float(np.mean(h.argmax(axis=1) == labels))
    (d / "accuracy.txt").write_text(f"{acc!r}\n")


if __name__ == "__main__":
    main()
