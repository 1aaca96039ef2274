// BERT encoders (BertModel and the sentence-transformers checkpoints built on it): post-norm
// layers, learned absolute positions, token types, padding-masked attention. The sentence
// embedding follows sentence-transformers' default recipe: mean over unmasked tokens, then L2
// normalisation.
#include <fmt/format.h>

#include "builders_internal.h"
#include "layers.h"
#include "params.h"
#include "pipeline.h"
#include "rlx/core/error.h"

namespace rlx::frontends::detail {
namespace {

// Checkpoints saved from BertForMaskedLM & co. prefix the encoder's names with "bert.".
std::string weight_prefix(const WeightSource& w) {
  return w.has("bert.embeddings.word_embeddings.weight") ? "bert." : "";
}

// Mean over the tokens whose mask is non-zero: sum(h * m) / max(sum(m), 1e-9), as
// sentence-transformers' Pooling does (the clamp keeps an all-padding row finite).
ValueId mean_pool(GraphBuilder& b, ValueId h, ValueId mask) {
  ValueId m = b.op("Cast", {mask}, {{"dtype", DType::kF32}});              // [B,S]
  ValueId m3 = b.op("Reshape", {m}, {{"shape", Shape{kBatch, kSeq, 1}}});  // [B,S,1]
  ValueId summed = b.reduce(b.op("Mul", {h, m3}), {1}, ReduceKind::kSum);  // [B,H]
  ValueId count = b.reduce(m, {1}, ReduceKind::kSum);                      // [B]
  count = b.binary("max", count, b.full_like(count, 1e-9));
  ValueId count2 = b.op("Reshape", {count}, {{"shape", Shape{kBatch, 1}}});
  return b.op("Div", {summed, count2});
}

// x / max(||x||, 1e-12) over the last axis, as torch.nn.functional.normalize.
ValueId l2_normalize(GraphBuilder& b, ValueId x) {
  ValueId ss = b.reduce_keep(b.mul(x, x), {1}, ReduceKind::kSum);
  ValueId norm = b.binary("max", b.unary("sqrt", ss), b.full_like(ss, 1e-12));
  return b.div(x, norm);
}

}  // namespace

Graph build_bert_main(const TransformerConfig& c, const WeightSource& source) {
  Graph g;
  g.name = "main";
  GraphBuilder b(g);
  Params w(b, source, fmt::format("bert model ({})", c.source));
  const std::string p = weight_prefix(source);
  const int64_t H = c.hidden, D = c.head_dim;
  const Stage stage = stage_of(c);

  ValueId ids = b.input("input_ids", {DType::kI64, {kBatch, kSeq}});
  ValueId mask = b.input("attention_mask", {DType::kI64, {kBatch, kSeq}});
  ValueId types = b.input("token_type_ids", {DType::kI64, {kBatch, kSeq}});

  b.set_loc("embeddings");
  // Checkpoints converted from TensorFlow name LayerNorm's scale and shift gamma and beta.
  auto layer_norm_at = [&](const std::string& prefix, ValueId x) {
    auto named = [&](const char* torch, const char* tf) {
      return w.has(prefix + torch) || !w.has(prefix + tf) ? prefix + torch : prefix + tf;
    };
    return layer_norm(b, x, w.f32(named(".weight", ".gamma"), {H}),
                      w.f32(named(".bias", ".beta"), {H}), c.norm_eps);
  };
  ValueId h;
  if (stage.first) {
    auto embed = [&](const std::string& name, int64_t rows, ValueId at) {
      return w.embedding(p + "embeddings." + name, rows, H, at);
    };
    h = embed("word_embeddings.weight", c.vocab, ids);
    h = b.op("Add", {h, embed("token_type_embeddings.weight", c.type_vocab, types)});
    h = b.op("Add", {h, embed("position_embeddings.weight", c.max_positions, positions(b, kSeq))});
    h = layer_norm_at(p + "embeddings.LayerNorm", h);
  } else {
    // A later pipeline stage starts from the hidden state its predecessor sends (pipeline.h).
    h = receive_hidden(b, stage, ids, H);
  }

  for (int64_t i = stage.begin; i < stage.end; ++i) {
    const std::string l = fmt::format("{}encoder.layer.{}.", p, i);
    b.set_loc(fmt::format("layer {}", i));
    auto dense = [&](const std::string& name, int64_t out, int64_t in, ValueId x) {
      return linear(b, x, w.matrix(l + name + ".weight", out, in),
                    w.f32(l + name + ".bias", {out}));
    };
    auto norm = [&](const std::string& name, ValueId x) { return layer_norm_at(l + name, x); };
    // A tensor-parallel shard (shard.h) has c.heads of the model's heads and adds up its
    // partial output products with the other ranks.
    auto all_reduce = [&](ValueId partial) {
      return c.tensor_parallel > 1
                 ? b.op("AllReduce", {partial},
                        tensor_parallel_attrs(c, {{"reduce", std::string("sum")}}))
                 : partial;
    };
    // q, k and v read the same state: one product, sliced (Params::products); the attention
    // reads each slice's heads in place where a target can.
    const std::vector<ValueId> qkv = w.products({{l + "attention.self.query", c.heads * D},
                                                 {l + "attention.self.key", c.heads * D},
                                                 {l + "attention.self.value", c.heads * D}},
                                                H, h);
    auto heads = [&](ValueId product) {
      return swap_seq_heads(b, split_heads(b, product, c.heads, D));
    };
    ValueId q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);
    ValueId a = b.op("Attention", {q, k, v, mask}, {{"mask", std::string("padding")}});
    a = all_reduce(dense("attention.output.dense", H, c.heads * D, merge_heads(b, a)));
    h = norm("attention.output.LayerNorm", b.op("Add", {a, h}));
    ValueId f = activation(b, dense("intermediate.dense", c.intermediate, H, h), c.hidden_act);
    f = all_reduce(dense("output.dense", H, c.intermediate, f));
    h = norm("output.LayerNorm", b.op("Add", {f, h}));
  }

  // Every stage ends with the last stage's hidden state (the others' Send orders the broadcast
  // after it), so each rank pools and returns what one process does.
  if (c.pipeline_stages > 1) {
    if (!stage.last) h = send_hidden(b, stage, h);
    h = broadcast_from_last(b, stage, h);
  }
  b.set_loc("pooling");
  ValueId pooled = l2_normalize(b, mean_pool(b, h, mask));
  output(b, h, "last_hidden_state");
  output(b, pooled, "sentence_embedding");
  // BertForSequenceClassification (and `rlx train --task sequence-classification`'s folders): the
  // first token's state through the pooler, tanh(W_p h_0 + b_p), then the classifier, as logits
  // [B, labels]. Dropout is the identity at inference.
  if (source.has("classifier.weight") && w.has(p + "pooler.dense.weight")) {
    b.set_loc("classifier");
    const Weight head = source.get("classifier.weight");
    const int64_t labels = head.dense.defined() && head.dense.rank() == 2 ? head.dense.shape()[0]
                           : head.shape.size() == 2                       ? head.shape[0]
                                                                          : 0;
    if (labels < 1)
      throw_user_error(fmt::format(
          "bert model ({}): classifier.weight is not a [labels, {}] matrix", c.source, H));
    Tensor zero(DType::kI64, {});
    zero.as<int64_t>()[0] = 0;
    ValueId first = b.op("gather", {h, b.constant(zero)}, {{"axis", int64_t{1}}});  // [B, H]
    ValueId pooler = b.unary("tanh", linear(b, first, w.matrix(p + "pooler.dense.weight", H, H),
                                            w.f32(p + "pooler.dense.bias", {H})));
    output(b,
           linear(b, pooler, w.matrix("classifier.weight", labels, H),
                  w.f32("classifier.bias", {labels})),
           "logits");
  }
  return g;
}

}  // namespace rlx::frontends::detail
