// build_model: checks the normalised config, then hands it to the builder of its family.
#include <fmt/format.h>

#include <cmath>

#include "builders_internal.h"
#include "pipeline.h"
#include "shard.h"
#include "rlx/core/error.h"
#include "rlx/core/input_limits.h"

namespace rlx::frontends {
namespace detail {

void output(GraphBuilder& b, ValueId v, const std::string& name) {
  Graph& g = b.graph();
  if (auto other = g.find_value(name); other && *other != v)
    throw_internal_error(fmt::format("graph {}: output name '{}' is taken", g.name, name));
  g.values[v].name = name;
  g.reserve_name(name);
  b.output(v);
}

}  // namespace detail

namespace {

[[noreturn]] void bad_config(const TransformerConfig& c, const std::string& what) {
  throw_user_error(fmt::format("{} ({}): {}", c.arch, c.source, what));
}

// Sizes are bounded so the shape arithmetic of the builders (heads x head_dim, ...) cannot
// overflow whatever a config says; real models are far below these limits.
void require_size(const TransformerConfig& c, int64_t value, const char* field,
                  int64_t limit = int64_t{1} << 24) {
  if (value <= 0) bad_config(c, fmt::format("{} must be positive, got {}", field, value));
  if (value > limit)
    bad_config(c, fmt::format("{} = {} is implausibly large (limit {})", field, value, limit));
}

void check(const TransformerConfig& c) {
  require_size(c, c.vocab, "vocab_size", int64_t{1} << 31);
  require_size(c, c.hidden, "hidden_size");
  require_size(c, c.layers, "num_hidden_layers", 4096);
  require_size(c, c.heads, "num_attention_heads");
  require_size(c, c.kv_heads, "num_key_value_heads");
  require_size(c, c.head_dim, "head_dim");
  require_size(c, c.intermediate, "intermediate_size");
  // A zero, negative or NaN epsilon or rope base makes every output NaN (and `generate` emit
  // token 0): the config is wrong, so say which key.
  auto require_positive = [&](double value, const char* field) {
    if (!(value > 0) || !std::isfinite(value))
      bad_config(c, fmt::format("{} must be a positive finite number, got {}", field, value));
  };
  require_positive(c.norm_eps, c.arch == "bert" ? "layer_norm_eps" : "rms_norm_eps");
  if (c.arch != "bert") require_positive(c.rope_theta, "rope_theta");
  if (c.arch == "gemma3") {
    require_positive(c.rope_local_theta, "rope_local_base_freq");
    if (c.query_pre_attn_scalar != 0) require_positive(c.query_pre_attn_scalar, "query_pre_attn_scalar");
  }
  if (c.heads % c.kv_heads)
    bad_config(c, fmt::format("num_attention_heads ({}) is not a multiple of "
                              "num_key_value_heads ({})",
                              c.heads, c.kv_heads));
  if (c.head_dim % 2 && c.arch != "bert")
    bad_config(c, fmt::format("head_dim ({}) must be even for rotary embeddings", c.head_dim));
  if (c.arch == "gemma3") {
    if (c.sliding_window < 0 || c.sliding_window_pattern < 0)
      bad_config(c, "sliding_window and sliding_window_pattern must not be negative");
    if (!c.layer_types.empty() && static_cast<int64_t>(c.layer_types.size()) != c.layers)
      bad_config(c, fmt::format("layer_types lists {} layers, num_hidden_layers is {}",
                                c.layer_types.size(), c.layers));
    for (const std::string& t : c.layer_types)
      if (t != "sliding_attention" && t != "full_attention")
        bad_config(c, fmt::format("layer_types holds '{}' (sliding_attention or full_attention "
                                  "expected)",
                                  t));
  }
  if (c.arch == "bert") {
    require_size(c, c.max_positions, "max_position_embeddings", int64_t{1} << 31);
    require_size(c, c.type_vocab, "type_vocab_size");
    if (c.heads * c.head_dim != c.hidden)
      bad_config(c, fmt::format("hidden_size ({}) is not num_attention_heads ({}) x head_dim ({})",
                                c.hidden, c.heads, c.head_dim));
  }
}

std::string eos_list(const TransformerConfig& c) {
  std::string out = c.eos >= 0 ? std::to_string(c.eos) : "";
  for (int64_t id : c.extra_eos)
    if (id >= 0 && id != c.eos) out += (out.empty() ? "" : ",") + std::to_string(id);
  return out;
}

// What the graphs can index: an id past the vocabulary (or a negative one, which gather would count
// from the end), a token type past type_vocab_size, a position past the embedded or trained ones.
void record_input_limits(Model& m, const TransformerConfig& c) {
  add_input_limit(m, {"input_ids", -1, 0, c.vocab - 1, fmt::format("vocab_size {}", c.vocab)});
  if (c.arch == "bert") {
    add_input_limit(m, {"token_type_ids", -1, 0, c.type_vocab - 1,
                        fmt::format("type_vocab_size {}", c.type_vocab)});
    add_input_limit(m, {"attention_mask", -1, 0, 1, "1 for a token, 0 for padding"});
  }
  if (c.max_positions <= 0) return;
  const std::string why = fmt::format("max_position_embeddings {}", c.max_positions);
  add_input_limit(m, {"input_ids", 1, 0, c.max_positions, why});
  if (c.arch != "bert") add_input_limit(m, {"position", -1, 0, c.max_positions - 1, why});
}

}  // namespace

Model build_model(const TransformerConfig& whole, const WeightSource& whole_source,
                  const TensorParallel& tp, const PipelineParallel& pp) {
  const TransformerConfig& c0 = whole;
  Model m;
  m.architecture = c0.arch;
  if (c0.arch != "bert" && c0.arch != "qwen3" && c0.arch != "llama" && c0.arch != "gemma3")
    bad_config(c0,
               "no model builder for this architecture (rlx builds bert, qwen3, llama and "
               "gemma3)");
  check(c0);
  // A tensor-parallel rank builds its shard: a config with its share of the heads and MLP, and
  // the weights sliced to match (shard.h).
  // A pipeline stage builds its range of the layers (pipeline.h).
  const bool sharded = tp.size > 1, staged = pp.stages > 1;
  TransformerConfig c = sharded ? detail::shard_config(c0, tp) : c0;
  if (staged) c = detail::stage_config(c, pp);
  std::unique_ptr<WeightSource> slices;
  if (sharded) slices = detail::shard_weights(whole_source, c0, tp);
  const WeightSource& source = sharded ? *slices : whole_source;
  detail::UsedWeights weights(source);
  if (c.arch == "bert") {
    m.graphs["main"] = detail::build_bert_main(c, weights);
  } else {
    using detail::DecoderGraph;
    m.graphs["main"] = detail::build_decoder(c, weights, DecoderGraph::kMain);
    m.graphs["prefill"] = detail::build_decoder(c, weights, DecoderGraph::kPrefill);
    m.graphs["decode"] = detail::build_decoder(c, weights, DecoderGraph::kDecode);
    m.metadata[kMetaEosIds] = eos_list(c);
    if (c.bos >= 0) m.metadata[kMetaBosId] = std::to_string(c.bos);
  }
  if (sharded) m.metadata[kTensorParallelKey] = fmt::format("{}/{}", tp.rank, tp.size);
  if (staged) m.metadata[kPipelineParallelKey] = fmt::format("{}/{}", pp.stage, pp.stages);
  const bool tied = c.tie_embeddings && !source.has("lm_head.weight");
  weights.check_all_used(c, [&](const std::string& name) {
    return detail::held_by_other_stage(c, name, tied);
  });
  record_input_limits(m, c);
  m.metadata[kMetaVocab] = std::to_string(c.vocab);
  if (c.max_positions > 0) m.metadata[kMetaMaxPositions] = std::to_string(c.max_positions);
  return m;
}

}  // namespace rlx::frontends
