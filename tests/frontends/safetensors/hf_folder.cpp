#include "hf_folder.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "rlx/core/half.h"

namespace rlx::test {

namespace fs = std::filesystem;

Tensor random_tensor(DType dtype, std::vector<int64_t> shape, double scale, uint64_t seed) {
  Tensor t(dtype, std::move(shape));
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    double u = static_cast<double>(s >> 11) / static_cast<double>(1ull << 53);
    auto v = static_cast<float>((2 * u - 1) * scale);
    switch (dtype) {
      case DType::kF32:
        t.as<float>()[i] = v;
        break;
      case DType::kF64:
        t.as<double>()[i] = v;
        break;
      case DType::kF16:
        t.as<uint16_t>()[i] = f32_to_f16(v);
        break;
      case DType::kBF16:
        t.as<uint16_t>()[i] = f32_to_bf16(v);
        break;
      default:
        ADD_FAILURE() << "random_tensor: unsupported dtype";
    }
  }
  return t;
}

fs::path fresh_dir(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path p =
      fs::path(::testing::TempDir()) /
      fmt::format("rlx-hf-{}-{}-{}-{}", info->test_suite_name(), info->name(), name, ::getpid());
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

std::string bert_vocab_txt() {
  return "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\nworld\n##s\n.\n";
}

std::string byte_level_tokenizer_json(const std::string& digits) {
  // GPT-2's bytes_to_unicode: printable bytes map to themselves, the rest to U+0100 onwards.
  std::vector<int> cps(256);
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    cps[b] = printable ? b : next++;
  }
  auto utf8 = [](int cp) {
    std::string s;
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return s;
  };
  auto quote = [](const std::string& s) {
    std::string q = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') q += '\\';
      q += c;
    }
    return q + "\"";
  };
  std::string vocab;
  for (int b = 0; b < 256; ++b) vocab += fmt::format("{}: {}, ", quote(utf8(cps[b])), b);
  const std::string space = utf8(cps[' ']);
  vocab += fmt::format("\"hi\": 256, {}: 257", quote(space + "hi"));
  return fmt::format(R"({{
  "added_tokens": [{{"id": 258, "content": "<|end|>", "special": true}}],
  "pre_tokenizer": {{"type": "Sequence", "pretokenizers": [
    {{"type": "Split", "pattern": {{"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{{L}}{}]?\\p{{L}}+|{}| ?[^\\s\\p{{L}}\\p{{N}}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}}, "behavior": "Isolated"}},
    {{"type": "ByteLevel", "add_prefix_space": false}}]}},
  "model": {{"type": "BPE", "vocab": {{{}}}, "merges": [["h", "i"], [{}, "hi"]]}}
}})",
                     digits, digits, vocab, quote(space));
}

std::string TinyDecoder::config_json() const {
  if (model_type == "gemma3_text")
    return fmt::format(R"({{
  "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "vocab_size": {},
  "hidden_size": {}, "num_hidden_layers": {}, "num_attention_heads": {},
  "num_key_value_heads": {}, "head_dim": {}, "intermediate_size": {},
  "hidden_activation": "gelu_pytorch_tanh", "rms_norm_eps": 1e-06, "query_pre_attn_scalar": 8,
  "sliding_window": {}, "layer_types": {}, "max_position_embeddings": 64,
  "rope_parameters": {{"full_attention": {{"rope_type": "default", "rope_theta": 1000000.0}},
                       "sliding_attention": {{"rope_type": "default", "rope_theta": 10000.0}}}},
  "final_logit_softcapping": null, "attn_logit_softcapping": null,
  "tie_word_embeddings": true, "bos_token_id": 2, "eos_token_id": [1, 106]
}})",
                       vocab, hidden, layers, heads, kv_heads, head_dim, intermediate,
                       sliding_window, layer_types.empty() ? "null" : layer_types);
  return fmt::format(R"({{
  "architectures": ["{}"], "model_type": "{}", "vocab_size": {}, "hidden_size": {},
  "num_hidden_layers": {}, "num_attention_heads": {}, "num_key_value_heads": {},
  "head_dim": {}, "intermediate_size": {}, "hidden_act": "silu", "rms_norm_eps": 1e-06,
  "max_position_embeddings": 64, "rope_theta": 10000.0, "tie_word_embeddings": {},
  "bos_token_id": 1, "eos_token_id": [2, 3]
}})",
                     model_type == "qwen3" ? "Qwen3ForCausalLM" : "LlamaForCausalLM", model_type,
                     vocab, hidden, layers, heads, kv_heads, head_dim, intermediate,
                     tied ? "true" : "false");
}

TensorMap TinyDecoder::weights() const {
  TensorMap w;
  uint64_t seed = 1;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, double scale = 0.3) {
    w[name] = random_tensor(dtype, std::move(shape), scale, seed++);
  };
  auto norm = [&](const std::string& name, int64_t n) {
    Tensor t = random_tensor(DType::kF32, {n}, 0.1, seed++);
    for (int64_t i = 0; i < n; ++i) t.as<float>()[i] += 1;
    w[name] = dtype == DType::kF32 ? t : random_tensor(dtype, {n}, 1.0, seed++);
  };
  add("model.embed_tokens.weight", {vocab, hidden}, 1.0);
  for (int64_t l = 0; l < layers; ++l) {
    std::string p = fmt::format("model.layers.{}.", l);
    norm(p + "input_layernorm.weight", hidden);
    norm(p + "post_attention_layernorm.weight", hidden);
    add(p + "self_attn.q_proj.weight", {heads * head_dim, hidden});
    add(p + "self_attn.k_proj.weight", {kv_heads * head_dim, hidden});
    add(p + "self_attn.v_proj.weight", {kv_heads * head_dim, hidden});
    add(p + "self_attn.o_proj.weight", {hidden, heads * head_dim});
    if (model_type != "llama") {
      norm(p + "self_attn.q_norm.weight", head_dim);
      norm(p + "self_attn.k_norm.weight", head_dim);
    }
    if (model_type == "gemma3_text") {
      norm(p + "pre_feedforward_layernorm.weight", hidden);
      norm(p + "post_feedforward_layernorm.weight", hidden);
    }
    add(p + "mlp.gate_proj.weight", {intermediate, hidden});
    add(p + "mlp.up_proj.weight", {intermediate, hidden});
    add(p + "mlp.down_proj.weight", {hidden, intermediate});
  }
  norm("model.norm.weight", hidden);
  if (!tied) add("lm_head.weight", {vocab, hidden});
  return w;
}

std::string TinyBert::config_json() const {
  return fmt::format(R"({{
  "architectures": ["BertModel"], "model_type": "bert", "vocab_size": {}, "hidden_size": {},
  "num_hidden_layers": {}, "num_attention_heads": {}, "intermediate_size": {},
  "hidden_act": "gelu", "layer_norm_eps": 1e-12, "max_position_embeddings": {},
  "type_vocab_size": 2, "pad_token_id": 0
}})",
                     vocab, hidden, layers, heads, intermediate, positions);
}

TensorMap TinyBert::weights() const {
  TensorMap w;
  uint64_t seed = 100;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, double scale = 0.3) {
    w[prefix + name] = random_tensor(dtype, std::move(shape), scale, seed++);
  };
  auto norm = [&](const std::string& name) {
    add(name + (tf_norm_names ? ".gamma" : ".weight"), {hidden}, 1.0);
    add(name + (tf_norm_names ? ".beta" : ".bias"), {hidden}, 0.1);
  };
  add("embeddings.word_embeddings.weight", {vocab, hidden}, 1.0);
  add("embeddings.position_embeddings.weight", {positions, hidden}, 1.0);
  add("embeddings.token_type_embeddings.weight", {2, hidden}, 1.0);
  norm("embeddings.LayerNorm");
  for (int64_t l = 0; l < layers; ++l) {
    std::string p = fmt::format("encoder.layer.{}.", l);
    for (const char* n : {"attention.self.query", "attention.self.key", "attention.self.value",
                          "attention.output.dense"}) {
      add(p + n + ".weight", {hidden, hidden});
      add(p + n + ".bias", {hidden}, 0.1);
    }
    norm(p + "attention.output.LayerNorm");
    add(p + "intermediate.dense.weight", {intermediate, hidden});
    add(p + "intermediate.dense.bias", {intermediate}, 0.1);
    add(p + "output.dense.weight", {hidden, intermediate});
    add(p + "output.dense.bias", {hidden}, 0.1);
    norm(p + "output.LayerNorm");
  }
  return w;
}

}  // namespace rlx::test
