"""MLX (PyPI mlx-cpu, its CPU backend on Linux): the encoder of lib/bert_ops.py under
mx.compile; mx.eval forces the lazy graph inside each timed call."""
import mlx.core as mx
import numpy as np

from lib import bert_ops, st


class Ops:
    take = staticmethod(lambda t, i: mx.take(t, i, axis=0))
    linear = staticmethod(lambda x, w, b: mx.matmul(x, mx.transpose(w)) + b)
    matmul = staticmethod(mx.matmul)
    reshape = staticmethod(mx.reshape)
    transpose = staticmethod(mx.transpose)
    arange = staticmethod(lambda n: mx.arange(n))
    cast = staticmethod(lambda x: x.astype(mx.float32))
    sum = staticmethod(lambda x, axis, keep: mx.sum(x, axis=axis, keepdims=keep))
    sqrt = staticmethod(mx.sqrt)
    maximum = staticmethod(mx.maximum)
    softmax = staticmethod(lambda x: mx.softmax(x, axis=-1))
    gelu = staticmethod(lambda x: 0.5 * x * (1.0 + mx.erf(x * 0.7071067811865476)))

    @staticmethod
    def layernorm(x, g, b, eps):
        return mx.fast.layer_norm(x, g, b, eps)


def describe(task):
    return {"version": getattr(mx, "__version__", "unknown"), "threads": "MLX default",
            "setting": "mx.compile, CPU device"}


def prepare(task, inputs):
    if task["kind"] != "bert":
        raise NotImplementedError("the mlx peer runs the encoder suite only")
    mx.set_default_device(mx.cpu)
    w = {k: mx.array(v) for k, v in bert_ops.encoder_weights(st.read(task["weights"])).items()}
    cfg = task["config"]
    b, s = inputs["input_ids"].shape
    fn = mx.compile(lambda i, m, t: bert_ops.encoder(Ops, w, cfg, i, m, t, b, s))
    args = [mx.array(inputs[n]) for n in ("input_ids", "attention_mask", "token_type_ids")]

    def call():
        last, emb = fn(*args)
        mx.eval(last, emb)
        return {"last_hidden_state": np.array(last), "sentence_embedding": np.array(emb)}
    return call
