"""PyTorch autograd reference for the gradients of the minilm-l2-f16 fixture's encoder
(tests/unit/autodiff/test_minilm_gradients.cpp).

Usage: minilm_grad_reference.py FIXTURE_DIR OUT.json. Runs BertModel's forward (embeddings, two
encoder layers, eager attention with the additive padding mask, erf GELU) in float64 from the
fixture's stored f16 weights, checks it against the fixture's transformers float64 reference,
then takes torch.autograd gradients of loss = sum(last_hidden_state * R), R[i] = sin(0.3 i) over
the flat index. For each weight it writes the gradient's L2 norm and its dot products with three
fixed directions d_k[i] = sin(0.37 i + 1.3 k + 0.1): a few numbers per tensor, yet any error in
any element moves them. Needs torch and numpy only (run on the GPU machine, which has both).
"""
import json
import math
import sys
from pathlib import Path

import numpy as np
import torch

# The tests' safetensors reader (NumPy only), from tests/python.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
from reference_files import read_safetensors  # noqa: E402


def main(fixture, out_path):
    cfg = json.loads((Path(fixture) / "config.json").read_text())
    ref = read_safetensors(Path(fixture) / "reference.safetensors")
    w = {k: torch.tensor(v.astype(np.float64), requires_grad=True)
         for k, v in read_safetensors(Path(fixture) / "model.safetensors").items()}
    ids = torch.tensor(ref["input_ids"])
    mask = torch.tensor(ref["attention_mask"]).to(torch.float64)
    types = torch.tensor(ref["token_type_ids"])
    batch, seq = ids.shape
    hidden, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    dh, eps = hidden // heads, cfg["layer_norm_eps"]

    def linear(x, name):
        return x @ w[name + ".weight"].T + w[name + ".bias"]

    def norm(x, name):
        return torch.nn.functional.layer_norm(x, (hidden,), w[name + ".weight"], w[name + ".bias"], eps)

    x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:seq][None]
         + w["embeddings.token_type_embeddings.weight"][types])
    x = norm(x, "embeddings.LayerNorm")
    additive = (1.0 - mask)[:, None, None, :] * torch.finfo(torch.float64).min
    for layer in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{layer}."
        split = lambda t: t.reshape(batch, seq, heads, dh).transpose(1, 2)
        q, k, v = (split(linear(x, p + "attention.self." + n)) for n in ("query", "key", "value"))
        scores = q @ k.transpose(-1, -2) / math.sqrt(dh) + additive
        ctx = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(batch, seq, hidden)
        x = norm(linear(ctx, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
        inner = torch.nn.functional.gelu(linear(x, p + "intermediate.dense"))
        x = norm(linear(inner, p + "output.dense") + x, p + "output.LayerNorm")
    forward_error = float((x.detach() - torch.tensor(ref["last_hidden_state_f64"])).abs().max())
    print(f"forward against transformers' float64: max abs error {forward_error:.3g}")
    assert forward_error < 1e-9, "the hand-written BertModel does not reproduce transformers"
    r = torch.sin(0.3 * torch.arange(x.numel(), dtype=torch.float64)).reshape(x.shape)
    loss = (x * r).sum()
    loss.backward()
    record = {"loss": float(loss.detach()), "forward_error": forward_error, "tensors": {}}
    for name, t in w.items():
        g = t.grad.reshape(-1)
        i = torch.arange(g.numel(), dtype=torch.float64)
        record["tensors"][name] = {
            "norm": float(g.norm()),
            "dots": [float(g @ torch.sin(0.37 * i + 1.3 * k + 0.1)) for k in range(3)],
        }
    Path(out_path).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
