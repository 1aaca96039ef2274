// `rlx info` on each kind of model rlx reads (Hugging Face folders, GGUF, ONNX, rten, IR text),
// checked against facts that do not come from rlx: the fixtures' config.json, parameter counts
// worked out from it by hand, the files' documented provenance.
#include "cli_fixture.h"
#include "llama_files.h"

namespace rlx::cli {
namespace {

const fs::path kFixtures = RLX_FIXTURES_DIR;

json::Value read_json(const fs::path& path) {
  std::ifstream in(path);
  return json::parse(
      std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
}

int64_t integer(const json::Value* v) {
  if (!v || !v->as_number() || !v->as_number()->as_i64()) {
    ADD_FAILURE() << "not an integer";
    return -1;
  }
  return *v->as_number()->as_i64();
}

int64_t config_int(const json::Value& config, const char* key) {
  return integer(config.find(key));
}

// A shape from --json: numbers for sizes, strings for symbols, written "B,S,2048".
std::string shape_of(const json::Value* typed) {
  std::string out;
  const json::Value* shape = typed ? typed->find("shape") : nullptr;
  if (!shape || !shape->as_array()) return "<no shape>";
  for (const json::Value& d : *shape->as_array())
    out += (out.empty() ? "" : ",") + (d.as_string() ? *d.as_string() : d.as_number()->raw);
  return out;
}

const json::Value* graph_named(const json::Value& doc, const std::string& name) {
  return find_named(*doc.find("graphs"), name);
}

const json::Value* weights_of(const json::Value& doc, const char* list, const char* key,
                              const std::string& kind) {
  const json::Value* groups = doc.find("parameters")->find(list);
  for (const json::Value& g : *groups->as_array())
    if (str(g.find(key)) == kind) return &g;
  return nullptr;
}

// The limit on the values (not a dim's size) of `input`.
const json::Value* value_limit(const json::Value& doc, const std::string& input) {
  for (const json::Value& l : *doc.find("input_limits")->as_array())
    if (str(l.find("input")) == input && l.find("dim")->is_null()) return &l;
  return nullptr;
}

class InfoCliTest : public CliTest {
 protected:
  // `rlx info MODEL --json`; the text it printed stays in out_ for failure messages.
  json::Value info_json(const fs::path& model, std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"info", model.string(), "--json"};
    args.insert(args.end(), more.begin(), more.end());
    ProcessResult r = rlx(args);
    EXPECT_EQ(r.exit_code, 0) << dump(r);
    EXPECT_TRUE(r.err.empty()) << dump(r);
    out_ = r.out;
    return parse_json(r);
  }
  std::string out_;
};

TEST_F(InfoCliTest, HelpSaysWhatItShows) {
  ProcessResult r = rlx({"info", "--help"});
  EXPECT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.out, StartsWith("usage: rlx info MODEL")) << dump(r);
  EXPECT_THAT(r.out, HasSubstr("--json")) << dump(r);
  EXPECT_THAT(r.out, HasSubstr("--bind")) << dump(r);
  ProcessResult top = rlx({"--help"});
  EXPECT_THAT(top.out, HasSubstr("  info ")) << dump(top);
}

TEST_F(InfoCliTest, Qwen3FolderAgreesWithItsConfig) {
  const fs::path model = kFixtures / "qwen3-tiny";
  const json::Value config = read_json(model / "config.json");
  json::Value doc = info_json(model);
  EXPECT_EQ(str(doc.find("importer")), "safetensors");
  EXPECT_THAT(str(doc.find("format")), HasSubstr("Hugging Face folder"));
  EXPECT_EQ(str(doc.find("architecture")), "qwen3");
  const json::Value* details = doc.find("architecture_details");
  EXPECT_EQ(str(details->find("model_type")), str(config.find("model_type")));
  EXPECT_EQ(str(details->find("architectures")),
            str(&(*config.find("architectures")->as_array())[0]));

  const int64_t vocab = config_int(config, "vocab_size"),
                hidden = config_int(config, "hidden_size"),
                layers = config_int(config, "num_hidden_layers"),
                heads = config_int(config, "num_attention_heads"),
                kv_heads = config_int(config, "num_key_value_heads"),
                head_dim = config_int(config, "head_dim"),
                inter = config_int(config, "intermediate_size");
  // The graphs of docs/models.md, with the sizes config.json gives.
  ASSERT_EQ(doc.find("graphs")->as_array()->size(), 3u) << out_;
  const json::Value* main = graph_named(doc, "main");
  ASSERT_TRUE(main);
  const json::Value* ids = find_named(*main->find("inputs"), "input_ids");
  EXPECT_EQ(str(ids->find("dtype")), "i64");
  EXPECT_EQ(shape_of(ids), "B,S");
  EXPECT_EQ(shape_of(find_named(*main->find("outputs"), "logits")), fmt::format("B,S,{}", vocab));
  const json::Value* decode = graph_named(doc, "decode");
  ASSERT_TRUE(decode);
  EXPECT_EQ(decode->find("inputs")->as_array()->size(), static_cast<size_t>(2 + 2 * layers));
  EXPECT_EQ(shape_of(find_named(*decode->find("inputs"), "position")), "1");
  EXPECT_EQ(shape_of(find_named(*decode->find("inputs"), fmt::format("past_value.{}", layers - 1))),
            fmt::format("B,{},T,{}", kv_heads, head_dim));
  const json::Value* prefill = graph_named(doc, "prefill");
  ASSERT_TRUE(prefill);
  EXPECT_EQ(shape_of(find_named(*prefill->find("outputs"), "present_key.0")),
            fmt::format("B,{},S,{}", kv_heads, head_dim));

  // B and S size with --batch and --seq (as bench takes them), T, the cache, with --bind.
  const json::Value* symbols = doc.find("symbols");
  EXPECT_THAT(str(find_named(*symbols, "B")->find("bind")), HasSubstr("--batch"));
  EXPECT_THAT(str(find_named(*symbols, "S")->find("bind")), HasSubstr("--seq"));
  EXPECT_EQ(str(find_named(*symbols, "T")->find("bind")), "--bind T=N");
  EXPECT_EQ(str(find_named(*symbols, "T")->find("meaning")), "KV-cache capacity");

  // Tied embeddings (tie_word_embeddings: true): no lm_head. Per layer q, k, v, o, the MLP's
  // three matrices, q/k norms of head_dim and two RMSNorms; then the final norm.
  ASSERT_TRUE(config.find("tie_word_embeddings")->as_bool() &&
              *config.find("tie_word_embeddings")->as_bool());
  const int64_t per_layer = hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim +
                            heads * head_dim * hidden + 3 * hidden * inter + 2 * head_dim +
                            2 * hidden;
  const int64_t params = vocab * hidden + layers * per_layer + hidden;
  EXPECT_EQ(params, 656128);  // the sum of the shapes in model.safetensors' header, as a check
  const json::Value* p = doc.find("parameters");
  EXPECT_EQ(integer(p->find("count")), params) << out_;
  EXPECT_EQ(integer(p->find("bytes")), 4 * params);  // config.json: "dtype": "float32"
  EXPECT_EQ(integer(weights_of(doc, "by_dtype", "dtype", "f32")->find("count")), params);

  const json::Value* limit = value_limit(doc, "input_ids");
  ASSERT_TRUE(limit) << out_;
  EXPECT_EQ(integer(limit->find("max")), vocab - 1);
  EXPECT_FALSE(*doc.find("tokenizer")->find("present")->as_bool());
}

TEST_F(InfoCliTest, Qwen3TextIsAReportAPersonCanRead) {
  ProcessResult r = rlx({"info", (kFixtures / "qwen3-tiny").string()});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.out, HasSubstr("importer      safetensors\n")) << r.out;
  EXPECT_THAT(r.out, HasSubstr("parameters    656,128 in ")) << r.out;
  EXPECT_THAT(r.out, ::testing::ContainsRegex("input_ids +i64\\[B,S\\]")) << r.out;
  // A decoder's per-layer cache is one row, not one per layer.
  EXPECT_THAT(r.out, ::testing::ContainsRegex("past_key\\.\\{0\\.\\.1\\} +f32\\[B,2,T,32\\]"))
      << r.out;
  EXPECT_THAT(r.out, ::testing::ContainsRegex("T +KV-cache capacity +--bind T=N +decode")) << r.out;
  EXPECT_THAT(r.out, HasSubstr("values 0 to 2047")) << r.out;
}

TEST_F(InfoCliTest, F16BertCountsHalfPrecisionBytes) {
  const fs::path model = kFixtures / "minilm-l2-f16";
  const json::Value config = read_json(model / "config.json");
  json::Value doc = info_json(model);
  EXPECT_EQ(str(doc.find("architecture")), "bert");
  const int64_t v = config_int(config, "vocab_size"), h = config_int(config, "hidden_size"),
                l = config_int(config, "num_hidden_layers"),
                i = config_int(config, "intermediate_size"),
                pos = config_int(config, "max_position_embeddings"),
                types = config_int(config, "type_vocab_size");
  // Embeddings (words, positions, token types, LayerNorm); per layer q, k, v, o with biases,
  // two LayerNorms, the MLP's two matrices with biases. BertModel's pooler is not in the file.
  const int64_t per_layer = 4 * (h * h + h) + 2 * 2 * h + (h * i + i) + (i * h + h);
  const int64_t params = (v + pos + types) * h + 2 * h + l * per_layer;
  const json::Value* f16 = weights_of(doc, "by_dtype", "dtype", "f16");
  ASSERT_TRUE(f16) << out_;
  EXPECT_EQ(integer(f16->find("count")), params);
  EXPECT_EQ(integer(f16->find("bytes")), 2 * params);
  const json::Value* main = graph_named(doc, "main");
  for (const char* name : {"input_ids", "attention_mask", "token_type_ids"})
    EXPECT_EQ(shape_of(find_named(*main->find("inputs"), name)), "B,S") << name;
  EXPECT_EQ(shape_of(find_named(*main->find("outputs"), "sentence_embedding")),
            fmt::format("B,{}", h));
}

TEST_F(InfoCliTest, LlamaHasItsUntiedHead) {
  const fs::path model = kFixtures / "llama-tiny";
  const json::Value config = read_json(model / "config.json");
  json::Value doc = info_json(model);
  EXPECT_EQ(str(doc.find("architecture")), "llama");
  EXPECT_EQ(str(doc.find("architecture_details")->find("architectures")), "LlamaForCausalLM");
  EXPECT_TRUE(graph_named(doc, "prefill") && graph_named(doc, "decode"));
  // 491,232: the sum of model.safetensors' shapes, lm_head.weight (vocab x hidden) included.
  EXPECT_EQ(integer(doc.find("parameters")->find("count")), 491232);
  EXPECT_GT(491232, config_int(config, "vocab_size") * config_int(config, "hidden_size") * 2);
}

TEST_F(InfoCliTest, OnnxNamesProducerAndOpset) {
  json::Value doc = info_json(kFixtures / "bert-tiny-onnx" / "model.onnx");
  EXPECT_EQ(str(doc.find("importer")), "onnx");
  EXPECT_THAT(str(doc.find("format")), StartsWith("ONNX"));
  const json::Value* details = doc.find("architecture_details");
  EXPECT_EQ(str(details->find("opset")), "17");  // tests/data/fixtures/README.md
  EXPECT_THAT(str(details->find("producer")), HasSubstr("pytorch"));
  const json::Value* main = graph_named(doc, "main");
  ASSERT_TRUE(main);
  EXPECT_TRUE(find_named(*main->find("inputs"), "input_ids")) << out_;
  EXPECT_GT(integer(doc.find("parameters")->find("count")), 0);
}

// A two-layer llama laid out like a Q4_K_M file (tests/frontends/gguf/llama_files.h): hidden
// 256, ff 512, vocabulary 48, 4 heads of 64 and 2 kv heads; Q4_K matrices with Q6_K for attn_v
// and ffn_down, a Q4_K embedding table the head shares, f32 norms and biases.
TEST_F(InfoCliTest, GgufBlockWeightsAreCountedByFormat) {
  const fs::path model = dir_ / "q4k.gguf";
  std::ofstream(model, std::ios::binary) << gguf::test::q4_k_llama_file();
  json::Value doc = info_json(model);
  EXPECT_EQ(str(doc.find("importer")), "gguf");
  EXPECT_EQ(str(doc.find("format")), "GGUF v3");
  EXPECT_EQ(str(doc.find("architecture_details")->find("general.architecture")), "llama");
  const int64_t h = 256, ff = 512, vocab = 48, kv = 2 * 64, layers = 2;
  // Q4_K: 256 weights in 144 bytes; Q6_K: 256 in 210 (ggml's block sizes).
  const int64_t q4k = vocab * h + layers * (h * h + h * kv + h * h + 2 * h * ff);
  const int64_t q6k = layers * (h * kv + ff * h);
  const int64_t f32 =
      layers * (2 * h + kv + h) + h;  // two norms and two biases a layer; the last norm
  const json::Value* g = weights_of(doc, "quantized", "qtype", "q4_k");
  ASSERT_TRUE(g) << out_;
  EXPECT_EQ(integer(g->find("count")), q4k);
  EXPECT_EQ(integer(g->find("bytes")), q4k / 256 * 144);
  EXPECT_EQ(integer(g->find("tensors")), 1 + layers * 5);  // the table is counted once
  g = weights_of(doc, "quantized", "qtype", "q6_k");
  ASSERT_TRUE(g) << out_;
  EXPECT_EQ(integer(g->find("count")), q6k);
  EXPECT_EQ(integer(g->find("bytes")), q6k / 256 * 210);
  g = weights_of(doc, "by_dtype", "dtype", "f32");
  ASSERT_TRUE(g) << out_;
  EXPECT_EQ(integer(g->find("count")), f32);
  EXPECT_EQ(integer(doc.find("parameters")->find("count")), q4k + q6k + f32);
  EXPECT_EQ(integer(doc.find("parameters")->find("bytes")),
            q4k / 256 * 144 + q6k / 256 * 210 + 4 * f32);

  ProcessResult r = rlx({"info", (fs::path(RLX_GGUF_DIR) / "llama-2-tiny-random.gguf").string()});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.out, HasSubstr("general.architecture llama")) << r.out;
  EXPECT_THAT(r.out, ::testing::ContainsRegex("tokenizer +spm, 32,000 tokens")) << r.out;
  EXPECT_THAT(r.out, ::testing::ContainsRegex("f16 +[0-9,]+ +[0-9]+ tensors")) << r.out;
}

TEST_F(InfoCliTest, RtenTakesBindAndSaysTheDimIsFixed) {
  const fs::path model = fs::path(RLX_RTEN_DIR) / "silero_vad.rten";
  json::Value doc = info_json(model, {"--bind", "sequence=512"});
  EXPECT_EQ(str(doc.find("importer")), "rten");
  EXPECT_EQ(str(doc.find("format")), "RTen (format version 2)");  // tests/data/rten/README.md
  EXPECT_EQ(str(doc.find("fixed_dims")->find("sequence")), "512");
  const json::Value* main = graph_named(doc, "main");
  ASSERT_TRUE(main);
  for (const char* name : {"input", "sr", "h", "c"})
    EXPECT_TRUE(find_named(*main->find("inputs"), name)) << name << "\n" << out_;
}

TEST_F(InfoCliTest, IrTextCountsItsDeclaredParams) {
  json::Value doc = info_json(fs::path(RLX_MODELS_DIR) / "tiny-gpt" / "model.rlx");
  EXPECT_TRUE(doc.find("importer")->is_null());
  EXPECT_EQ(str(doc.find("format")), "rlx IR text");
  // params(...) of model.rlx: embed 64x32, ln1 2x32, wq wk wv wo 4x32x32, ln2 2x32, w1 64x32,
  // b1 64, w2 32x64, b2 32, lnf 2x32.
  const int64_t params =
      64 * 32 + 2 * 32 + 4 * 32 * 32 + 2 * 32 + 64 * 32 + 64 + 32 * 64 + 32 + 2 * 32;
  EXPECT_EQ(integer(doc.find("parameters")->find("count")), params);
  const json::Value* main = graph_named(doc, "main");
  EXPECT_EQ(shape_of(find_named(*main->find("inputs"), "ids")), "S");
  EXPECT_THAT(str(find_named(*doc.find("symbols"), "S")->find("bind")), HasSubstr("--seq"));
}

TEST_F(InfoCliTest, AMissingModelIsAUserError) {
  ProcessResult r = rlx({"info", (dir_ / "absent").string()});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("does not exist")) << dump(r);
}

}  // namespace
}  // namespace rlx::cli
