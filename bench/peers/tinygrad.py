"""tinygrad (PyPI): the encoder of lib/bert_ops.py captured by TinyJit on its CPU device
(generated C compiled by clang). DEV=CPU selects it: left alone, tinygrad picks OpenCL, which on
this machine is PoCL running on the same cores."""
import math
import os

os.environ.setdefault("DEV", "CPU")

import numpy as np
from tinygrad import Tensor, TinyJit, dtypes

from lib import bert_ops, st


def _erf(x):
    # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): tinygrad has no erf of its own.
    s = x.sign()
    a = x.abs()
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t +
               0.254829592) * t * (-a * a).exp()
    return s * y


class Ops:
    take = staticmethod(lambda t, i: t[i])
    linear = staticmethod(lambda x, w, b: x.matmul(w.T) + b)
    matmul = staticmethod(lambda a, b: a.matmul(b))
    reshape = staticmethod(lambda x, shape: x.reshape(shape))
    transpose = staticmethod(lambda x, perm: x.permute(perm))
    arange = staticmethod(lambda n: Tensor.arange(n))
    cast = staticmethod(lambda x: x.cast(dtypes.float32))
    sum = staticmethod(lambda x, axis, keep: x.sum(axis=axis, keepdim=keep))
    sqrt = staticmethod(lambda x: x.sqrt())
    maximum = staticmethod(lambda x, c: x.maximum(c))
    softmax = staticmethod(lambda x: x.softmax(-1))
    gelu = staticmethod(lambda x: 0.5 * x * (1.0 + _erf(x * (1 / math.sqrt(2)))))

    @staticmethod
    def layernorm(x, g, b, eps):
        return x.layernorm(axis=-1, eps=eps) * g + b


def describe(task):
    from importlib.metadata import version

    from tinygrad import Device
    return {"version": version("tinygrad"), "threads": "tinygrad default",
            "setting": f"TinyJit, device {Device.DEFAULT}"}


def prepare(task, inputs):
    if task["kind"] != "bert":
        raise NotImplementedError("the tinygrad peer runs the encoder suite only")
    w = {k: Tensor(v).realize()
         for k, v in bert_ops.encoder_weights(st.read(task["weights"])).items()}
    cfg = task["config"]
    b, s = inputs["input_ids"].shape

    @TinyJit
    def fn(i, m, t):
        last, emb = bert_ops.encoder(Ops, w, cfg, i, m, t, b, s)
        return last.realize(), emb.realize()

    args = [Tensor(inputs[n].astype(np.int32)).realize() for n in
            ("input_ids", "attention_mask", "token_type_ids")]

    def call():
        last, emb = fn(*args)
        return {"last_hidden_state": last.numpy(), "sentence_embedding": emb.numpy()}
    return call
