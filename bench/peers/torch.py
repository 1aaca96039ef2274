"""PyTorch (Debian's python3-torch 1.13, eager mode under inference_mode, its default intra-op
threads: one on Debian's build, its fastest setting on this machine). Also the source of the ONNX
graph: bench/run.py exports BertEncoder with torch.onnx.export, so ONNX Runtime, IREE and TVM
run exactly these weights and this math.

bench/quant/run.py also runs this module in bench/.venvs/torch-pypi (PyPI's current torch) with
options, on the encoder only:
  threads: "cpus"    torch.set_num_threads(one per CPU the process may run on)
  autocast: "bf16"   under torch.autocast("cpu", dtype=torch.bfloat16): linear and attention in
                     bf16 through oneDNN (on AMX tiles where the CPU has them), GELU on their
                     bf16 outputs; the residual adds, LayerNorm and the pooling in f32
  int8: true         torch.ao.quantization.quantize_dynamic on the nn.Linear projections: int8
                     weights (per tensor), activations quantized at run time"""
import contextlib
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

from lib import st


def describe(task):
    opts = task.get("options") or {}
    setting = "eager, inference_mode"
    if opts.get("autocast") == "bf16":
        setting += ", autocast cpu bf16"
    if opts.get("int8"):
        setting += (", quantize_dynamic qint8 nn.Linear (engine "
                    f"{torch.backends.quantized.engine})")
    return {"version": torch.__version__, "threads": torch.get_num_threads(), "setting": setting}


def _tensors(path):
    return {k: torch.from_numpy(v) for k, v in st.read(path).items()}


class BertEncoder(torch.nn.Module):
    """A Hugging Face BERT (post-norm, absolute positions, erf GELU) followed by
    sentence-transformers' mean pooling and L2 normalisation: what `rlx embed` computes.
    linear_modules: the projections as nn.Linear modules (same weights), which quantize_dynamic
    rewrites; by default every weight is a plain buffer, as the ONNX export has always seen it."""

    def __init__(self, weights, cfg, linear_modules=False):
        super().__init__()
        self.cfg = cfg
        self.linears = torch.nn.ModuleDict()
        for name, t in weights.items():
            prefix = name.removesuffix(".weight")
            if linear_modules and t.dim() == 2 and prefix + ".bias" in weights:
                lin = torch.nn.Linear(t.shape[1], t.shape[0])
                lin.weight = torch.nn.Parameter(t, requires_grad=False)
                lin.bias = torch.nn.Parameter(weights[prefix + ".bias"], requires_grad=False)
                self.linears[prefix.replace(".", "__")] = lin
        for name, t in weights.items():
            key = name.replace(".", "__")
            if t.dtype == torch.float32 and key.rsplit("__", 1)[0] not in self.linears:
                self.register_buffer(key, t, persistent=False)

    def w(self, name):
        return getattr(self, name.replace(".", "__"))

    def ln(self, x, prefix):
        return F.layer_norm(x, (self.cfg["hidden_size"],), self.w(prefix + ".weight"),
                            self.w(prefix + ".bias"),
                            self.cfg["layer_norm_eps"])

    def lin(self, x, prefix):
        key = prefix.replace(".", "__")
        if key in self.linears:
            return self.linears[key](x)
        return F.linear(x, self.w(prefix + ".weight"), self.w(prefix + ".bias"))

    def forward(self, input_ids, attention_mask, token_type_ids):
        cfg = self.cfg
        b, s = input_ids.shape
        heads = cfg["num_attention_heads"]
        d = cfg["hidden_size"] // heads
        pos = torch.arange(s, device=input_ids.device).unsqueeze(0)
        x = (F.embedding(input_ids, self.w("embeddings.word_embeddings.weight")) +
             F.embedding(pos, self.w("embeddings.position_embeddings.weight")) +
             F.embedding(token_type_ids, self.w("embeddings.token_type_embeddings.weight")))
        x = self.ln(x, "embeddings.LayerNorm")
        bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for i in range(cfg["num_hidden_layers"]):
            p = f"encoder.layer.{i}."
            q = self.lin(x, p + "attention.self.query").view(b, s, heads, d).permute(0, 2, 1, 3)
            k = self.lin(x, p + "attention.self.key").view(b, s, heads, d).permute(0, 2, 1, 3)
            v = self.lin(x, p + "attention.self.value").view(b, s, heads, d).permute(0, 2, 1, 3)
            # PyTorch's fused attention (flash / memory-efficient kernels where they apply), the
            # same softmax(q k^T / sqrt(d) + bias) v; PyTorch 1.13 (Debian's, which the ONNX
            # export runs under) has no fused op, so it gets the plain product.
            if hasattr(F, "scaled_dot_product_attention"):
                ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
            else:
                scores = q @ k.transpose(-1, -2) / math.sqrt(d) + bias
                ctx = torch.softmax(scores, dim=-1) @ v
            ctx = ctx.permute(0, 2, 1, 3).reshape(b, s, cfg["hidden_size"])
            x = self.ln(self.lin(ctx, p + "attention.output.dense") + x,
                        p + "attention.output.LayerNorm")
            h = F.gelu(self.lin(x, p + "intermediate.dense"))
            x = self.ln(self.lin(h, p + "output.dense") + x, p + "output.LayerNorm")
        m = attention_mask.unsqueeze(-1).to(x.dtype)
        emb = (x * m).sum(1) / m.sum(1).clamp(min=1e-9)
        emb = emb / emb.norm(dim=1, keepdim=True).clamp(min=1e-12)
        return x, emb


def bert_module(task):
    opts = task.get("options") or {}
    model = BertEncoder(_tensors(task["weights"]), task["config"],
                        linear_modules=bool(opts.get("int8"))).eval()
    if opts.get("int8"):
        model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear},
                                                       dtype=torch.qint8)
    return model


# --- Qwen3 layout decoder, same math as Hugging Face's Qwen3ForCausalLM --------------------------

def _rms(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def _linear(x, w):
    # One token: OpenBLAS 0.3.21 runs a one-row sgemm about ten times slower than sgemv, so the
    # decode step asks for the matrix-vector product (the peer's fastest way, not rlx's).
    if x.shape[0] * x.shape[1] == 1:
        return torch.mv(w, x.reshape(-1)).view(1, 1, -1)
    return F.linear(x, w)


class Qwen3:
    def __init__(self, weights, cfg):
        self.w, self.cfg = weights, cfg
        self.h, self.hkv, self.d = (cfg["num_attention_heads"], cfg["num_key_value_heads"],
                                    cfg["head_dim"])
        theta = cfg.get("rope_theta") or cfg["rope_parameters"]["rope_theta"]
        self.inv_freq = 1.0 / (theta ** (torch.arange(0, self.d, 2, dtype=torch.float64) / self.d))
        self.head = weights.get("lm_head.weight", weights["model.embed_tokens.weight"])

    def rope(self, positions):
        f = positions.to(torch.float64)[:, None] * self.inv_freq[None, :]
        e = torch.cat([f, f], dim=-1)
        return e.cos().to(torch.float32), e.sin().to(torch.float32)

    @staticmethod
    def rotate(x, cos, sin):
        half = x.shape[-1] // 2
        return x * cos + torch.cat([-x[..., half:], x[..., :half]], dim=-1) * sin

    def forward(self, ids, positions, cache=None, cache_len=0, last_only=False):
        """cache: per layer [k, v] tensors [B, Hkv, T, D] updated in place at `positions`;
        attention then covers slots 0 .. cache_len + S - 1 (causal inside the new tokens)."""
        w, cfg, eps = self.w, self.cfg, self.cfg["rms_norm_eps"]
        b, s = ids.shape
        x = F.embedding(ids, w["model.embed_tokens.weight"])
        cos, sin = self.rope(positions)
        total = cache_len + s
        mask = None
        if s > 1:
            mask = torch.full((s, total), float("-inf")).triu(cache_len + 1)
        presents = []
        for i in range(cfg["num_hidden_layers"]):
            p = f"model.layers.{i}."
            h = _rms(x, w[p + "input_layernorm.weight"], eps)
            q = _linear(h, w[p + "self_attn.q_proj.weight"]).view(b, s, self.h, self.d)
            k = _linear(h, w[p + "self_attn.k_proj.weight"]).view(b, s, self.hkv, self.d)
            v = _linear(h, w[p + "self_attn.v_proj.weight"]).view(b, s, self.hkv, self.d)
            q = self.rotate(_rms(q, w[p + "self_attn.q_norm.weight"], eps).transpose(1, 2), cos, sin)
            k = self.rotate(_rms(k, w[p + "self_attn.k_norm.weight"], eps).transpose(1, 2), cos, sin)
            v = v.transpose(1, 2)
            if cache is not None:
                ck, cv = cache[i]
                ck[:, :, cache_len:total] = k
                cv[:, :, cache_len:total] = v
                k, v = ck[:, :, :total], cv[:, :, :total]
            presents.append((k, v))
            rep = self.h // self.hkv
            kr = k.repeat_interleave(rep, dim=1)
            vr = v.repeat_interleave(rep, dim=1)
            scores = torch.matmul(q, kr.transpose(-1, -2)) / math.sqrt(self.d)
            if mask is not None:
                scores = scores + mask
            a = torch.matmul(torch.softmax(scores, dim=-1), vr)
            a = a.transpose(1, 2).reshape(b, s, self.h * self.d)
            x = x + _linear(a, w[p + "self_attn.o_proj.weight"])
            h = _rms(x, w[p + "post_attention_layernorm.weight"], eps)
            g = _linear(h, w[p + "mlp.gate_proj.weight"])
            u = _linear(h, w[p + "mlp.up_proj.weight"])
            x = x + _linear(F.silu(g) * u, w[p + "mlp.down_proj.weight"])
        if last_only:  # a prompt's continuation needs the last position's logits only
            x = x[:, -1:]
        x = _rms(x, w["model.norm.weight"], eps)
        return _linear(x, self.head), presents


def prepare(task, inputs):
    kind = task["kind"]
    t = {k: torch.from_numpy(v) for k, v in inputs.items()}
    if kind == "bert":
        opts = task.get("options") or {}
        if opts.get("threads") == "cpus":
            torch.set_num_threads(len(os.sched_getaffinity(0)))
        model = bert_module(task)
        bf16 = opts.get("autocast") == "bf16"

        def call():
            amp = torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
            with torch.inference_mode(), amp:
                last, emb = model(t["input_ids"], t["attention_mask"], t["token_type_ids"])
            # Under autocast an output may come back in bf16, which NumPy has no type for.
            return {"last_hidden_state": last.float().numpy(),
                    "sentence_embedding": emb.float().numpy()}
        return call
    model = Qwen3(_tensors(task["weights"]), task["config"])
    if kind == "qwen3-prefill":
        ids = t["input_ids"]
        positions = torch.arange(ids.shape[1])

        def call():
            with torch.inference_mode():
                logits, _ = model.forward(ids, positions, last_only=True)
            return {"logits": logits.numpy()}
        return call
    if kind == "qwen3-decode":
        # The decode step of a generation: the cache holds `position` tokens, the new token's key
        # and value go into slot `position`, attention covers slots 0 .. position.
        pos = int(t["position"][0])
        n = task["config"]["num_hidden_layers"]
        base = [(t[f"past_key.{i}"], t[f"past_value.{i}"]) for i in range(n)]

        # Writing the same key and value into slot `position` again each call is idempotent, so
        # the caches need no copy between timed calls.
        def call():
            with torch.inference_mode():
                logits, _ = model.forward(t["input_ids"], torch.tensor([pos]), base, pos)
            return {"logits": logits.numpy()}
        return call
    raise NotImplementedError(f"torch peer: unknown task {kind}")
