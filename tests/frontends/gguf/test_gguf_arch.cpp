// Architecture mapping on small GGUF files built here: metadata -> TransformerConfig, tensor
// names -> Hugging Face names, and the weights the builders get (quantized ones still quantized,
// llama q/k rows un-permuted, gemma norms shifted back).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>

#include "gguf_model.h"
#include "gguf_writer.h"
#include "rlx/core/error.h"
#include "rlx/core/half.h"

namespace rlx::gguf {
namespace {

using test::Bytes;

struct TensorSpec {
  std::string name;
  std::vector<int64_t> ne;
  uint32_t type;
  std::string data;
};

struct KV {
  std::string key;
  uint32_t type;      // 4 u32, 6 f32, 8 string
  std::string value;  // u32/f32 as decimal text
};

// A file with the given metadata and tensors (alignment 32).
Bytes build(const std::vector<KV>& kvs, const std::vector<TensorSpec>& tensors) {
  Bytes b = test::header(3, static_cast<int64_t>(tensors.size()), static_cast<int64_t>(kvs.size()));
  for (const KV& kv : kvs) {
    b.str(kv.key).u32(kv.type);
    if (kv.type == 4)
      b.u32(static_cast<uint32_t>(std::stoul(kv.value)));
    else if (kv.type == 6)
      b.f32(std::stof(kv.value));
    else
      b.str(kv.value);
  }
  uint64_t offset = 0;
  for (const TensorSpec& t : tensors) {
    test::tensor_info(b, t.name, t.ne, t.type, offset);
    offset += (t.data.size() + 31) / 32 * 32;
  }
  b.pad_to(32);
  for (const TensorSpec& t : tensors) b.raw(t.data).pad_to(32);
  return b;
}

std::string f32_data(std::vector<float> v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

// Q8_0 rows of 32 elements: row r is all (r + 1) with d = 1.
std::string q8_rows(int rows) {
  std::string s;
  for (int r = 0; r < rows; ++r) {
    uint16_t d = f32_to_f16(1.0f);
    s.append(reinterpret_cast<const char*>(&d), 2);
    s.append(32, static_cast<char>(r + 1));
  }
  return s;
}

GgufFile parse(const Bytes& b) {
  auto* p = reinterpret_cast<const uint8_t*>(b.str().data());
  return parse_gguf({p, b.size()}, "arch.gguf");
}

std::vector<KV> llama_kv(const std::string& arch = "llama") {
  return {{"general.architecture", 8, arch},
          {arch + ".embedding_length", 4, "32"},
          {arch + ".block_count", 4, "1"},
          {arch + ".attention.head_count", 4, "2"},
          {arch + ".attention.head_count_kv", 4, "1"},
          {arch + ".feed_forward_length", 4, "64"},
          {arch + ".context_length", 4, "128"},
          {arch + ".attention.layer_norm_rms_epsilon", 6, "1e-5"},
          {arch + ".rope.freq_base", 6, "500000"}};
}

TEST(GgufArch, LlamaConfigNamesAndQuantizedWeights) {
  // attn_q: 32 rows (2 heads of 16) of 32 Q8_0 elements; attn_k: 16 rows (1 kv head).
  Bytes b = build(llama_kv(),
                  {{"token_embd.weight", {32, 10}, 8, q8_rows(10)},
                   {"blk.0.attn_q.weight", {32, 32}, 8, q8_rows(32)},
                   {"blk.0.attn_k.weight", {32, 16}, 8, q8_rows(16)},
                   {"blk.0.attn_norm.weight", {32}, 0, f32_data(std::vector<float>(32, 2.f))}});
  GgufFile f = parse(b);
  ArchMapping m = map_architecture(f);
  const auto& c = m.config;
  EXPECT_EQ(c.arch, "llama");
  EXPECT_EQ(c.hidden, 32);
  EXPECT_EQ(c.layers, 1);
  EXPECT_EQ(c.heads, 2);
  EXPECT_EQ(c.kv_heads, 1);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.intermediate, 64);
  EXPECT_EQ(c.max_positions, 128);
  EXPECT_EQ(c.vocab, 10);
  EXPECT_NEAR(c.norm_eps, 1e-5, 1e-9);
  EXPECT_EQ(c.rope_theta, 500000.0);
  EXPECT_TRUE(c.tie_embeddings);  // no output.weight
  GgufWeights w(f, m.weights);
  ASSERT_TRUE(w.has("model.layers.0.self_attn.q_proj.weight"));
  ASSERT_TRUE(w.has("model.layers.0.input_layernorm.weight"));
  frontends::Weight q = w.get("model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(q.qtype, "q8_0");
  EXPECT_EQ(q.shape, (std::vector<int64_t>{32, 32}));
  ASSERT_EQ(q.raw.shape(), (std::vector<int64_t>{32, 34}));
  // Head 0's rows come back as 0,2,4,...,14 then 1,3,...,15 (the values are row + 1).
  auto value_of_row = [](const Tensor& raw, int64_t r) {
    return static_cast<int>(raw.as<int8_t>()[r * 34 + 2]) - 1;
  };
  std::vector<int> order;
  for (int r = 0; r < 32; ++r) order.push_back(value_of_row(q.raw, r));
  EXPECT_EQ(order,
            (std::vector<int>{0,  2,  4,  6,  8,  10, 12, 14, 1,  3,  5,  7,  9,  11, 13, 15,
                              16, 18, 20, 22, 24, 26, 28, 30, 17, 19, 21, 23, 25, 27, 29, 31}));
  frontends::Weight k = w.get("model.layers.0.self_attn.k_proj.weight");
  EXPECT_EQ(value_of_row(k.raw, 1), 2);  // one kv head of 16 rows
  frontends::Weight embd = w.get("model.embed_tokens.weight");
  EXPECT_EQ(value_of_row(embd.raw, 3), 3);  // no permutation elsewhere
  frontends::Weight norm = w.get("model.layers.0.input_layernorm.weight");
  EXPECT_TRUE(norm.qtype.empty());
  EXPECT_EQ(norm.dense.dtype(), DType::kF32);
  EXPECT_EQ(norm.dense.as<float>()[31], 2.f);
  EXPECT_THROW(w.get("lm_head.weight"), Error);
}

TEST(GgufArch, LlamaQueryBiasIsReorderedLikeItsRows) {
  std::vector<float> bias(32);
  for (int i = 0; i < 32; ++i) bias[i] = static_cast<float>(i);
  Bytes b = build(llama_kv(), {{"token_embd.weight", {32, 10}, 8, q8_rows(10)},
                               {"blk.0.attn_q.bias", {32}, 0, f32_data(bias)}});
  GgufFile f = parse(b);
  ArchMapping m = map_architecture(f);
  GgufWeights w(f, m.weights);
  frontends::Weight q = w.get("model.layers.0.self_attn.q_proj.bias");
  std::vector<int> order;
  for (int i = 0; i < 32; ++i) order.push_back(static_cast<int>(q.dense.as<float>()[i]));
  EXPECT_EQ(order,
            (std::vector<int>{0,  2,  4,  6,  8,  10, 12, 14, 1,  3,  5,  7,  9,  11, 13, 15,
                              16, 18, 20, 22, 24, 26, 28, 30, 17, 19, 21, 23, 25, 27, 29, 31}));
}

TEST(GgufArch, Gemma3ConfigKeepsStoredNormsAndScalesByThemAsIs) {
  std::vector<KV> kv = llama_kv("gemma3");
  kv.push_back({"gemma3.attention.sliding_window", 4, "512"});
  kv.push_back({"gemma3.attention.key_length", 4, "16"});
  Bytes b =
      build(kv, {{"token_embd.weight", {32, 10}, 8, q8_rows(10)},
                 {"blk.0.post_ffw_norm.weight", {32}, 0, f32_data(std::vector<float>(32, 1.25f))},
                 {"blk.0.attn_q_norm.weight", {16}, 0, f32_data(std::vector<float>(16, 3.f))}});
  GgufFile f = parse(b);
  ArchMapping m = map_architecture(f);
  EXPECT_EQ(m.config.arch, "gemma3");
  EXPECT_EQ(m.config.sliding_window, 512);
  EXPECT_EQ(m.config.sliding_window_pattern, 6);
  EXPECT_EQ(m.config.hidden_act, "gelu_tanh");
  EXPECT_EQ(m.config.query_pre_attn_scalar, 16.0);
  // The file stores 1 + w; the builder multiplies by the stored value, so nothing is shifted.
  EXPECT_FALSE(m.config.norm_adds_one);
  GgufWeights w(f, m.weights);
  EXPECT_EQ(w.get("model.layers.0.post_feedforward_layernorm.weight").dense.as<float>()[0], 1.25f);
  EXPECT_EQ(w.get("model.layers.0.self_attn.q_norm.weight").dense.as<float>()[15], 3.f);
}

std::string error_of(const Bytes& b) {
  try {
    GgufFile f = parse(b);
    map_architecture(f);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(GgufArch, RefusalsNameTheKeyOrTensor) {
  std::vector<TensorSpec> embd = {{"token_embd.weight", {32, 10}, 8, q8_rows(10)}};
  std::string msg = error_of(build({{"general.architecture", 8, "falcon"}}, embd));
  EXPECT_NE(msg.find("\"falcon\" has no model builder"), std::string::npos) << msg;
  std::vector<KV> kv = llama_kv();
  kv.erase(kv.begin() + 1);  // embedding_length
  msg = error_of(build(kv, embd));
  EXPECT_NE(msg.find("'llama.embedding_length': missing"), std::string::npos) << msg;
  std::vector<TensorSpec> extra = embd;
  extra.push_back({"blk.0.mystery.weight", {32}, 0, f32_data(std::vector<float>(32, 0.f))});
  msg = error_of(build(llama_kv(), extra));
  EXPECT_NE(msg.find("tensor 'blk.0.mystery.weight' has no counterpart"), std::string::npos) << msg;
  kv = llama_kv();
  kv.push_back({"llama.rope.scaling.type", 8, "yarn"});
  msg = error_of(build(kv, embd));
  EXPECT_NE(msg.find("rope scaling is not supported"), std::string::npos) << msg;
  EXPECT_NE(msg.find("arch.gguf"), std::string::npos) << msg;
}

}  // namespace
}  // namespace rlx::gguf
