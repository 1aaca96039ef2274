"""JAX (PyPI jax + jaxlib, XLA on the CPU): the encoder of lib/bert_ops.py under jax.jit, its
default (and strongest) CPU setting; XLA's own thread pool."""
import jax
import jax.numpy as jnp
import numpy as np

from lib import bert_ops, st


class Ops:
    take = staticmethod(lambda t, i: jnp.take(t, i, axis=0))
    linear = staticmethod(lambda x, w, b: jnp.matmul(x, w.T) + b)
    matmul = staticmethod(jnp.matmul)
    reshape = staticmethod(jnp.reshape)
    transpose = staticmethod(jnp.transpose)
    arange = staticmethod(jnp.arange)
    cast = staticmethod(lambda x: x.astype(jnp.float32))
    sum = staticmethod(lambda x, axis, keep: jnp.sum(x, axis=axis, keepdims=keep))
    sqrt = staticmethod(jnp.sqrt)
    maximum = staticmethod(jnp.maximum)
    softmax = staticmethod(lambda x: jax.nn.softmax(x, axis=-1))
    gelu = staticmethod(lambda x: jax.nn.gelu(x, approximate=False))

    @staticmethod
    def layernorm(x, g, b, eps):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + eps) * g + b


def describe(task):
    return {"version": jax.__version__, "threads": "XLA default", "setting": "jax.jit, CPU"}


def prepare(task, inputs):
    if task["kind"] != "bert":
        raise NotImplementedError("the jax peer runs the encoder suite only")
    w = {k: jnp.asarray(v) for k, v in bert_ops.encoder_weights(st.read(task["weights"])).items()}
    cfg = task["config"]
    b, s = inputs["input_ids"].shape
    fn = jax.jit(lambda w, i, m, t: bert_ops.encoder(Ops, w, cfg, i, m, t, b, s))
    args = [jnp.asarray(inputs[n]) for n in ("input_ids", "attention_mask", "token_type_ids")]

    def call():
        last, emb = fn(w, *args)
        return {"last_hidden_state": np.asarray(last), "sentence_embedding": np.asarray(emb)}
    return call
