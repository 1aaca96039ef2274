// Decoder-only transformers (qwen3, llama, gemma3): RoPE, grouped-query attention, gated MLP.
// One function builds the three graphs of the KV-cache design (docs/models.md,
// docs/decisions.md): "prefill" returns the prompt's keys and values, "decode" writes one token's
// keys and values into a fixed-capacity cache at `position` and attends over the filled part,
// "main" gives the logits of every position and no cache.
#include <fmt/format.h>

#include <cmath>

#include "builders_internal.h"
#include "layers.h"
#include "params.h"
#include "pipeline.h"

namespace rlx::frontends::detail {
namespace {

// What distinguishes the families, decided once from the config.
struct Style {
  bool qk_norm = false;        // qwen3, gemma3: RMSNorm over each q and k head before RoPE
  bool sandwich_norm = false;  // gemma3: norms after attention and MLP as well as before
  bool norm_adds_one = false;  // gemma3: norms scale by (1 + w)
  double embed_scale = 1.0;    // gemma3: sqrt(hidden)
};

Style style_of(const TransformerConfig& c) {
  Style s;
  s.qk_norm = c.arch == "qwen3" || c.arch == "gemma3";
  if (c.arch == "gemma3") {
    s.sandwich_norm = true;
    s.norm_adds_one = c.norm_adds_one;
    s.embed_scale = std::sqrt(static_cast<double>(c.hidden));
  }
  return s;
}

bool sliding(const TransformerConfig& c, int64_t layer) {
  if (c.arch != "gemma3" || c.sliding_window <= 0) return false;
  if (!c.layer_types.empty()) return c.layer_types.at(layer) == "sliding_attention";
  return c.sliding_window_pattern <= 0 || (layer + 1) % c.sliding_window_pattern != 0;
}

struct LayerCache {
  ValueId past_key = kNoValue, past_value = kNoValue;
};

}  // namespace

Graph build_decoder(const TransformerConfig& c, const WeightSource& source, DecoderGraph which) {
  const bool decode = which == DecoderGraph::kDecode;
  const Style style = style_of(c);
  const Stage stage = stage_of(c);
  Graph g;
  g.name = which == DecoderGraph::kMain ? "main" : decode ? "decode" : "prefill";
  GraphBuilder b(g);
  Params w(b, source, fmt::format("{} model ({})", c.arch, c.source));
  const int64_t H = c.hidden, D = c.head_dim, NQ = c.heads, NKV = c.kv_heads;
  const Dim S = decode ? Dim(1) : kSeq;
  const double scale = c.query_pre_attn_scalar > 0 ? 1.0 / std::sqrt(c.query_pre_attn_scalar)
                                                   : 1.0 / std::sqrt(static_cast<double>(D));

  ValueId ids = b.input("input_ids", {DType::kI64, {kBatch, S}});
  ValueId pos = decode ? b.input("position", {DType::kI64, {1}}) : positions(b, kSeq);
  std::vector<LayerCache> cache(static_cast<size_t>(c.layers));
  if (decode)
    for (int64_t i = stage.begin; i < stage.end; ++i) {
      TensorType t{DType::kF32, {kBatch, NKV, kCacheLen, D}};
      cache[i].past_key = b.input(fmt::format("past_key.{}", i), t);
      cache[i].past_value = b.input(fmt::format("past_value.{}", i), t);
    }
  // Decode attends over cache slots 0..position; later slots hold stale or zero data.
  ValueId slots = kNoValue, keep = kNoValue;
  if (decode) {
    slots = positions(b, kCacheLen);
    ValueId filled = b.binary("le", slots, b.broadcast_in_dim(pos, {kCacheLen}, {0}));
    keep = b.broadcast_in_dim(filled, {kBatch, kCacheLen}, {1});
  }
  // Sliding-window layers see keys at most sliding_window - 1 positions back: [Sq, Sk] masks.
  ValueId window_keep = kNoValue;
  auto window_mask = [&] {
    if (window_keep != kNoValue) return window_keep;
    auto i64 = [&](ValueId like, double v) { return b.full_like(like, v); };
    if (decode) {  // slot <= p and p - slot < window, as [1, T]
      ValueId p = b.broadcast_in_dim(pos, {kCacheLen}, {0});
      ValueId near = b.binary("lt", b.sub(p, slots), i64(p, double(c.sliding_window)));
      ValueId ok = b.binary("and", b.binary("le", slots, p), near);
      window_keep = b.reshape(ok, Shape{1, kCacheLen});
    } else {  // col <= row and row - col < window, as [S, S]
      Shape qk{kSeq, kSeq};
      Attrs row{{"shape", qk}, {"dim", int64_t{0}}, {"dtype", DType::kI64}};
      Attrs col = row;
      col["dim"] = int64_t{1};
      ValueId r = b.op("iota", {}, row), k = b.op("iota", {}, col);
      ValueId near = b.binary("lt", b.sub(r, k), i64(r, double(c.sliding_window)));
      window_keep = b.binary("and", b.binary("le", k, r), near);
    }
    return window_keep;
  };

  // RMSNorm; gemma3 stores w and scales by 1 + w.
  auto norm = [&](ValueId x, const std::string& name, int64_t n) {
    ValueId s = w.f32(name, {n});
    if (style.norm_adds_one) s = b.add(s, b.full_like(s, 1.0));
    return rms_norm(b, x, s, c.norm_eps);
  };

  b.set_loc("embed_tokens");
  // A vocabulary-parallel shard (shard.h) holds rows [first, first + V) of the table and of
  // the head.
  const int64_t V = c.vocab_parallel ? c.vocab / c.tensor_parallel : c.vocab;
  ValueId h;
  if (!stage.first) {
    // A later pipeline stage starts from the hidden state its predecessor sends (pipeline.h).
    h = receive_hidden(b, stage, ids, H);
  } else if (c.vocab_parallel) {
    // Ids outside this rank's rows look up row 0 and are zeroed; the AllReduce adds every
    // rank's rows, so each token's embedding comes from the rank that holds it.
    const double first = static_cast<double>(c.tensor_parallel_rank * V);
    ValueId local = b.sub(ids, b.full_like(ids, first));
    ValueId mine = b.binary("and", b.binary("ge", local, b.full_like(local, 0.0)),
                            b.binary("lt", local, b.full_like(local, static_cast<double>(V))));
    ValueId rows = w.embedding("model.embed_tokens.weight", V, H,
                               b.select(mine, local, b.full_like(local, 0.0)));
    ValueId held = b.broadcast_in_dim(b.convert(mine, DType::kF32), b.type(rows).shape, {0, 1});
    h = b.op("AllReduce", {b.mul(rows, held)},
             tensor_parallel_attrs(c, {{"reduce", std::string("sum")}}));
  } else {
    h = w.embedding("model.embed_tokens.weight", c.vocab, H, ids);
  }
  if (stage.first && style.embed_scale != 1.0) h = b.mul(h, b.full_like(h, style.embed_scale));

  std::vector<std::pair<std::string, ValueId>> presents;
  for (int64_t i = stage.begin; i < stage.end; ++i) {
    const std::string l = fmt::format("model.layers.{}.", i);
    const bool local = sliding(c, i);
    b.set_loc(fmt::format("layer {}", i));
    auto proj = [&](const std::string& name, int64_t out, int64_t in, ValueId x) {
      return linear(b, x, w.matrix(l + name + ".weight", out, in),
                    w.optional_f32(l + name + ".bias", {out}));
    };
    auto projections = [&](std::vector<std::pair<std::string, int64_t>> parts, ValueId x) {
      for (auto& part : parts) part.first = l + part.first;
      return w.products(parts, H, x);
    };
    ValueId x = norm(h, l + "input_layernorm.weight", H);
    const std::vector<ValueId> qkv = projections(
        {{"self_attn.q_proj", NQ * D}, {"self_attn.k_proj", NKV * D}, {"self_attn.v_proj", NKV * D}},
        x);
    // [B,S,n*D] -> [B,n,S,D]; qwen3 and gemma3 normalise each head before RoPE.
    auto heads = [&](ValueId product, int64_t n, const char* head_norm) {
      ValueId t = split_heads(b, product, n, D);
      if (style.qk_norm && head_norm) t = norm(t, l + "self_attn." + head_norm + ".weight", D);
      return swap_seq_heads(b, t);
    };
    const double base = local ? c.rope_local_theta : c.rope_theta;
    auto rope = [&](ValueId t) {
      return b.op("RoPE", {t, pos}, {{"base", base}, {"seq_axis", int64_t{2}}});
    };
    ValueId q = rope(heads(qkv[0], NQ, "q_norm"));
    ValueId k = rope(heads(qkv[1], NKV, "k_norm"));
    ValueId v = heads(qkv[2], NKV, nullptr);
    if (decode) {
      Attrs at{{"axis", int64_t{2}}, {"reduce", std::string("none")}};
      k = b.op("scatter", {cache[i].past_key, pos, k}, at);
      v = b.op("scatter", {cache[i].past_value, pos, v}, at);
    }
    ValueId a;
    if (local && decode) {
      // One query: the window is a mask over cache slots, so the native kernel takes it as a
      // padding mask instead of a decomposition that multiplies the whole cache every step.
      ValueId slots_in_window = b.reshape(window_mask(), Shape{kCacheLen});
      ValueId m = b.broadcast_in_dim(slots_in_window, {kBatch, kCacheLen}, {1});
      a = b.op("Attention", {q, k, v, m}, {{"mask", std::string("padding")}, {"scale", scale}});
    } else if (local) {
      a = masked_attention(b, q, k, v, window_mask(), scale);
    } else {
      Attrs attrs{{"mask", std::string(decode ? "padding" : "causal")}, {"scale", scale}};
      a = decode ? b.op("Attention", {q, k, v, keep}, attrs) : b.op("Attention", {q, k, v}, attrs);
    }
    presents.emplace_back(fmt::format("present_key.{}", i), k);
    presents.emplace_back(fmt::format("present_value.{}", i), v);
    a = proj("self_attn.o_proj", H, NQ * D, merge_heads(b, a));
    // A tensor-parallel shard's o_proj and down_proj give partial sums over its heads and
    // columns (shard.h): every rank adds them up.
    auto all_reduce = [&](ValueId partial) {
      return c.tensor_parallel > 1
                 ? b.op("AllReduce", {partial},
                        tensor_parallel_attrs(c, {{"reduce", std::string("sum")}}))
                 : partial;
    };
    a = all_reduce(a);
    if (style.sandwich_norm) a = norm(a, l + "post_attention_layernorm.weight", H);
    h = b.op("Add", {h, a});

    x = norm(h,
             l + (style.sandwich_norm ? "pre_feedforward_layernorm.weight"
                                      : "post_attention_layernorm.weight"),
             H);
    const std::vector<ValueId> gate_up =
        projections({{"mlp.gate_proj", c.intermediate}, {"mlp.up_proj", c.intermediate}}, x);
    ValueId gate = activation(b, gate_up[0], c.hidden_act);
    ValueId up = gate_up[1];
    ValueId f = all_reduce(proj("mlp.down_proj", H, c.intermediate, b.op("Mul", {gate, up})));
    if (style.sandwich_norm) f = norm(f, l + "post_feedforward_layernorm.weight", H);
    h = b.op("Add", {h, f});
  }

  b.set_loc("lm_head");
  if (!stage.last) h = send_hidden(b, stage, h);
  // Prefill only starts generation: the last position's logits are all it needs, and the head
  // over the vocabulary is most of a prompt's work when computed for every position.
  if (which == DecoderGraph::kPrefill) {
    ValueId last = b.reshape(b.reduce(pos, {0}, ReduceKind::kMax), Shape{1});
    h = b.op("gather", {h, last}, {{"axis", int64_t{1}}});
  }
  if (!stage.last) {
    output(b, share_logits(b, stage, h, c.vocab), "logits");
    if (which != DecoderGraph::kMain)
      for (auto& [name, v] : presents) output(b, v, name);
    return g;
  }
  h = norm(h, "model.norm.weight", H);
  const bool tied = c.tie_embeddings && !source.has("lm_head.weight");
  // A tied head is the embedding table's param again: quantized, the same byte rows.
  LinearWeight head = w.matrix(tied ? "model.embed_tokens.weight" : "lm_head.weight", V, H);
  ValueId logits = linear(b, h, head);
  if (c.vocab_parallel) {
    // Each rank's logits are a block of the vocabulary; AllGather stacks the blocks along its
    // first dim, so the vocabulary goes first and back.
    logits = b.transpose(logits, {2, 0, 1});
    logits = b.op("AllGather", {logits}, tensor_parallel_attrs(c, {{"world", c.tensor_parallel}}));
    logits = b.transpose(logits, {1, 2, 0});
  }
  if (c.pipeline_stages > 1) logits = share_logits(b, stage, logits, c.vocab);
  output(b, logits, "logits");
  if (which != DecoderGraph::kMain)
    for (auto& [name, v] : presents) output(b, v, name);
  return g;
}

}  // namespace rlx::frontends::detail
