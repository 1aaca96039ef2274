// Generated Hugging Face folders through the importer: the documented graph signatures, the
// KV-cache graphs agreeing with a full recompute, sharded == single-file checkpoints, 16-bit
// storage computed in f32, and BERT's padding mask and pooling.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

#include "hf_folder.h"
#include "model_support.h"
#include "rlx/core/error.h"
#include "rlx/core/fused_weights.h"
#include "rlx/core/safetensors.h"
#include "rlx/core/runtime.h"
#include "test_support.h"

namespace rlx::test {
namespace {

namespace fs = std::filesystem;

fs::path write_decoder(const TinyDecoder& d, const std::string& name = "model") {
  fs::path dir = fresh_dir(name);
  write_text(dir / "config.json", d.config_json());
  write_safetensors(dir / "model.safetensors", d.weights());
  return dir;
}

Tensor ids(std::vector<int64_t> v) {
  auto n = static_cast<int64_t>(v.size());
  return Tensor::from<int64_t>(DType::kI64, {1, n}, v);
}

std::string sig(const Graph& g, const std::vector<ValueId>& values) {
  std::string s;
  for (ValueId v : values) s += (s.empty() ? "" : " ") + g.values[v].name + ":" + g.type(v).str();
  return s;
}

// Row `pos` of logits [1, S, V].
std::vector<float> row(const Tensor& logits, int64_t pos) {
  int64_t v = logits.shape()[2];
  const float* p = logits.as<float>() + pos * v;
  return {p, p + v};
}

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(double(a[i]) - b[i]));
  return m;
}

TEST(HfDecoder, GraphsHaveTheDocumentedInputsAndOutputs) {
  TinyDecoder d;
  Model m = load_model(write_decoder(d));
  EXPECT_EQ(m.architecture, "llama");
  const Graph& main = m.graph("main");
  EXPECT_EQ(sig(main, main.inputs), "input_ids:i64[B,S]");
  EXPECT_EQ(sig(main, main.outputs), "logits:f32[B,S,40]");
  const Graph& prefill = m.graph("prefill");
  EXPECT_EQ(sig(prefill, prefill.inputs), "input_ids:i64[B,S]");
  EXPECT_EQ(sig(prefill, prefill.outputs),
            "logits:f32[B,1,40] present_key.0:f32[B,2,S,4] present_value.0:f32[B,2,S,4] "
            "present_key.1:f32[B,2,S,4] present_value.1:f32[B,2,S,4]");
  const Graph& decode = m.graph("decode");
  EXPECT_EQ(sig(decode, decode.inputs),
            "input_ids:i64[B,1] position:i64[1] past_key.0:f32[B,2,T,4] past_value.0:f32[B,2,T,4] "
            "past_key.1:f32[B,2,T,4] past_value.1:f32[B,2,T,4]");
  EXPECT_EQ(sig(decode, decode.outputs),
            "logits:f32[B,1,40] present_key.0:f32[B,2,T,4] present_value.0:f32[B,2,T,4] "
            "present_key.1:f32[B,2,T,4] present_value.1:f32[B,2,T,4]");
  EXPECT_EQ(m.metadata.at("eos_token_ids"), "2,3");
  EXPECT_EQ(m.metadata.at("bos_token_id"), "1");
  EXPECT_EQ(m.metadata.at("vocab_size"), "40");
}

// Two decode steps over a cache with spare capacity give the logits a full forward pass gives.
void expect_cache_consistent(const TinyDecoder& d) {
  Model m = load_model(write_decoder(d));
  Session s(cpu_target());
  CompiledModel main = s.compile(m.graph("main"));
  CompiledModel prefill = s.compile(m.graph("prefill"));
  CompiledModel decode = s.compile(m.graph("decode"));
  const std::vector<int64_t> seq = {5, 9, 17, 3, 22, 31, 8};
  const int64_t prompt = 5, capacity = 10;
  Tensor full = main.run({{"input_ids", ids(seq)}}).at("logits");

  NamedTensors out = prefill.run({{"input_ids", ids({seq.begin(), seq.begin() + prompt})}});
  // Prefill gives the last position's logits only.
  ASSERT_EQ(out.at("logits").shape(), (std::vector<int64_t>{1, 1, 40}));
  EXPECT_LE(max_diff(row(out.at("logits"), 0), row(full, prompt - 1)), 1e-5);
  NamedTensors in;
  for (int64_t l = 0; l < d.layers; ++l)
    for (const char* kind : {"key", "value"}) {
      const Tensor& p = out.at(fmt::format("present_{}.{}", kind, l));
      Tensor cache(DType::kF32, {1, d.kv_heads, capacity, d.head_dim});
      for (int64_t h = 0; h < d.kv_heads; ++h)
        for (int64_t t = 0; t < prompt; ++t)
          for (int64_t i = 0; i < d.head_dim; ++i)
            cache.as<float>()[(h * capacity + t) * d.head_dim + i] =
                p.as<float>()[(h * prompt + t) * d.head_dim + i];
      // Stale values in unused slots must not matter: the decode mask hides them.
      for (int64_t h = 0; h < d.kv_heads; ++h)
        cache.as<float>()[(h * capacity + capacity - 1) * d.head_dim] = 1e4f;
      in[fmt::format("past_{}.{}", kind, l)] = cache;
    }
  for (int64_t pos = prompt; pos < static_cast<int64_t>(seq.size()); ++pos) {
    in["input_ids"] = ids({seq[pos]});
    in["position"] = Tensor::from<int64_t>(DType::kI64, {1}, {pos});
    out = decode.run(in);
    EXPECT_LE(max_diff(row(out.at("logits"), 0), row(full, pos)), 1e-5) << "position " << pos;
    for (auto& [name, t] : out)
      if (name.rfind("present_", 0) == 0) in["past_" + name.substr(8)] = t;
  }
}

TEST(HfDecoder, DecodeWithCacheMatchesFullForwardLlama) {
  expect_cache_consistent(TinyDecoder{});
}

TEST(HfDecoder, DecodeWithCacheMatchesFullForwardQwen3Tied) {
  TinyDecoder d;
  d.model_type = "qwen3";
  d.tied = true;
  d.kv_heads = 1;
  expect_cache_consistent(d);
}

TinyDecoder tiny_gemma3(int64_t window, const std::string& layer_types) {
  TinyDecoder d;
  d.model_type = "gemma3_text";
  d.tied = true;
  d.heads = 2;
  d.kv_heads = 1;
  d.head_dim = 8;
  d.sliding_window = window;
  d.layer_types = layer_types;
  return d;
}

TEST(HfGemma3, DecodeWithCacheMatchesFullForwardAcrossTheWindow) {
  // Windows of 3 over 7 positions: prefill's [S, S] mask and decode's [1, T] mask must agree.
  expect_cache_consistent(tiny_gemma3(3, R"(["sliding_attention", "full_attention"])"));
}

TEST(HfGemma3, AWindowLongerThanTheTextIsCausalAttention) {
  Session s(cpu_target());
  Tensor x = ids({3, 1, 4, 1, 5, 9});
  auto logits = [&](const TinyDecoder& d, const std::string& name) {
    Model m = load_model(write_decoder(d, name));
    return s.compile(m.graph("main")).run({{"input_ids", x}}).at("logits");
  };
  // Equal rope bases, so only the mask differs between the two.
  TinyDecoder slide = tiny_gemma3(64, R"(["sliding_attention", "sliding_attention"])");
  TinyDecoder full = tiny_gemma3(64, R"(["full_attention", "full_attention"])");
  Tensor a = logits(slide, "slide"), b = logits(full, "full");
  EXPECT_GT(max_abs_diff(a, b), 0.0);  // rope bases differ (10000 vs 1e6): the kinds are used
  // Same base for both kinds: sliding with a long window must equal full causal attention.
  TinyDecoder slide_same = slide;
  fs::path dir = write_decoder(slide_same, "slide-same-base");
  std::string cfg = slide_same.config_json();
  cfg.replace(cfg.find("10000.0"), 7, "1000000.0");
  write_text(dir / "config.json", cfg);
  Tensor c = s.compile(load_model(dir).graph("main")).run({{"input_ids", x}}).at("logits");
  EXPECT_LE(max_abs_diff(c, b), 1e-5);
}

// A window of one: each token sees only itself, so its logits do not depend on the others.
TEST(HfGemma3, AWindowOfOneSeesOnlyTheTokenItself) {
  TinyDecoder d = tiny_gemma3(1, R"(["sliding_attention", "sliding_attention"])");
  Model m = load_model(write_decoder(d));
  CompiledModel main = Session(cpu_target()).compile(m.graph("main"));
  Tensor seq = main.run({{"input_ids", ids({7, 3, 11, 5})}}).at("logits");
  Tensor alone = main.run({{"input_ids", ids({11})}}).at("logits");
  EXPECT_LE(max_diff(row(seq, 2), row(alone, 0)), 1e-5);
}

TEST(HfDecoder, ShardedCheckpointGivesTheSameLogitsAsOneFile) {
  TinyDecoder d;
  fs::path one = write_decoder(d, "one");
  fs::path sharded = fresh_dir("sharded");
  write_text(sharded / "config.json", d.config_json());
  TensorMap a, b;
  std::string map;
  int i = 0;
  for (auto& [name, t] : d.weights()) {
    const char* file =
        i++ % 2 ? "model-00002-of-00002.safetensors" : "model-00001-of-00002.safetensors";
    (i % 2 ? a : b)[name] = t;
    map += fmt::format("{}\"{}\": \"{}\"", map.empty() ? "" : ", ", name, file);
  }
  write_safetensors(sharded / "model-00001-of-00002.safetensors", a);
  write_safetensors(sharded / "model-00002-of-00002.safetensors", b);
  write_text(sharded / "model.safetensors.index.json",
             "{\"metadata\": {\"total_size\": 0}, \"weight_map\": {" + map + "}}");
  Session s(cpu_target());
  Tensor x = ids({4, 8, 15, 16, 23});
  Tensor l1 = s.compile(load_model(one).graph("main")).run({{"input_ids", x}}).at("logits");
  Tensor l2 = s.compile(load_model(sharded).graph("main")).run({{"input_ids", x}}).at("logits");
  EXPECT_EQ(max_abs_diff(l1, l2), 0.0);
}

// The fused params of layer i (rlx/core/fused_weights.h): q, k and v; gate and up.
std::string qkv_name(int64_t i) {
  const std::string l = fmt::format("model.layers.{}.self_attn.", i);
  return fused_weight_name({l + "q_proj.weight", l + "k_proj.weight", l + "v_proj.weight"});
}
std::string gate_up_name(int64_t i) {
  const std::string l = fmt::format("model.layers.{}.mlp.", i);
  return fused_weight_name({l + "gate_proj.weight", l + "up_proj.weight"});
}

// Products of one input are one product over their weights' rows: qwen3-tiny's q, k and v (128 +
// 64 + 64 rows) and gate and up (384 + 384), the checkpoint's rows in that order, so a layer has
// four Linear products instead of seven (its logits against transformers' are checked by the
// fixture tests). A 16-bit checkpoint fuses its rows as stored, converted once.
TEST(HfDecoder, ProductsOfOneInputAreFused) {
  RLX_FIXTURE(dir, "qwen3-tiny");
  Model m = load_model(dir);
  const Graph& main = m.graph("main");
  const Tensor& qkv = main.weights.at(qkv_name(1));
  ASSERT_EQ(qkv.shape(), (std::vector<int64_t>{256, 128}));
  EXPECT_EQ(main.weights.at(gate_up_name(1)).shape(), (std::vector<int64_t>{768, 128}));
  TensorMap file = read_safetensors(dir / "model.safetensors");
  const char* rows = static_cast<const char*>(qkv.data());
  for (const char* part : {"q_proj", "k_proj", "v_proj"}) {
    const Tensor& t = file.at(fmt::format("model.layers.1.self_attn.{}.weight", part));
    EXPECT_EQ(std::memcmp(rows, t.data(), t.nbytes()), 0) << part;
    rows += t.nbytes();
  }
  int64_t products = 0;
  for (const Node& n : main.nodes) products += n.op == "Linear";
  EXPECT_EQ(products, 2 * 4 + 1);  // two layers and the head
  EXPECT_EQ(fused_weight_parts(qkv_name(1)),
            (std::vector<std::string>{"model.layers.1.self_attn.q_proj.weight",
                                      "model.layers.1.self_attn.k_proj.weight",
                                      "model.layers.1.self_attn.v_proj.weight"}));

  TinyDecoder d;
  d.dtype = DType::kF16;
  Model narrow = load_model(write_decoder(d, "f16-fused"));
  const Graph& g = narrow.graph("main");
  EXPECT_EQ(g.weights.at(qkv_name(0)).dtype(), DType::kF16);
  int64_t casts_of_qkv = 0;
  for (const Node& n : g.nodes)
    casts_of_qkv += n.op == "Cast" && g.values[n.inputs[0]].name == qkv_name(0);
  EXPECT_EQ(casts_of_qkv, 1);
}

// A tensor-parallel rank's shard (shard.h): half of qwen3-tiny's heads, MLP columns and
// vocabulary, sliced from the checkpoint, with an AllReduce after each row-parallel product (2 per
// layer) and the embedding, and an AllGather of the logits.
TEST(HfDecoder, TensorParallelShardHoldsItsShareOfTheWeights) {
  RLX_FIXTURE(dir, "qwen3-tiny");
  ImportOptions o;
  o.tensor_parallel = {1, 2};
  Model shard = load_model(dir, o);
  EXPECT_EQ(shard.metadata.at(kTensorParallelKey), "1/2");
  const Graph& main = shard.graph("main");
  auto param = [&](const std::string& name) {
    for (ValueId p : main.params)
      if (main.values[p].name == name) return main.type(p).str();
    return std::string("missing");
  };
  // 4 query heads and 2 key/value heads of 32, an MLP of 384, hidden 128: a half each (q, k and
  // v in one fused product, gate and up in another).
  const std::string qkv = qkv_name(0);
  EXPECT_EQ(param(qkv), "f32[128,128]");  // 64 + 32 + 32 rows
  EXPECT_EQ(param("model.layers.0.self_attn.o_proj.weight"), "f32[128,64]");
  EXPECT_EQ(param(gate_up_name(0)), "f32[384,128]");  // 192 + 192
  EXPECT_EQ(param("model.layers.0.mlp.down_proj.weight"), "f32[128,192]");
  // The vocabulary of 2048 too: rows 1024.. of the embedding table, which is also the head.
  EXPECT_EQ(param("model.embed_tokens.weight"), "f32[1024,128]");
  EXPECT_EQ(param("lm_head.weight"), "missing");
  int64_t reduces = 0, gathers = 0;
  for (const Node& n : main.nodes) reduces += n.op == "AllReduce", gathers += n.op == "AllGather";
  EXPECT_EQ(gathers, 1);  // the logits
  Model whole = load_model(dir);
  int64_t layers = 0;
  for (const auto& [name, w] : whole.graph("main").weights)
    layers += name.find("input_layernorm") != std::string::npos;
  EXPECT_EQ(reduces, 2 * layers + 1);  // and the embedding's
  // Rank 1 holds rows 64..127 of q_proj: the second half of the whole model's, whose fused
  // product starts with q_proj's 128 rows.
  const Tensor& part = main.weights.at(qkv);
  const Tensor& all = whole.graph("main").weights.at(qkv);
  ASSERT_EQ(part.nbytes() * 2, all.nbytes());
  const size_t q_rows = 64 * 128 * sizeof(float);
  EXPECT_EQ(std::memcmp(part.data(), static_cast<const char*>(all.data()) + q_rows, q_rows), 0);
  const Graph& decode = shard.graph("decode");
  EXPECT_NE(sig(decode, decode.inputs).find("past_key.0:f32[B,1,T,32]"), std::string::npos)
      << sig(decode, decode.inputs);
}

// Pipeline stages (pipeline.h): qwen3-tiny's two layers split over two stages. Stage 0 embeds and
// sends its hidden state to rank 1; stage 1 receives it, holds the final norm and the tied head
// (the embedding table again) and broadcasts the logits; each decode graph takes only its own
// layer's cache.
TEST(HfDecoder, PipelineStageHoldsItsLayers) {
  RLX_FIXTURE(dir, "qwen3-tiny");
  auto stage = [&](int32_t s) {
    ImportOptions o;
    o.pipeline_parallel = {s, 2};
    return load_model(dir, o);
  };
  auto ops = [](const Graph& g, const std::string& op) {
    std::vector<std::string> found;
    for (const Node& n : g.nodes)
      if (n.op == op)
        found.push_back(fmt::format("{}:{}", n.attr_int("peer", -1), n.attr_int("root", -1)));
    return found;
  };
  auto params = [](const Graph& g) {
    std::set<std::string> names;
    for (ValueId p : g.params) names.insert(g.values[p].name);
    return names;
  };
  using ::testing::ElementsAre;
  using ::testing::HasSubstr;
  using ::testing::ThrowsMessage;
  Model first = stage(0), last = stage(1);
  EXPECT_EQ(first.metadata.at(kPipelineParallelKey), "0/2");
  EXPECT_EQ(last.metadata.at(kPipelineParallelKey), "1/2");
  for (const char* name : {"main", "prefill", "decode"}) {
    const Graph &g0 = first.graph(name), &g1 = last.graph(name);
    EXPECT_THAT(ops(g0, "Send"), ElementsAre("1:-1")) << name;
    EXPECT_THAT(ops(g1, "Recv"), ElementsAre("0:-1")) << name;
    EXPECT_TRUE(ops(g0, "Recv").empty() && ops(g1, "Send").empty()) << name;
    EXPECT_THAT(ops(g0, "Broadcast"), ElementsAre("-1:1")) << name;
    EXPECT_THAT(ops(g1, "Broadcast"), ElementsAre("-1:1")) << name;
    const std::set<std::string> p0 = params(g0), p1 = params(g1);
    EXPECT_TRUE(p0.count("model.embed_tokens.weight") && p1.count("model.embed_tokens.weight"));
    EXPECT_TRUE(p0.count("model.layers.0.mlp.down_proj.weight"));
    EXPECT_FALSE(p0.count("model.layers.1.mlp.down_proj.weight") || p0.count("model.norm.weight"));
    EXPECT_TRUE(p1.count("model.layers.1.mlp.down_proj.weight") && p1.count("model.norm.weight"));
    EXPECT_FALSE(p1.count("model.layers.0.mlp.down_proj.weight"));
  }
  auto caches = [](const Graph& g) {
    std::vector<std::string> names;
    for (ValueId v : g.inputs)
      if (g.values[v].name.rfind("past_", 0) == 0) names.push_back(g.values[v].name);
    return names;
  };
  EXPECT_THAT(caches(first.graph("decode")), ElementsAre("past_key.0", "past_value.0"));
  EXPECT_THAT(caches(last.graph("decode")), ElementsAre("past_key.1", "past_value.1"));
  ImportOptions three;
  three.pipeline_parallel = {0, 3};
  EXPECT_THAT([&] { load_model(dir, three); },
              ThrowsMessage<rlx::Error>(HasSubstr("the model has 2 layers, fewer than the stages")));
}

// 16-bit weights are cast to f32 in the graph: the same values stored as f32 give the same logits.
TEST(HfDecoder, SixteenBitWeightsComputeInF32) {
  for (DType dt : {DType::kF16, DType::kBF16}) {
    TinyDecoder d;
    d.dtype = dt;
    fs::path narrow = write_decoder(d, std::string(dtype_name(dt)));
    fs::path wide = fresh_dir(std::string(dtype_name(dt)) + "-as-f32");
    write_text(wide / "config.json", d.config_json());
    TensorMap w;
    for (auto& [name, t] : d.weights()) {
      Tensor f(DType::kF32, t.shape());
      for (int64_t i = 0; i < t.numel(); ++i) f.as<float>()[i] = static_cast<float>(t.scalar_at(i));
      w[name] = f;
    }
    write_safetensors(wide / "model.safetensors", w);
    Model m = load_model(narrow);
    int casts = 0;
    for (const Node& n : m.graph("main").nodes) casts += n.op == "Cast";
    EXPECT_GT(casts, 0) << dtype_name(dt);
    Session s(cpu_target());
    Tensor x = ids({1, 2, 3, 4});
    Tensor a = s.compile(m.graph("main")).run({{"input_ids", x}}).at("logits");
    Tensor b = s.compile(load_model(wide).graph("main")).run({{"input_ids", x}}).at("logits");
    EXPECT_LE(max_abs_diff(a, b), 1e-5) << dtype_name(dt);
  }
}

NamedTensors bert_inputs(std::vector<int64_t> tokens, int64_t pad_to) {
  std::vector<int64_t> mask(tokens.size(), 1);
  tokens.resize(pad_to, 0);
  mask.resize(pad_to, 0);
  return {{"input_ids", Tensor::from<int64_t>(DType::kI64, {1, pad_to}, tokens)},
          {"attention_mask", Tensor::from<int64_t>(DType::kI64, {1, pad_to}, mask)},
          {"token_type_ids", Tensor(DType::kI64, {1, pad_to})}};
}

TEST(HfBert, PaddingDoesNotChangeTheSentenceEmbedding) {
  TinyBert cfg;
  cfg.prefix = "bert.";  // as saved by BertForMaskedLM
  fs::path dir = fresh_dir("bert");
  write_text(dir / "config.json", cfg.config_json());
  write_safetensors(dir / "model.safetensors", cfg.weights());
  Model m = load_model(dir);
  const Graph& g = m.graph("main");
  EXPECT_EQ(sig(g, g.inputs), "input_ids:i64[B,S] attention_mask:i64[B,S] token_type_ids:i64[B,S]");
  EXPECT_EQ(sig(g, g.outputs), "last_hidden_state:f32[B,S,16] sentence_embedding:f32[B,16]");
  CompiledModel c = Session(cpu_target()).compile(g);
  Tensor a = c.run(bert_inputs({2, 7, 11, 5}, 4)).at("sentence_embedding");
  Tensor b = c.run(bert_inputs({2, 7, 11, 5}, 9)).at("sentence_embedding");
  EXPECT_LE(max_abs_diff(a, b), 1e-5);
  double norm = 0;
  for (int64_t i = 0; i < a.numel(); ++i) norm += a.scalar_at(i) * a.scalar_at(i);
  EXPECT_NEAR(norm, 1.0, 1e-5);
}

TEST(HfBert, TensorFlowLayerNormNamesGiveTheSameModel) {
  Tensor out[2];
  for (bool tf : {false, true}) {
    TinyBert cfg;
    cfg.tf_norm_names = tf;
    fs::path dir = fresh_dir(tf ? "tf" : "torch");
    write_text(dir / "config.json", cfg.config_json());
    write_safetensors(dir / "model.safetensors", cfg.weights());
    out[tf] = Session(cpu_target())
                  .compile(load_model(dir).graph("main"))
                  .run(bert_inputs({2, 7, 11}, 5))
                  .at("last_hidden_state");
  }
  EXPECT_EQ(max_abs_diff(out[0], out[1]), 0.0);
}

}  // namespace
}  // namespace rlx::test
