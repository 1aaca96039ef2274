"""The BERT encoder plus mean pooling and L2 normalisation, written once over a small set of
array operations that each array-library peer (JAX, TensorFlow, MLX, tinygrad) supplies: the
same math as peers/torch.py's BertEncoder, so every peer computes what `rlx embed` computes.

`ops` provides: take(table, ids), linear(x, w, b) with w stored [out, in], layernorm(x, g, b,
eps), gelu(x) (the erf form), softmax(x) over the last axis, matmul(a, b), reshape(x, shape),
transpose(x, perm), arange(n), cast(x) to f32, sum(x, axis, keepdims), sqrt(x), maximum(x, c)."""
import math


def encoder(ops, w, cfg, input_ids, attention_mask, token_type_ids, batch, seq):
    heads = cfg["num_attention_heads"]
    hidden = cfg["hidden_size"]
    d = hidden // heads
    eps = cfg["layer_norm_eps"]
    x = (ops.take(w["embeddings.word_embeddings.weight"], input_ids) +
         ops.take(w["embeddings.position_embeddings.weight"], ops.arange(seq)) +
         ops.take(w["embeddings.token_type_embeddings.weight"], token_type_ids))
    x = ops.layernorm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    mask = ops.cast(attention_mask)
    bias = ops.reshape((1.0 - mask) * -10000.0, (batch, 1, 1, seq))
    scale = 1.0 / math.sqrt(d)

    def heads_of(t):
        return ops.transpose(ops.reshape(t, (batch, seq, heads, d)), (0, 2, 1, 3))

    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."

        def lin(t, name):
            return ops.linear(t, w[p + name + ".weight"], w[p + name + ".bias"])

        q = heads_of(lin(x, "attention.self.query"))
        k = heads_of(lin(x, "attention.self.key"))
        v = heads_of(lin(x, "attention.self.value"))
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))) * scale + bias
        ctx = ops.matmul(ops.softmax(scores), v)
        ctx = ops.reshape(ops.transpose(ctx, (0, 2, 1, 3)), (batch, seq, hidden))
        a = lin(ctx, "attention.output.dense") + x
        x = ops.layernorm(a, w[p + "attention.output.LayerNorm.weight"],
                          w[p + "attention.output.LayerNorm.bias"], eps)
        h = ops.gelu(lin(x, "intermediate.dense"))
        o = lin(h, "output.dense") + x
        x = ops.layernorm(o, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
    m = ops.reshape(mask, (batch, seq, 1))
    emb = ops.sum(x * m, 1, False) / ops.maximum(ops.sum(m, 1, False), 1e-9)
    norm = ops.sqrt(ops.sum(emb * emb, 1, True))
    return x, emb / ops.maximum(norm, 1e-12)


# The float weights of the encoder (position_ids and the pooler are not used).
def encoder_weights(all_weights):
    return {k: v for k, v in all_weights.items()
            if v.dtype.kind == "f" and not k.startswith("pooler.")}
