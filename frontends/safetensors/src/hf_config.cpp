#include "hf_config.h"

#include <fmt/format.h>

#include "json_file.h"
#include "rlx/core/error.h"

namespace rlx::frontends {

namespace fs = std::filesystem;

namespace {

// Typed access to one config file; every error names the file and the key.
class ConfigFile {
 public:
  ConfigFile(fs::path path, json::Value root) : path_(std::move(path)), root_(std::move(root)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw_user_error(fmt::format("{}: '{}' {}", path_.string(), key, what));
  }
  // Absent and null read the same: transformers writes null for "not set".
  const json::Value* find(const std::string& key) const {
    const json::Value* v = root_.find(key);
    return v && !v->is_null() ? v : nullptr;
  }
  bool has(const std::string& key) const { return find(key) != nullptr; }

  int64_t integer(const std::string& key) const {
    const json::Value* v = find(key);
    if (!v) fail(key, "is missing");
    return as_int(key, *v);
  }
  int64_t integer(const std::string& key, int64_t fallback) const {
    const json::Value* v = find(key);
    return v ? as_int(key, *v) : fallback;
  }
  double number(const std::string& key, double fallback) const {
    const json::Value* v = find(key);
    if (!v) return fallback;
    if (!v->as_number()) fail(key, fmt::format("must be a number, not {}", v->kind()));
    return v->as_number()->value;
  }
  bool boolean(const std::string& key, bool fallback) const {
    const json::Value* v = find(key);
    if (!v) return fallback;
    if (!v->as_bool()) fail(key, fmt::format("must be true or false, not {}", v->kind()));
    return *v->as_bool();
  }
  std::string string(const std::string& key, const std::string& fallback) const {
    const json::Value* v = find(key);
    if (!v) return fallback;
    if (!v->as_string()) fail(key, fmt::format("must be a string, not {}", v->kind()));
    return *v->as_string();
  }
  // An id or a list of ids (eos_token_id may be either).
  std::vector<int64_t> ids(const std::string& key) const {
    const json::Value* v = find(key);
    if (!v) return {};
    if (const json::Array* a = v->as_array()) {
      std::vector<int64_t> out;
      for (const json::Value& x : *a) out.push_back(as_int(key, x));
      return out;
    }
    return {as_int(key, *v)};
  }
  const fs::path& path() const { return path_; }

 private:
  int64_t as_int(const std::string& key, const json::Value& v) const {
    const json::Number* n = v.as_number();
    std::optional<int64_t> x = n && n->is_integer() ? n->as_i64() : std::nullopt;
    if (!x)
      fail(key, fmt::format("must be an integer, not {}", n ? n->raw : std::string(v.kind())));
    return *x;
  }

  fs::path path_;
  json::Value root_;
};

std::string family(const ConfigFile& f) {
  std::string type = f.string("model_type", "");
  // Absent, the family comes from 'architectures'; present and empty, the file is damaged.
  if (type.empty() && f.has("model_type"))
    f.fail("model_type",
           "is empty; it names the model family: \"bert\", \"qwen3\", \"llama\" or "
           "\"gemma3_text\" for the models rlx builds (transformers writes it with the weights)");
  if (type == "bert" || type == "qwen3" || type == "llama") return type;
  if (type == "gemma3_text") return "gemma3";
  if (type == "gemma3")
    f.fail("model_type",
           "is 'gemma3', the multimodal checkpoint; rlx builds the text-only "
           "'gemma3_text' (Gemma3ForCausalLM)");
  std::string arch;
  if (const json::Value* a = f.find("architectures"); a && a->as_array() && !a->as_array()->empty())
    if (const std::string* s = (*a->as_array())[0].as_string()) arch = *s;
  if (type.empty()) {
    if (arch.rfind("Qwen3", 0) == 0 && arch.find("Moe") == std::string::npos) return "qwen3";
    if (arch.rfind("Llama", 0) == 0) return "llama";
    if (arch.rfind("Bert", 0) == 0) return "bert";
    if (arch == "Gemma3ForCausalLM") return "gemma3";
  }
  if (type.empty() && arch.empty())
    f.fail("model_type",
           "is missing, and no 'architectures' names the model class either: add \"model_type\" "
           "(rlx builds bert, qwen3, llama and gemma3_text)");
  f.fail(type.empty() ? "architectures" : "model_type",
         fmt::format("names '{}', which rlx has no model builder for (it builds bert, qwen3, "
                     "llama and gemma3_text)",
                     type.empty() ? arch : type));
}

std::string activation(const ConfigFile& f, const std::string& key, const std::string& fallback) {
  std::string act = f.string(key, fallback);
  if (act == "silu" || act == "swish") return "silu";
  if (act == "gelu") return "gelu";
  if (act == "gelu_new" || act == "gelu_pytorch_tanh" || act == "gelu_fast") return "gelu_tanh";
  f.fail(key, fmt::format("is '{}'; rlx supports silu, gelu, gelu_new, gelu_pytorch_tanh", act));
}

// One rope parameter object: its rope_theta (or `theta` unchanged); any scaling other than
// "default" changes the frequencies, which the RoPE op does not do.
double rope_params(const ConfigFile& f, const std::string& key, const json::Value& p,
                   double theta) {
  if (!p.as_object()) f.fail(key, fmt::format("must be an object, not {}", p.kind()));
  std::string type = "default";
  for (const char* tk : {"rope_type", "type"})
    if (const json::Value* t = p.find(tk); t && t->as_string()) type = *t->as_string();
  if (type != "default")
    f.fail(key, fmt::format("asks for rope_type '{}'; rlx implements the default rotary "
                            "embedding only",
                            type));
  if (const json::Value* t = p.find("rope_theta"); t && t->as_number())
    theta = t->as_number()->value;
  return theta;
}

// rope_theta lives at the top level (transformers < 5) or in rope_parameters (>= 5), which
// gemma3 splits per layer kind ({"full_attention": {...}, "sliding_attention": {...}}).
struct RopeBases {
  double global = 10000.0, local = 10000.0;
};
RopeBases rope_bases(const ConfigFile& f, double global, double local) {
  RopeBases r{f.number("rope_theta", global), f.number("rope_local_base_freq", local)};
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    const json::Value* p = f.find(key);
    if (!p) continue;
    const json::Value* full = p->find("full_attention");
    const json::Value* slide = p->find("sliding_attention");
    if (full || slide) {
      if (full) r.global = rope_params(f, std::string(key) + ".full_attention", *full, r.global);
      if (slide) r.local = rope_params(f, std::string(key) + ".sliding_attention", *slide, r.local);
    } else {
      r.global = rope_params(f, key, *p, r.global);
    }
  }
  return r;
}

void check_full_attention(const ConfigFile& f, int64_t layers) {
  if (f.boolean("use_sliding_window", false))
    f.fail("use_sliding_window", "is true; rlx's qwen3 and llama builders use full attention only");
  const json::Value* lt = f.find("layer_types");
  if (lt && !lt->as_array()) f.fail("layer_types", "must be an array of strings");
  // transformers lists one entry per layer; a list of another length describes another model.
  if (lt && static_cast<int64_t>(lt->as_array()->size()) != layers)
    f.fail("layer_types", fmt::format("lists {} layers, num_hidden_layers is {}",
                                      lt->as_array()->size(), layers));
  if (lt)
    for (const json::Value& t : *lt->as_array())
      if (!t.as_string() || *t.as_string() != "full_attention")
        f.fail("layer_types",
               "lists a layer that is not 'full_attention'; rlx's qwen3 and llama "
               "builders use full attention only");
}

// Gemma 3 text models: GeGLU, sandwich norms with (1 + w) scales, q/k norms, a query scale of
// its own, sliding-window layers with their own RoPE base.
void read_gemma3(const ConfigFile& f, TransformerConfig& c) {
  std::string key = f.has("hidden_activation") ? "hidden_activation" : "hidden_act";
  c.hidden_act = activation(f, key, "gelu_pytorch_tanh");
  RopeBases bases = rope_bases(f, 1000000.0, 10000.0);
  c.rope_theta = bases.global;
  c.rope_local_theta = bases.local;
  c.tie_embeddings = f.boolean("tie_word_embeddings", true);
  c.query_pre_attn_scalar = f.number("query_pre_attn_scalar", static_cast<double>(c.head_dim));
  c.sliding_window = f.integer("sliding_window", 0);
  c.sliding_window_pattern = f.integer("sliding_window_pattern", 6);
  if (const json::Value* lt = f.find("layer_types")) {
    if (!lt->as_array()) f.fail("layer_types", "must be an array of strings");
    for (const json::Value& t : *lt->as_array()) {
      if (!t.as_string()) f.fail("layer_types", "must be an array of strings");
      c.layer_types.push_back(*t.as_string());
    }
  }
  for (const char* cap : {"final_logit_softcapping", "attn_logit_softcapping"})
    if (f.has(cap)) f.fail(cap, "is set; rlx's gemma3 builder has no logit soft-capping");
}

}  // namespace

TransformerConfig read_hf_config(const fs::path& folder) {
  ConfigFile f(folder / "config.json", read_json_file(folder / "config.json"));
  TransformerConfig c;
  c.arch = family(f);
  c.source = folder.string();
  c.vocab = f.integer("vocab_size");
  c.hidden = f.integer("hidden_size");
  c.layers = f.integer("num_hidden_layers");
  c.heads = f.integer("num_attention_heads");
  c.kv_heads = f.integer("num_key_value_heads", c.heads);
  if (c.heads <= 0) f.fail("num_attention_heads", fmt::format("must be positive, got {}", c.heads));
  c.head_dim = f.integer("head_dim", c.hidden / c.heads);
  c.intermediate = f.integer("intermediate_size");
  c.max_positions = f.integer("max_position_embeddings", 0);
  c.pad = f.integer("pad_token_id", -1);
  if (c.arch == "bert") {
    c.norm_eps = f.number("layer_norm_eps", 1e-12);
    c.hidden_act = activation(f, "hidden_act", "gelu");
    c.type_vocab = f.integer("type_vocab_size", 2);
    std::string pos = f.string("position_embedding_type", "absolute");
    if (pos != "absolute")
      f.fail("position_embedding_type", fmt::format("is '{}'; rlx's bert builder implements "
                                                    "'absolute' only",
                                                    pos));
    return c;
  }
  c.norm_eps = f.number("rms_norm_eps", 1e-6);
  if (c.arch == "gemma3") {
    read_gemma3(f, c);
  } else {
    c.hidden_act = activation(f, "hidden_act", "silu");
    c.rope_theta = rope_bases(f, 10000.0, 10000.0).global;
    c.tie_embeddings = f.boolean("tie_word_embeddings", false);
    check_full_attention(f, c.layers);
  }
  if (c.arch == "llama" && f.integer("pretraining_tp", 1) != 1)
    f.fail("pretraining_tp", "must be 1 (tensor-parallel slicing of the reference is not built)");

  // generate() takes its special ids from generation_config.json when the folder has one.
  std::vector<int64_t> bos = f.ids("bos_token_id"), eos = f.ids("eos_token_id");
  std::error_code ec;
  if (fs::exists(folder / "generation_config.json", ec)) {
    ConfigFile gen(folder / "generation_config.json",
                   read_json_file(folder / "generation_config.json"));
    if (gen.has("bos_token_id")) bos = gen.ids("bos_token_id");
    if (gen.has("eos_token_id")) eos = gen.ids("eos_token_id");
  }
  if (!bos.empty()) c.bos = bos[0];
  if (!eos.empty()) {
    c.eos = eos[0];
    c.extra_eos.assign(eos.begin() + 1, eos.end());
  }
  return c;
}

}  // namespace rlx::frontends
