// Compiled folders (`rlx compile -o DIR`, then `rlx run DIR` / `rlx bench DIR`): the bundled
// tiny-gpt compiled once and loaded without its model, checked against the model's float64 NumPy
// reference; loading with no C compiler reachable; and each refusal a loader owes its user (a
// folder for another target, plugin ABI or CPU; a missing or damaged file), made by editing what
// rlx compile wrote.
#include <cmath>
#include <fstream>
#include <regex>

#include "cli_fixture.h"
#include "rlx/core/safetensors.h"

namespace rlx::cli {
namespace {

const std::string kModel = std::string(RLX_MODELS_DIR) + "/tiny-gpt/model.rlx";
const std::string kInputs = std::string(RLX_MODELS_DIR) + "/tiny-gpt/inputs.safetensors";
const std::string kReference = std::string(RLX_MODELS_DIR) + "/tiny-gpt/reference.safetensors";

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

double worst_difference_from_reference(const fs::path& outputs) {
  Tensor logits = read_safetensors(outputs).at("logits");
  Tensor ref = read_safetensors(kReference).at("logits");
  EXPECT_EQ(logits.shape(), ref.shape());
  if (logits.shape() != ref.shape()) return INFINITY;
  double worst = 0;
  for (int64_t i = 0; i < ref.numel(); ++i)
    worst = std::max(worst, std::fabs(logits.scalar_at(i) - ref.scalar_at(i)));
  return worst;
}

class CompiledFolderCli : public CliTest {
 protected:
  // tiny-gpt for cpu, its sequence bound to the reference inputs' 6 tokens.
  fs::path compile_tiny_gpt() {
    const fs::path out = dir_ / "tiny-gpt.cpu";
    ProcessResult r =
        rlx({"compile", kModel, "--target", "cpu", "--bind", "S=6", "-o", out.string()});
    EXPECT_EQ(r.exit_code, 0) << dump(r);
    return out;
  }
  // Replaces the first match of `pattern` in DIR/manifest.json.
  void edit_manifest(const fs::path& folder, const std::string& pattern,
                     const std::string& replacement) {
    const fs::path manifest = folder / "manifest.json";
    std::string text = read_text(manifest);
    std::string edited = std::regex_replace(text, std::regex(pattern), replacement,
                                            std::regex_constants::format_first_only);
    ASSERT_NE(edited, text) << pattern << " not in\n" << text;
    write_text(manifest, edited);
  }
  ProcessResult run_folder(const fs::path& folder, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"run", folder.string(), "--inputs", kInputs};
    args.insert(args.end(), extra.begin(), extra.end());
    return rlx(args);
  }
};

TEST_F(CompiledFolderCli, ManifestRecordsWhatALoaderChecks) {
  const fs::path out = compile_tiny_gpt();
  json::Value m = json::parse(read_text(out / "manifest.json"));
  EXPECT_EQ(str(m.find("format")), "rlx-compiled-folder");
  ASSERT_TRUE(m.find("format_version") && m.find("format_version")->as_number());
  EXPECT_EQ(m.find("format_version")->as_number()->raw, "1");
  EXPECT_EQ(str(m.find("target")), "cpu");
  EXPECT_FALSE(str(m.find("plugin_version")).empty());
  EXPECT_FALSE(str(m.find("plugin_abi")).empty());
  EXPECT_FALSE(str(m.find("rlx_version")).empty());
  ASSERT_TRUE(m.find("requires") && m.find("requires")->find("isa"));
  ASSERT_TRUE(m.find("bindings") && m.find("bindings")->find("S"));
  EXPECT_EQ(m.find("bindings")->find("S")->as_number()->raw, "6");
  const json::Value* ids = find_named(*m.find("inputs"), "ids");
  ASSERT_TRUE(ids) << read_text(out / "manifest.json");
  EXPECT_EQ(str(ids->find("dtype")), "i64");
  bool so_hashed = false;
  for (const json::Value& f : *m.find("files")->as_array()) {
    EXPECT_EQ(f.find("bytes")->as_number()->as_i64().value(),
              static_cast<int64_t>(fs::file_size(out / str(f.find("path")))));
    if (str(f.find("path")) == "cpu_kernels.so") so_hashed = !str(f.find("xxh3_128")).empty();
  }
  EXPECT_TRUE(so_hashed) << read_text(out / "manifest.json");
}

TEST_F(CompiledFolderCli, RunMatchesTheReferenceAndReportsLoadNextToCompileTime) {
  const fs::path out = compile_tiny_gpt();
  const fs::path result = dir_ / "logits.safetensors";
  ProcessResult r = run_folder(out, {"-o", result.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_LE(worst_difference_from_reference(result), 1e-4);
  json::Value doc = parse_json(r);
  const json::Value* loaded = doc.find("compiled_folder");
  ASSERT_TRUE(loaded) << dump(r);
  EXPECT_EQ(str(loaded->find("target")), "cpu");
  EXPECT_GT(loaded->find("load_ms")->as_number()->value, 0) << dump(r);
  EXPECT_GT(loaded->find("compile_ms")->as_number()->value, 0) << dump(r);

  ProcessResult verbose = rlx({"run", out.string(), "--inputs", kInputs, "-v"});
  ASSERT_EQ(verbose.exit_code, 0) << dump(verbose);
  EXPECT_TRUE(std::regex_search(
      verbose.err,
      std::regex(R"(loaded the compiled folder .* in [0-9.]+ ms \(compiled in [0-9.]+ ms\))")))
      << dump(verbose);
}

// The folder's kernels are used as they are: the only C compiler reachable (PATH is empty) is
// one that answers --version and fails, leaving a mark, when asked to compile; the kernel cache
// is empty. The model itself then cannot run, and the folder runs without calling it.
TEST_F(CompiledFolderCli, RunsWithoutCallingACompiler) {
  const fs::path out = compile_tiny_gpt();
  const fs::path mark = dir_ / "compiler-was-called";
  const fs::path cc =
      write("refusing-cc",
            "#!/bin/sh\n"
            "if [ \"$1\" = \"--version\" ]; then echo 'refusing-cc 1.0'; exit 0; fi\n"
            "echo called > '" +
                mark.string() +
                "'\n"
                "exit 1\n");
  fs::permissions(cc, fs::perms::owner_all);
  const std::map<std::string, std::optional<std::string>> no_compiler = {
      {"RLX_CC", cc.string()}, {"PATH", ""}, {"RLX_CACHE_DIR", (dir_ / "empty-cache").string()}};
  ProcessResult model = rlx({"run", kModel, "--inputs", kInputs}, no_compiler);
  EXPECT_NE(model.exit_code, 0) << dump(model);
  ASSERT_TRUE(fs::exists(mark)) << "the control run did not call the compiler\n" << dump(model);
  fs::remove(mark);

  const fs::path result = dir_ / "logits.safetensors";
  ProcessResult r =
      rlx({"run", out.string(), "--inputs", kInputs, "-o", result.string()}, no_compiler);
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_FALSE(fs::exists(mark)) << "loading the folder called the compiler\n" << dump(r);
  EXPECT_LE(worst_difference_from_reference(result), 1e-4);
}

TEST_F(CompiledFolderCli, BenchLoadsTheFolder) {
  const fs::path out = compile_tiny_gpt();
  const fs::path result = dir_ / "logits.safetensors";
  ProcessResult r = rlx({"bench", out.string(), "--inputs", kInputs, "--runs", "2", "--warmup", "1",
                         "--json", "-o", result.string()});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  json::Value doc = parse_json(r);
  EXPECT_GT(doc.find("load_ms")->as_number()->value, 0) << dump(r);
  EXPECT_GT(doc.find("compile_ms")->as_number()->value, 0) << dump(r);
  EXPECT_EQ(str(doc.find("target")), "cpu");
  EXPECT_LE(worst_difference_from_reference(result), 1e-4);

  ProcessResult text = rlx({"bench", out.string(), "--runs", "1", "--warmup", "1"});
  ASSERT_EQ(text.exit_code, 0) << dump(text);
  EXPECT_TRUE(std::regex_search(text.out, std::regex(R"(load +[0-9.]+ ms .*compiled in)")))
      << dump(text);
}

TEST_F(CompiledFolderCli, AnotherTargetIsRefused) {
  const fs::path out = compile_tiny_gpt();
  ProcessResult r = run_folder(out, {"--target", "webgpu"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("was compiled for target 'cpu', not 'webgpu'")) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("hint: leave --target out")) << dump(r);

  edit_manifest(out, R"("target": "cpu")", R"("target": "cuda")");
  r = run_folder(out, {"--target", "cpu"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("was compiled for target 'cuda', not 'cpu'")) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("rlx compile " + kModel + " --target cpu")) << dump(r);
}

TEST_F(CompiledFolderCli, PluginAbiOrVersionMismatchIsRefused) {
  const fs::path out = compile_tiny_gpt();
  edit_manifest(out, R"("plugin_abi": "[^"]*")", R"("plugin_abi": "1.0")");
  ProcessResult r = run_folder(out);
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("(ABI 1.0)")) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("hint: compile it again here: rlx compile")) << dump(r);

  const fs::path again = compile_tiny_gpt();
  edit_manifest(again, R"("plugin_version": "[^"]*")", R"("plugin_version": "0.0.1-old")");
  r = run_folder(again);
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("with the cpu plugin 0.0.1-old")) << dump(r);
}

TEST_F(CompiledFolderCli, AnotherCpuIsRefused) {
#if defined(__x86_64__)
  const std::string other = "aarch64", here = "x86_64";
#else
  const std::string other = "x86_64", here = "aarch64";
#endif
  const fs::path out = compile_tiny_gpt();
  edit_manifest(out, R"("arch": "[^"]*")", "\"arch\": \"" + other + "\"");
  ProcessResult r = run_folder(out);
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("does not run on this machine: its kernels were built for " + other +
                               " and this machine is " + here))
      << dump(r);

  const fs::path again = compile_tiny_gpt();
  edit_manifest(again, R"("isa": "[^"]*")", R"("isa": "x86-64-v9")");
  r = run_folder(again);
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("built for the ISA level 'x86-64-v9'")) << dump(r);
}

TEST_F(CompiledFolderCli, MissingOrDamagedFilesAreNamed) {
  const fs::path out = compile_tiny_gpt();
  json::Value m = json::parse(read_text(out / "manifest.json"));
  std::string side;
  for (const json::Value& f : *m.find("files")->as_array())
    if (str(f.find("kind")) == "lir-constants") side = str(f.find("path"));
  ASSERT_FALSE(side.empty()) << read_text(out / "manifest.json");
  fs::remove(out / side);
  ProcessResult r = run_folder(out);
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr((out / side).string() + " is missing")) << dump(r);

  fs::remove(out / "model.lir");
  r = run_folder(out);
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr((out / "model.lir").string() + " is missing")) << dump(r);

  const fs::path again = compile_tiny_gpt();
  std::string so = read_text(again / "cpu_kernels.so");
  so[so.size() / 2] = static_cast<char>(so[so.size() / 2] ^ 0x5a);
  write_text(again / "cpu_kernels.so", so);
  r = run_folder(again);
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("cpu_kernels.so is damaged")) << dump(r);
}

TEST_F(CompiledFolderCli, TheFoldersLirPointsAtTheFolder) {
  const fs::path out = compile_tiny_gpt();
  ProcessResult r = rlx({"run", (out / "model.lir").string(), "--inputs", kInputs});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("is the kernel program of a compiled folder")) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("hint: load the whole folder: `rlx run " + out.string())) << dump(r);
}

// The model's limits on input values travel with the folder: a token id past qwen3-tiny's
// vocabulary (config.json: vocab_size 2048) is refused before any kernel indexes with it.
TEST_F(CompiledFolderCli, InputLimitsOfTheModelAreChecked) {
  const fs::path out = dir_ / "qwen3.cpu";
  ProcessResult c = rlx({"compile", (fs::path(RLX_FIXTURES_DIR) / "qwen3-tiny").string(), "--bind",
                         "B=1", "--bind", "S=3", "-o", out.string()});
  ASSERT_EQ(c.exit_code, 0) << dump(c);
  ProcessResult r =
      rlx({"run", out.string(), "--input", "input_ids=1,2,2048", "--input-shape", "input_ids=1x3"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("holds 2048 at [0, 2], outside what the model takes: 0 to 2047"))
      << dump(r);
  ProcessResult ok = rlx({"run", out.string(), "--input", "input_ids=1,2,2047", "--input-shape",
                          "input_ids=1x3", "--json"});
  ASSERT_EQ(ok.exit_code, 0) << dump(ok);
  const json::Value* logits = find_named(*parse_json(ok).find("outputs"), "logits");
  ASSERT_TRUE(logits) << dump(ok);
}

TEST_F(CompiledFolderCli, OptionsOfTheCompileAreRefused) {
  const fs::path out = compile_tiny_gpt();
  ProcessResult r = run_folder(out, {"--q8-activations"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("--q8-activations does not apply to the compiled folder"))
      << dump(r);
}

}  // namespace
}  // namespace rlx::cli
