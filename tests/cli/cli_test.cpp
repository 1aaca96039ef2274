// End-to-end tests of the `rlx` binary: the commands, their --json output, exit codes and
// messages, run the way a user (or a script) runs them.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "cli_fixture.h"
#include "rlx/core/json.h"
#include "rlx/core/safetensors.h"

namespace rlx::cli {
namespace {

TEST_F(CliTest, VersionNamesReleaseAndAbi) {
  ProcessResult r = rlx({"--version"});
  EXPECT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_TRUE(std::regex_match(r.out, std::regex(R"(rlx \d+\.\d+\.\d+ \(ABI \d+\.\d+\)\n)")))
      << dump(r);
}

TEST_F(CliTest, TopLevelHelpListsEveryCommand) {
  ProcessResult r = rlx({"--help"});
  EXPECT_EQ(r.exit_code, 0) << dump(r);
  for (const char* c : {"list-targets", "info", "explain", "run", "compile"})
    EXPECT_THAT(r.out, HasSubstr(c)) << dump(r);
}

TEST_F(CliTest, EveryCommandHasHelp) {
  for (const std::string c : {"list-targets", "explain", "run", "compile"}) {
    ProcessResult r = rlx({c, "--help"});
    EXPECT_EQ(r.exit_code, 0) << c << "\n" << dump(r);
    EXPECT_THAT(r.out, StartsWith("usage: rlx " + c)) << dump(r);
    EXPECT_TRUE(r.err.empty()) << dump(r);
  }
  ProcessResult r = rlx({"--list-targets", "--help"});
  EXPECT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.out, StartsWith("usage: rlx list-targets")) << dump(r);
}

TEST_F(CliTest, UnknownCommandIsAUserErrorWithAHint) {
  ProcessResult r = rlx({"frobnicate"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, StartsWith("rlx: error: unknown command 'frobnicate'\n")) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("\nhint: run `rlx --help`")) << dump(r);
  EXPECT_TRUE(r.out.empty()) << dump(r);
}

TEST_F(CliTest, UnknownOptionIsAUserErrorThatSuggestsTheRightOne) {
  ProcessResult r = rlx({"explain", "m.rlx", "--taget", "cpu"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("unknown option '--taget'")) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("did you mean --target?")) << dump(r);
}

TEST_F(CliTest, NoCommandIsAUserError) {
  ProcessResult r = rlx({});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("hint:")) << dump(r);
}

TEST_F(CliTest, MissingRequiredArgumentIsAUserError) {
  ProcessResult r = rlx({"explain"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("MODEL")) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("hint: run `rlx explain --help`")) << dump(r);
}

// Every command, with options its --help must list (the global ones come with each).
const std::vector<std::pair<std::string, std::vector<std::string>>> kCommandOptions = {
    {"list-targets", {"--json"}},
    {"info", {"--bind NAME=SIZE", "--json"}},
    {"explain",
     {"-t, --target T", "--bind NAME=SIZE", "--json", "-g, --graph NAME", "--precision MODE"}},
    {"run",
     {"-t, --target T", "-i, --inputs IN", "--input NAME=VALUES", "--input-shape NAME=2x8",
      "-o, --output OUT.safetensors", "--precision MODE"}},
    {"compile",
     {"-o, --output-dir DIR", "--bind NAME=SIZE", "-i, --inputs IN", "--input NAME=VALUES",
      "--input-shape NAME=2x8", "--timings", "--json"}},
    {"embed",
     {"--text TEXT", "--text-file FILE", "-o, --output OUT.safetensors", "--json",
      "--precision MODE"}},
    {"generate",
     {"-p, --prompt-ids IDS", "--prompt TEXT", "-n, --max-new-tokens N", "--temperature T",
      "--top-k K", "--top-p P", "--seed S", "--repetition-penalty R", "--stop STR", "--stream",
      "--json"}},
    {"chat",
     {"-t, --target T", "--system TEXT", "--chat-format NAME", "-n, --max-new-tokens N",
      "--temperature T", "--top-k K", "--top-p P", "--seed S", "--repetition-penalty R",
      "--kv-cache", "--json"}},
    {"bench",
     {"-i, --inputs IN", "--input NAME=VALUES", "-b, --batch N", "-s, --seq S", "--warmup N",
      "-n, --runs N", "--save-inputs FILE.safetensors", "--json"}},
    {"quantize",
     {"--scheme S", "-o, --output DIR", "--calibration IN.safetensors", "--method M",
      "--percentile P", "--group G", "--smooth ALPHA", "--json"}},
    {"help", {}},
};

TEST_F(CliTest, EveryCommandsHelpListsItsOptions) {
  for (const auto& [command, options] : kCommandOptions) {
    ProcessResult r = rlx({command, "--help"});
    EXPECT_EQ(r.exit_code, 0) << command << "\n" << dump(r);
    EXPECT_THAT(r.out, StartsWith("usage: rlx " + command)) << dump(r);
    EXPECT_TRUE(r.err.empty()) << dump(r);
    for (const std::string& o : options) EXPECT_THAT(r.out, HasSubstr("\n  " + o)) << dump(r);
    for (const char* o : {"--plugin-path DIR", "-v, --verbose", "-q, --quiet", "-h, --help"})
      EXPECT_THAT(r.out, HasSubstr(o)) << dump(r);
    EXPECT_EQ(rlx({"help", command}).out, r.out) << command;
  }
}

TEST_F(CliTest, MisspelledFlagNamesTheFlagTheCommandAndTheLikelyOne) {
  for (const auto& [command, options] : kCommandOptions) {
    if (command == "help") continue;
    ProcessResult r = rlx({command, "--jsno"});
    EXPECT_EQ(r.exit_code, 1) << dump(r);
    EXPECT_THAT(r.err, StartsWith("rlx: error: unknown option '--jsno' for rlx " + command + "\n"))
        << dump(r);
    EXPECT_THAT(r.err, HasSubstr("hint: did you mean --json? run `rlx " + command + " --help`"))
        << dump(r);
    EXPECT_TRUE(r.out.empty()) << dump(r);
  }
}

// Each way a command line can be wrong is a usage error that names the option (as --help shows
// it) and points at the command's --help, before any model is read.
TEST_F(CliTest, BadOptionsAreUsageErrorsNamingTheOption) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"run", "m.rlx", "--target"}, "option --target needs a value (T)"},
      {{"run", "m.rlx", "-t", "cpu", "--target", "cpu"}, "option --target is given more than once"},
      {{"explain", "m.rlx", "-t", "cpu", "--json=yes"}, "option --json takes no value"},
      {{"explain", "m.rlx", "extra", "-t", "cpu"}, "unexpected argument 'extra' for rlx explain"},
      {{"explain", "m.rlx", "-x"}, "unknown option '-x' for rlx explain"},
      {{"compile", "m.rlx", "-t", "cpu"}, "rlx compile needs -o, --output-dir DIR"},
      {{"generate", "-t", "cpu"}, "rlx generate needs MODEL"},
      {{"generate", "m", "-t", "cpu", "-n", "many"},
       "--max-new-tokens: 'many' is not a non-negative integer"},
      {{"bench", "m", "-t", "cpu", "--batch", "0"}, "--batch: '0' is not an integer >= 1"},
      {{"--frobnicate", "run"}, "unknown option '--frobnicate'"},
      {{"compile", "m.rlx", "-t", "cpu", "-o", "d", "--timings", "--timings"},
       "option --timings is given more than once"},
      {{"generate", "m", "-t", "cpu", "-p", "1", "--ignore-eos=yes"},
       "option --ignore-eos takes no value"},
      {{"generate", "m", "-t", "cpu", "--prompt", "hi", "--prompt-ids", "1,2"},
       "give either --prompt or --prompt-ids, not both"},
      {{"generate", "m", "-t", "cpu", "--prompt", ""},
       "--prompt is empty: give the text to continue"},
      {{"generate", "m", "-t", "cpu"}, "give the prompt: --prompt-ids 1,2,3 or --prompt TEXT"},
      {{"embed", "m", "-t", "cpu"}, "give either --inputs IN.safetensors or --text/--text-file"},
  };
  for (const auto& [args, message] : cases) {
    ProcessResult r = rlx(args);
    EXPECT_EQ(r.exit_code, 1) << message << "\n" << dump(r);
    EXPECT_THAT(r.err, StartsWith("rlx: error: " + message + "\n")) << dump(r);
    EXPECT_THAT(r.err, HasSubstr("\nhint: run `rlx ")) << dump(r);
    EXPECT_TRUE(r.out.empty()) << dump(r);
  }
}

TEST_F(CliTest, ListTargetsJsonListsCpuAvailable) {
  ProcessResult r = rlx({"--list-targets", "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  json::Value doc = parse_json(r);
  ASSERT_TRUE(doc.as_object()) << dump(r);
  // Exactly these keys, in this order, without -v.
  std::vector<std::string> keys;
  for (const auto& [k, v] : *doc.as_object()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"targets", "importers", "problems"}));
  ASSERT_TRUE(doc.find("importers") && doc.find("importers")->as_array());
  ASSERT_TRUE(doc.find("problems") && doc.find("problems")->as_array());
  const json::Value* cpu = find_named(*doc.find("targets"), "cpu");
  ASSERT_TRUE(cpu) << dump(r);
  EXPECT_EQ(str(cpu->find("status")), "available") << dump(r);
  for (const char* key : {"version", "abi", "detail"}) EXPECT_TRUE(cpu->find(key)) << key;
}

TEST_F(CliTest, ListTargetsVerboseJsonAddsPathsCoverageAndSearchDirs) {
  ProcessResult r = rlx({"list-targets", "-v", "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  json::Value doc = parse_json(r);
  ASSERT_TRUE(doc.find("search_dirs") && doc.find("search_dirs")->as_array()) << dump(r);
  const json::Value* cpu = find_named(*doc.find("targets"), "cpu");
  ASSERT_TRUE(cpu) << dump(r);
  EXPECT_THAT(str(cpu->find("manifest")), HasSubstr("cpu.toml"));
  EXPECT_THAT(str(cpu->find("library")), HasSubstr("cpu"));
  const json::Value* coverage = cpu->find("coverage");
  ASSERT_TRUE(coverage && coverage->as_object()) << dump(r);
  for (const char* key : {"native", "shared-ir", "rewritten", "illegal"})
    EXPECT_TRUE(coverage->find(key) && coverage->find(key)->as_number()) << key;
}

TEST_F(CliTest, ListTargetsTextHasTargetsAndImportersSections) {
  ProcessResult r = rlx({"--list-targets"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.out, StartsWith("targets:\n")) << dump(r);
  EXPECT_THAT(r.out, HasSubstr("target")) << dump(r);
  EXPECT_THAT(r.out, HasSubstr("\nimporters:\n")) << dump(r);
  ProcessResult v = rlx({"--list-targets", "-v"});
  ASSERT_EQ(v.exit_code, 0) << dump(v);
  EXPECT_THAT(v.out, HasSubstr("coverage  native ")) << dump(v);
  EXPECT_THAT(v.out, HasSubstr("search order:\n  1. ")) << dump(v);
  EXPECT_THAT(v.out, HasSubstr("(install prefix)")) << dump(v);
}

TEST_F(CliTest, MalformedManifestIsAProblemNotAFailure) {
  fs::path plugins = dir_ / "plugins";
  fs::create_directories(plugins);
  std::ofstream(plugins / "mangled.toml") << "[plugin\nname = = \"mangled\"\n";
  ProcessResult r = rlx({"--list-targets", "--json"}, {{"RLX_PLUGIN_PATH", plugins.string()}});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  json::Value doc = parse_json(r);
  ASSERT_TRUE(doc.find("problems") && doc.find("problems")->as_array()) << dump(r);
  bool reported = false;
  for (const json::Value& p : *doc.find("problems")->as_array()) {
    if (str(p.find("path")).ends_with("mangled.toml")) {
      reported = true;
      EXPECT_FALSE(str(p.find("message")).empty()) << dump(r);
    }
  }
  EXPECT_TRUE(reported) << dump(r);
  // The good plugins are still listed.
  EXPECT_TRUE(find_named(*doc.find("targets"), "cpu")) << dump(r);

  // The same through --plugin-path, after the command, in the text listing.
  ProcessResult t = rlx({"list-targets", "--plugin-path", plugins.string()});
  ASSERT_EQ(t.exit_code, 0) << dump(t);
  EXPECT_THAT(t.out, HasSubstr("\nproblems:\n")) << dump(t);
  EXPECT_THAT(t.out, HasSubstr("mangled.toml: ")) << dump(t);
}

TEST_F(CliTest, DisabledPluginsStillList) {
  ProcessResult r = rlx({"--list-targets", "--json"}, {{"RLX_DISABLE_PLUGINS", "1"}});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  json::Value doc = parse_json(r);
  ASSERT_TRUE(doc.find("targets") && doc.find("targets")->as_array()) << dump(r);
  EXPECT_TRUE(doc.find("targets")->as_array()->empty()) << dump(r);
}

TEST_F(CliTest, RunComputesOutputsByName) {
  fs::path model = small_model();
  fs::path in = dir_ / "in.safetensors", out = dir_ / "out.safetensors";
  write_safetensors(in, {{"x", Tensor::from<float>(DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6})},
                         {"w", Tensor::from<float>(DType::kF32, {2, 3}, {1, 1, 1, -1, 0, 0.5f})}});
  ProcessResult r = rlx({"run", model.string(), "--target", "cpu", "--inputs", in.string(),
                         "--output", out.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  TensorMap result = read_safetensors(out);
  ASSERT_EQ(result.size(), 1u);
  ASSERT_TRUE(result.count("y"));
  const Tensor& y = result.at("y");
  EXPECT_EQ(y.dtype(), DType::kF32);
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 3}));
  // (x + w) * x
  const std::vector<float> expected = {2, 6, 12, 12, 25, 39};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(y.as<float>()[i], expected[i]) << "element " << i;

  json::Value doc = parse_json(r);
  const json::Value* y_summary = find_named(*doc.find("outputs"), "y");
  ASSERT_TRUE(y_summary) << dump(r);
  EXPECT_EQ(str(y_summary->find("dtype")), "f32");
  const json::Array* shape = y_summary->find("shape")->as_array();
  ASSERT_TRUE(shape && shape->size() == 2) << dump(r);
  EXPECT_EQ((*shape)[0].as_number()->raw, "2");
  EXPECT_EQ((*shape)[1].as_number()->raw, "3");
}

// A natively claimed op (a library call rather than a generated loop) through the same path.
TEST_F(CliTest, RunMatMul) {
  fs::path model = write("mm.rlx",
                         "graph @mm(%x: f32[2,3], %w: f32[3,2]) {\n"
                         "  %y = MatMul(%x, %w) : f32[2,2]\n"
                         "  return %y\n"
                         "}\n");
  fs::path in = dir_ / "in.safetensors", out = dir_ / "out.safetensors";
  write_safetensors(in, {{"x", Tensor::from<float>(DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6})},
                         {"w", Tensor::from<float>(DType::kF32, {3, 2}, {1, 0, 0, 1, 1, -1})}});
  ProcessResult r =
      rlx({"run", model.string(), "-t", "cpu", "-i", in.string(), "-o", out.string()});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.out, HasSubstr("y f32[2,2]")) << dump(r);
  TensorMap result = read_safetensors(out);
  ASSERT_TRUE(result.count("y"));
  const Tensor& y = result.at("y");
  ASSERT_EQ(y.shape(), (std::vector<int64_t>{2, 2}));
  // [[1,2,3],[4,5,6]] x [[1,0],[0,1],[1,-1]]
  const std::vector<float> expected = {4, -1, 10, -1};
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(y.as<float>()[i], expected[i]) << "element " << i;
}

TEST_F(CliTest, RunWithAMissingInputNamesIt) {
  fs::path in = dir_ / "in.safetensors";
  write_safetensors(in, {{"x", Tensor::from<float>(DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6})}});
  ProcessResult r = rlx({"run", small_model().string(), "--target", "cpu", "--inputs", in.string(),
                         "--output", (dir_ / "out.safetensors").string()});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("input 'w' (f32[2,3]) is not in")) << dump(r);
}

TEST_F(CliTest, ExplainJsonShowsAPathForEveryNode) {
  ProcessResult r = rlx({"explain", small_model().string(), "--target", "cpu", "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  json::Value doc = parse_json(r);
  const json::Value* nodes = doc.find("nodes");
  ASSERT_TRUE(nodes && nodes->as_array()) << dump(r);
  ASSERT_EQ(nodes->as_array()->size(), 2u) << dump(r);
  for (const json::Value& n : *nodes->as_array())
    EXPECT_THAT(str(n.find("path")), ::testing::AnyOf("native", "shared-ir", "rewritten"))
        << dump(r);

  ProcessResult text = rlx({"explain", small_model().string(), "--target", "cpu"});
  ASSERT_EQ(text.exit_code, 0) << dump(text);
  EXPECT_THAT(text.out, HasSubstr("%y")) << dump(text);
  EXPECT_THAT(text.out, HasSubstr("cpu: kernels ")) << dump(text);  // compiled or interpreted
}

// Each node's result type and the graph's inputs and outputs, symbolic dims kept (docs/models.md:
// a decoder's logits are f32[B,S,vocab_size]).
TEST_F(CliTest, ExplainShowsTypesOfNodesInputsAndOutputs) {
  ProcessResult r = rlx({"explain", small_model().string(), "--target", "cpu", "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  json::Value doc = parse_json(r);
  const json::Value* x = find_named(*doc.find("inputs"), "x");
  ASSERT_TRUE(x) << dump(r);
  EXPECT_EQ(str(x->find("dtype")), "f32");
  ASSERT_TRUE(find_named(*doc.find("outputs"), "y")) << dump(r);
  for (const json::Value& n : *doc.find("nodes")->as_array()) {
    const json::Value* out = n.find("outputs");
    ASSERT_TRUE(out && out->as_array() && out->as_array()->size() == 1) << dump(r);
    const json::Array* shape = (*out->as_array())[0].find("shape")->as_array();
    ASSERT_TRUE(shape && shape->size() == 2) << dump(r);
    EXPECT_EQ((*shape)[1].as_number()->raw, "3");
  }

  const std::string qwen3 = std::string(RLX_FIXTURES_DIR) + "/qwen3-tiny";
  ProcessResult text = rlx({"explain", qwen3, "--target", "cpu"});
  ASSERT_EQ(text.exit_code, 0) << dump(text);
  EXPECT_THAT(text.out, ::testing::ContainsRegex("input +%input_ids +i64\\[B,S\\]")) << text.out;
  EXPECT_THAT(text.out, ::testing::ContainsRegex("output +%logits +f32\\[B,S,2048\\]")) << text.out;
  EXPECT_THAT(text.out, ::testing::ContainsRegex(
                            "%logits .* f32\\[B,S,2048\\] +(native|shared-ir|rewritten)"))
      << text.out;
}

TEST_F(CliTest, MissingModelIsAUserError) {
  ProcessResult r = rlx({"explain", (dir_ / "absent.rlx").string(), "--target", "cpu"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, StartsWith("rlx: error: model '")) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("absent.rlx' does not exist")) << dump(r);
}

TEST_F(CliTest, UnknownTargetIsAUserError) {
  ProcessResult r = rlx({"explain", small_model().string(), "--target", "no-such-target"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, StartsWith("rlx: error: unknown target 'no-such-target'")) << dump(r);
}

TEST_F(CliTest, MalformedModelIsAUserErrorAndVerboseSaysWhere) {
  fs::path bad = write("bad.rlx", "graph @g(%x: f32[2]) {\n  %y = Add(%x) : \n}\n");
  ProcessResult r = rlx({"explain", bad.string(), "--target", "cpu"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, StartsWith("rlx: error: ")) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("bad.rlx")) << dump(r);
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("raised at"))) << dump(r);
  ProcessResult v = rlx({"--verbose", "explain", bad.string(), "--target", "cpu"});
  EXPECT_EQ(v.exit_code, 1) << dump(v);
  EXPECT_THAT(v.err, HasSubstr("rlx: note: raised at ")) << dump(v);
}

TEST_F(CliTest, CompileWritesArtifactsAndAManifest) {
  fs::path out = dir_ / "out";
  ProcessResult r = rlx({"compile", small_model().string(), "--target", "cpu", "-o", out.string(),
                         "--timings", "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  for (const char* f : {"model.mir", "model.lir", "dispatch.json", "manifest.json"})
    EXPECT_TRUE(fs::exists(out / f)) << f;

  std::ifstream in(out / "manifest.json");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  json::Value manifest = json::parse(text);
  const json::Value* files = manifest.find("files");
  ASSERT_TRUE(files && files->as_array()) << text;
  std::vector<std::string> listed;
  for (const json::Value& f : *files->as_array()) {
    listed.push_back(str(f.find("path")));
    EXPECT_FALSE(str(f.find("kind")).empty()) << text;
    EXPECT_TRUE(fs::exists(out / str(f.find("path")))) << str(f.find("path"));
  }
  EXPECT_THAT(listed, ::testing::IsSupersetOf({"model.mir", "model.lir", "dispatch.json"}));
  // The target wrote something of its own besides our three files.
  EXPECT_GT(listed.size(), 3u) << text;
  json::parse([&] {
    std::ifstream d(out / "dispatch.json");
    return std::string((std::istreambuf_iterator<char>(d)), {});
  }());

  json::Value doc = parse_json(r);
  const json::Value* timings = doc.find("timings_ms");
  ASSERT_TRUE(timings && timings->as_object()) << dump(r);
  for (const char* stage : {"import", "dispatch+passes", "lowering", "write ir", "emit", "total"})
    EXPECT_TRUE(timings->find(stage) && timings->find(stage)->as_number()) << stage;
}

TEST_F(CliTest, CompileTextTimings) {
  ProcessResult r = rlx({"compile", small_model().string(), "--target", "cpu", "-o",
                         (dir_ / "out").string(), "--timings"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.out, HasSubstr("manifest.json")) << dump(r);
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(dispatch\+passes +[0-9.]+ ms)"))) << dump(r);
}

TEST_F(CliTest, CompileSymbolicModelNeedsBind) {
  fs::path model = write("sym.rlx",
                         "graph @sym(%x: f32[B,4]) {\n"
                         "  %y = Add(%x, %x) : f32[B,4]\n"
                         "  return %y\n"
                         "}\n");
  ProcessResult r =
      rlx({"compile", model.string(), "--target", "cpu", "-o", (dir_ / "out").string()});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("symbolic dims without a size: B")) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("hint: compiling needs every size; add --bind B=<size>")) << dump(r);

  ProcessResult wrong = rlx({"compile", model.string(), "--target", "cpu", "-o",
                             (dir_ / "out").string(), "--bind", "S=3"});
  EXPECT_EQ(wrong.exit_code, 1) << dump(wrong);
  EXPECT_THAT(wrong.err, HasSubstr("no symbolic dim 'S'")) << dump(wrong);

  ProcessResult ok = rlx({"compile", model.string(), "--target", "cpu", "-o",
                          (dir_ / "out").string(), "--bind", "B=5"});
  ASSERT_EQ(ok.exit_code, 0) << dump(ok);
  std::ifstream in(dir_ / "out" / "manifest.json");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  json::Value manifest = json::parse(text);
  const json::Value* b = manifest.find("bindings");
  ASSERT_TRUE(b && b->find("B")) << text;
  EXPECT_EQ(b->find("B")->as_number()->raw, "5");
}

// A size the user binds that makes a value larger than the machine's memory is the user's error
// naming the node, the type asked for and the binding (issue 24), not "out of memory" (rc 2).
TEST_F(CliTest, BindingLargerThanMemoryNamesTheNodeAndTheSize) {
  fs::path model = write("outer.rlx",
                         "graph @outer(%a: f32[S,1], %b: f32[1,S]) {\n"
                         "  %y = Add(%a, %b) : f32[S,S]\n"
                         "  return %y\n"
                         "}\n");
  ProcessResult r = rlx({"compile", model.string(), "--target", "cpu", "-o",
                         (dir_ / "out").string(), "--bind", "S=10000000"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  // 10^14 f32 values: 4e14 bytes = 363.8 TiB.
  EXPECT_THAT(r.err, HasSubstr("would produce f32[10000000,10000000] (with S = 10000000): "
                               "363.8 TiB, more than this machine's"))
      << dump(r);
  // Add broadcasts %a to [S,S] first; IR text gives its nodes no source name to add.
  EXPECT_THAT(r.err, HasSubstr("rlx: error: %t0 (broadcast_in_dim) would produce")) << dump(r);
  ProcessResult ok = rlx({"compile", model.string(), "--target", "cpu", "-o",
                          (dir_ / "out").string(), "--bind", "S=3"});
  EXPECT_EQ(ok.exit_code, 0) << dump(ok);
}

// One symbol bound twice is a usage error naming both, before the model is read.
TEST_F(CliTest, ADimBoundTwiceNamesBothBindings) {
  const std::vector<std::string> bind = {"--bind", "S=1", "--bind", "S=2"};
  const std::string absent = (dir_ / "absent.rlx").string();
  for (std::vector<std::string> args :
       {std::vector<std::string>{"compile", absent, "-t", "cpu", "-o", (dir_ / "out").string()},
        std::vector<std::string>{"explain", absent, "-t", "cpu"}}) {
    args.insert(args.end(), bind.begin(), bind.end());
    ProcessResult r = rlx(args);
    EXPECT_EQ(r.exit_code, 1) << dump(r);
    EXPECT_EQ(r.err,
              "rlx: error: --bind: symbol 'S' is bound twice (S=1, then S=2)\n"
              "hint: give each symbol one --bind\n")
        << dump(r);
  }
}

// The design names several targets for placement; the CLI does not place yet and says so, with
// the first name as the way out.
TEST_F(CliTest, PlacementOverSeveralTargetsIsRefusedWithTheWayOut) {
  const std::string model = small_model().string();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"explain", model, "--target", "cpu,gpu"},
        std::vector<std::string>{"run", model, "--target", "cpu,gpu", "-i",
                                 (dir_ / "in.safetensors").string(), "-o",
                                 (dir_ / "out.safetensors").string()}}) {
    ProcessResult r = rlx(args);
    EXPECT_EQ(r.exit_code, 1) << dump(r);
    EXPECT_EQ(r.err,
              "rlx: error: placement over several targets ('cpu,gpu') is not supported yet\n"
              "hint: name one target, e.g. --target cpu; `rlx --list-targets` shows them\n")
        << dump(r);
  }
}

// Exit code 2 is for failures that are not the user's: here the cpu target's C compiler rejects
// the kernels rlx generated (a plugin's unclassified failure).
TEST_F(CliTest, APluginsInternalFailureExitsWithTwo) {
  fs::path cc = write("broken-cc",
                      "#!/bin/sh\n"
                      "if [ \"$1\" = --version ]; then echo 'broken-cc 1.0'; exit 0; fi\n"
                      "echo 'broken-cc: internal compiler error' >&2\nexit 1\n");
  fs::permissions(cc, fs::perms::owner_all);
  fs::path in = dir_ / "in.safetensors";
  write_safetensors(in, {{"x", Tensor::from<float>(DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6})},
                         {"w", Tensor::from<float>(DType::kF32, {2, 3}, {1, 1, 1, 1, 1, 1})}});
  ProcessResult r = rlx({"run", small_model().string(), "-t", "cpu", "-i", in.string(), "-o",
                         (dir_ / "out.safetensors").string()},
                        {{"RLX_CC", cc.string()},
                         {"RLX_CPU_KERNELS", "compiled"},
                         {"RLX_CACHE_DIR", (dir_ / "cache").string()}});
  EXPECT_EQ(r.exit_code, 2) << dump(r);
  EXPECT_THAT(r.err, StartsWith("rlx: error: cpu plugin: cpu: the C compiler failed on generated "
                                "kernels (exit 1)"))
      << dump(r);
  EXPECT_THAT(r.err, HasSubstr("broken-cc: internal compiler error")) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("\nhint: the plugin failed;")) << dump(r);
  EXPECT_FALSE(fs::exists(dir_ / "out.safetensors"));
}

const fs::path kMiniLm = fs::path(RLX_FIXTURES_DIR) / "minilm-l2-f16";

// A --text-file that cannot be read says why, before the model is loaded.
TEST_F(CliTest, AnUnreadableTextFileSaysWhy) {
  const fs::path absent = dir_ / "absent.txt";
  ProcessResult r = rlx({"embed", kMiniLm.string(), "-t", "cpu", "--text-file", absent.string()});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_EQ(r.err, "rlx: error: --text-file " + absent.string() +
                       " does not exist\nhint: give a text file holding one sentence per line\n")
      << dump(r);
  // A folder opens as a stream on Linux and read as "no non-empty line".
  r = rlx({"embed", kMiniLm.string(), "-t", "cpu", "--text-file", dir_.string()});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err,
              StartsWith("rlx: error: --text-file " + dir_.string() + " is a folder, not a file\n"))
      << dump(r);
  r = rlx(
      {"embed", kMiniLm.string(), "-t", "cpu", "--text-file", write("blank.txt", "\n\n").string()});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("blank.txt has no non-empty line\nhint: give a text file"))
      << dump(r);
}

TEST_F(CliTest, AnEmbedInputsFileWithoutInputIdsSaysWhatItNeeds) {
  fs::path in = dir_ / "mask.safetensors";
  write_safetensors(in,
                    {{"attention_mask", Tensor::from<int64_t>(DType::kI64, {1, 3}, {1, 1, 1})}});
  ProcessResult r = rlx({"embed", kMiniLm.string(), "-t", "cpu", "-i", in.string()});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_EQ(r.err, "rlx: error: " + in.string() +
                       ": the encoder's inputs have no 'input_ids' (i64 [batch, seq])\nhint: "
                       "write input_ids, i64 [batch, seq] (and optionally attention_mask, "
                       "token_type_ids of the same shape); rlx embed reads no other tensor\n")
      << dump(r);
  EXPECT_TRUE(r.out.empty()) << dump(r);
}

// A tokenizer.json of a kind rlx does not read (Unigram) is named as such, not as missing.
TEST_F(CliTest, AnUnsupportedTokenizerIsNamedNotCalledMissing) {
  fs::path model = dir_ / "minilm-unigram";
  fs::create_directories(model);
  for (const char* f : {"config.json", "model.safetensors"}) fs::copy_file(kMiniLm / f, model / f);
  std::ofstream(model / "tokenizer.json")
      << R"({"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["hi", -1.0]]}})";
  ProcessResult r = rlx({"embed", model.string(), "-t", "cpu", "--text", "hi"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_EQ(r.err, "rlx: error: --text needs a tokenizer, and the bert model's is not supported: " +
                       (model / "tokenizer.json").string() +
                       " holds a Unigram tokenizer ('model.type'), which rlx does not read (it "
                       "reads WordPiece, BPE and byte-fallback BPE)\n"
                       "hint: give token ids instead: --inputs IN.safetensors\n")
      << dump(r);
}

}  // namespace
}  // namespace rlx::cli
