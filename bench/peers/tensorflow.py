"""TensorFlow (PyPI tensorflow-cpu): the encoder of lib/bert_ops.py as a tf.function with XLA
compilation (jit_compile=True), TensorFlow's strongest CPU setting for a fixed-shape graph;
TensorFlow's default thread pools."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from lib import bert_ops, st  # noqa: E402


class Ops:
    take = staticmethod(lambda t, i: tf.gather(t, i))
    linear = staticmethod(lambda x, w, b: tf.matmul(x, w, transpose_b=True) + b)
    matmul = staticmethod(tf.matmul)
    reshape = staticmethod(tf.reshape)
    transpose = staticmethod(tf.transpose)
    arange = staticmethod(lambda n: tf.range(n))
    cast = staticmethod(lambda x: tf.cast(x, tf.float32))
    sum = staticmethod(lambda x, axis, keep: tf.reduce_sum(x, axis=axis, keepdims=keep))
    sqrt = staticmethod(tf.sqrt)
    maximum = staticmethod(tf.maximum)
    softmax = staticmethod(lambda x: tf.nn.softmax(x, axis=-1))
    gelu = staticmethod(lambda x: tf.nn.gelu(x, approximate=False))

    @staticmethod
    def layernorm(x, g, b, eps):
        mean, var = tf.nn.moments(x, axes=[-1], keepdims=True)
        return (x - mean) * tf.math.rsqrt(var + eps) * g + b


def describe(task):
    return {"version": tf.__version__, "threads": "TensorFlow default",
            "setting": "tf.function(jit_compile=True)"}


def prepare(task, inputs):
    if task["kind"] != "bert":
        raise NotImplementedError("the tensorflow peer runs the encoder suite only")
    w = {k: tf.constant(v) for k, v in bert_ops.encoder_weights(st.read(task["weights"])).items()}
    cfg = task["config"]
    b, s = inputs["input_ids"].shape
    fn = tf.function(lambda i, m, t: bert_ops.encoder(Ops, w, cfg, i, m, t, b, s),
                     jit_compile=True)
    args = [tf.constant(inputs[n]) for n in ("input_ids", "attention_mask", "token_type_ids")]

    def call():
        last, emb = fn(*args)
        return {"last_hidden_state": last.numpy(), "sentence_embedding": emb.numpy()}
    return call
