// general.architecture -> TransformerConfig and tensor names. Keys and names follow llama.cpp's
// gguf-py constants (LLM_KV_*, LLM_TENSOR_*); defaults are llama.cpp's where a key is optional.
#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "gguf_model.h"
#include "gguf_tokenizer.h"
#include "rlx/core/error.h"

namespace rlx::gguf {

namespace {

// Metadata of one architecture: "{arch}.{key}".
class Meta {
 public:
  Meta(const GgufFile& f, std::string arch) : f_(f), arch_(std::move(arch)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw_user_error(fmt::format("{}: metadata key '{}': {}", f_.source, key, what));
  }
  const Value* find(const std::string& key) const { return f_.find(arch_ + "." + key); }

  std::optional<int64_t> opt_int(const std::string& key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    auto i = v->as_int();
    if (!i)
      fail(arch_ + "." + key,
           fmt::format("expected an integer, got {} ({})", v->str(), value_type_name(v->type)));
    return i;
  }
  int64_t integer(const std::string& key) const {
    auto i = opt_int(key);
    if (!i) fail(arch_ + "." + key, fmt::format("missing (a {} model needs it)", arch_));
    return *i;
  }
  std::optional<double> opt_float(const std::string& key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    auto d = v->as_float();
    if (!d)
      fail(arch_ + "." + key, fmt::format("expected a number, got {}", value_type_name(v->type)));
    return d;
  }
  double number(const std::string& key) const {
    auto d = opt_float(key);
    if (!d) fail(arch_ + "." + key, fmt::format("missing (a {} model needs it)", arch_));
    return *d;
  }
  std::string text(const std::string& key) const {
    const Value* v = find(key);
    return v && v->as_string() ? *v->as_string() : "";
  }

 private:
  const GgufFile& f_;
  std::string arch_;
};

[[noreturn]] void unsupported(const GgufFile& f, const std::string& what) {
  throw_user_error(fmt::format("{}: {}", f.source, what));
}

int64_t rows_of(const GgufFile& f, const std::string& tensor) {
  const TensorInfo* t = f.tensor(tensor);
  if (!t || t->ne.size() != 2)
    unsupported(f, fmt::format("tensor '{}' is missing or not 2-D", tensor));
  return t->ne[1];
}

// Per-layer GGUF tensor -> Hugging Face suffix, for one architecture.
struct NameTable {
  std::string layer_prefix;  // "model.layers.{}."
  std::map<std::string, std::string> global, layer;
};

const NameTable& llama_names() {
  static const NameTable t{
      "model.layers.{}.",
      {{"token_embd", "model.embed_tokens"}, {"output_norm", "model.norm"}, {"output", "lm_head"}},
      {{"attn_norm", "input_layernorm"},
       {"attn_q", "self_attn.q_proj"},
       {"attn_k", "self_attn.k_proj"},
       {"attn_v", "self_attn.v_proj"},
       {"attn_output", "self_attn.o_proj"},
       {"ffn_norm", "post_attention_layernorm"},
       {"ffn_gate", "mlp.gate_proj"},
       {"ffn_up", "mlp.up_proj"},
       {"ffn_down", "mlp.down_proj"}}};
  return t;
}

const NameTable& gemma3_names() {
  static const NameTable t{
      "model.layers.{}.",
      {{"token_embd", "model.embed_tokens"}, {"output_norm", "model.norm"}, {"output", "lm_head"}},
      {{"attn_norm", "input_layernorm"},
       {"attn_q", "self_attn.q_proj"},
       {"attn_k", "self_attn.k_proj"},
       {"attn_v", "self_attn.v_proj"},
       {"attn_output", "self_attn.o_proj"},
       {"attn_q_norm", "self_attn.q_norm"},
       {"attn_k_norm", "self_attn.k_norm"},
       {"post_attention_norm", "post_attention_layernorm"},
       {"ffn_norm", "pre_feedforward_layernorm"},
       {"post_ffw_norm", "post_feedforward_layernorm"},
       {"ffn_gate", "mlp.gate_proj"},
       {"ffn_up", "mlp.up_proj"},
       {"ffn_down", "mlp.down_proj"}}};
  return t;
}

const NameTable& bert_names() {
  static const NameTable t{"encoder.layer.{}.",
                           {{"token_embd", "embeddings.word_embeddings"},
                            {"token_types", "embeddings.token_type_embeddings"},
                            {"position_embd", "embeddings.position_embeddings"},
                            {"token_embd_norm", "embeddings.LayerNorm"}},
                           {{"attn_q", "attention.self.query"},
                            {"attn_k", "attention.self.key"},
                            {"attn_v", "attention.self.value"},
                            {"attn_output", "attention.output.dense"},
                            {"attn_output_norm", "attention.output.LayerNorm"},
                            {"ffn_up", "intermediate.dense"},
                            {"ffn_down", "output.dense"},
                            {"layer_output_norm", "output.LayerNorm"}}};
  return t;
}

// "blk.3.attn_q.weight" -> ("attn_q", 3, "weight"); layer -1 for global tensors.
bool split_name(const std::string& name, std::string* base, int64_t* layer, std::string* kind) {
  size_t dot = name.rfind('.');
  if (dot == std::string::npos) return false;
  *kind = name.substr(dot + 1);
  std::string stem = name.substr(0, dot);
  *layer = -1;
  if (stem.rfind("blk.", 0) == 0) {
    size_t d2 = stem.find('.', 4);
    if (d2 == std::string::npos) return false;
    std::string num = stem.substr(4, d2 - 4);
    if (num.empty() || num.find_first_not_of("0123456789") != std::string::npos || num.size() > 9)
      return false;
    *layer = std::stoll(num);
    stem = stem.substr(d2 + 1);
  }
  *base = stem;
  return true;
}

std::map<std::string, WeightRef> map_names(const GgufFile& f, const NameTable& table,
                                           const std::string& arch, int64_t layers) {
  std::map<std::string, WeightRef> out;
  for (const TensorInfo& t : f.tensors) {
    std::string base, kind;
    int64_t layer;
    bool ok = split_name(t.name, &base, &layer, &kind) && (kind == "weight" || kind == "bias");
    std::string hf;
    if (ok && layer < 0 && table.global.count(base)) {
      hf = table.global.at(base) + "." + kind;
    } else if (ok && layer >= 0 && layer < layers && table.layer.count(base)) {
      hf = fmt::format(fmt::runtime(table.layer_prefix), layer) + table.layer.at(base) + "." + kind;
    } else {
      unsupported(
          f, fmt::format("tensor '{}' has no counterpart in rlx's {} model builder", t.name, arch));
    }
    out[hf] = WeightRef{t.name};
  }
  return out;
}

void reject_rope_scaling(const GgufFile& f, const Meta& m, const std::string& arch) {
  std::string type = m.text("rope.scaling.type");
  if (!type.empty() && type != "none")
    unsupported(f, fmt::format("{}.rope.scaling.type is \"{}\": rope scaling is not supported by "
                               "rlx's {} builder",
                               arch, type, arch));
  if (f.tensor("rope_freqs.weight"))
    unsupported(f,
                "tensor 'rope_freqs.weight' (llama 3.1 rope frequency factors) is not supported");
}

void common_decoder(const GgufFile& f, const Meta& m, frontends::TransformerConfig& c) {
  c.hidden = m.integer("embedding_length");
  c.layers = m.integer("block_count");
  c.heads = m.integer("attention.head_count");
  c.kv_heads = m.opt_int("attention.head_count_kv").value_or(c.heads);
  if (c.heads <= 0) m.fail(c.arch + ".attention.head_count", "must be positive");
  c.head_dim = m.opt_int("attention.key_length").value_or(c.hidden / c.heads);
  c.intermediate = m.integer("feed_forward_length");
  c.max_positions = m.opt_int("context_length").value_or(0);
  c.norm_eps = m.number("attention.layer_norm_rms_epsilon");
  c.vocab = rows_of(f, "token_embd.weight");
  int64_t rot = m.opt_int("rope.dimension_count").value_or(c.head_dim);
  if (rot != c.head_dim)
    m.fail(c.arch + ".rope.dimension_count",
           fmt::format("rotary embedding over {} of {} head dims (partial rotary) is not supported",
                       rot, c.head_dim));
}

}  // namespace

ArchMapping map_architecture(const GgufFile& f) {
  const Value* a = f.find("general.architecture");
  if (!a || !a->as_string()) unsupported(f, "metadata key 'general.architecture' is missing");
  const std::string arch = *a->as_string();
  Meta m(f, arch);
  ArchMapping out;
  frontends::TransformerConfig& c = out.config;
  c.arch = arch;
  c.source = "GGUF file " + f.source;
  if (std::optional<TokenizerSpec> tok = tokenizer_spec(f)) {
    c.bos = tok->bos, c.eos = tok->eos, c.pad = tok->pad;
  }

  if (arch == "llama") {
    common_decoder(f, m, c);
    c.rope_theta = m.opt_float("rope.freq_base").value_or(10000.0);
    c.hidden_act = "silu";
    reject_rope_scaling(f, m, arch);
    out.weights = map_names(f, llama_names(), arch, c.layers);
    for (auto& [hf, ref] : out.weights) {
      if (hf.ends_with("self_attn.q_proj.weight") || hf.ends_with("self_attn.q_proj.bias"))
        ref.transform = Transform::kUnpermuteRope, ref.heads = c.heads;
      if (hf.ends_with("self_attn.k_proj.weight") || hf.ends_with("self_attn.k_proj.bias"))
        ref.transform = Transform::kUnpermuteRope, ref.heads = c.kv_heads;
    }
  } else if (arch == "gemma3") {
    common_decoder(f, m, c);
    c.rope_theta = m.opt_float("rope.freq_base").value_or(1000000.0);
    c.rope_local_theta = 10000.0;  // llama.cpp's fixed base for gemma3's sliding-window layers
    c.sliding_window = m.opt_int("attention.sliding_window").value_or(0);
    c.sliding_window_pattern = 6;  // every sixth layer is global (llama.cpp hard-codes it too)
    c.query_pre_attn_scalar = static_cast<double>(c.head_dim);
    c.hidden_act = "gelu_tanh";
    reject_rope_scaling(f, m, arch);
    out.weights = map_names(f, gemma3_names(), arch, c.layers);
    // llama.cpp's converter stores gemma norms as 1 + w; the builder scales by the stored value
    // as is, which keeps every bit (subtracting 1 in f32 would round small weights).
    c.norm_adds_one = false;
  } else if (arch == "bert") {
    c.hidden = m.integer("embedding_length");
    c.layers = m.integer("block_count");
    c.heads = m.integer("attention.head_count");
    c.kv_heads = c.heads;
    if (c.heads <= 0) m.fail("bert.attention.head_count", "must be positive");
    c.head_dim = c.hidden / c.heads;
    c.intermediate = m.integer("feed_forward_length");
    c.max_positions = m.integer("context_length");
    c.norm_eps = m.number("attention.layer_norm_epsilon");
    c.vocab = rows_of(f, "token_embd.weight");
    c.type_vocab = rows_of(f, "token_types.weight");
    c.hidden_act = "gelu";
    out.weights = map_names(f, bert_names(), arch, c.layers);
  } else {
    unsupported(f, fmt::format("general.architecture \"{}\" has no model builder in rlx (llama, "
                               "gemma3 and bert do)",
                               arch));
  }
  c.tie_embeddings = !f.tensor("output.weight");
  return out;
}

}  // namespace rlx::gguf
