// The `rlx` binary among hostile plugins (issue 24): libraries whose constructor crashes, aborts,
// loops or exits, whose handshake or factory attacks the host, one posing as the cpu target and
// an importer claiming .onnx and .rlx. rlx must list them as broken with what happened and exit
// 0, run a model on the real cpu target, and turn every other encounter into an error (exit 1).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "process.h"
#include "rlx/core/json.h"

namespace rlx {
namespace {

namespace fs = std::filesystem;
using cli::test::ProcessResult;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

std::string dump(const ProcessResult& r) {
  return fmt::format("exit {}\n--- stdout\n{}--- stderr\n{}", r.exit_code, r.out, r.err);
}

fs::path case_dir(const std::string& name) {
  return fs::path(RLX_ABI_CASES_DIR) / name;
}

const std::string kModel = std::string(RLX_MODELS_DIR) + "/tiny-gpt/model.rlx";
const std::string kInputs = std::string(RLX_MODELS_DIR) + "/tiny-gpt/inputs.safetensors";

class HostilePluginsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ =
        fs::path(::testing::TempDir()) / fmt::format("rlx-hostile-{}-{}", info->name(), getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // rlx with the given hostile folders first on the search path, the build tree's plugins next
  // to the binary, a cache of the test's own (so every probe runs) and a 1 s time limit.
  ProcessResult rlx(const std::vector<std::string>& args, const std::vector<std::string>& folders) {
    std::string path;
    for (const std::string& f : folders) path += (path.empty() ? "" : ":") + case_dir(f).string();
    return cli::test::run_process(RLX_BINARY, args,
                                  {{"XDG_DATA_HOME", (dir_ / "no-user-data").string()},
                                   {"XDG_DATA_DIRS", (dir_ / "no-system-data").string()},
                                   {"RLX_PLUGIN_PATH", path},
                                   {"RLX_DISABLE_PLUGINS", std::nullopt},
                                   {"RLX_CACHE_DIR", (dir_ / "cache").string()},
                                   {"RLX_PLUGIN_PROBE_TIMEOUT_S", "1"}});
  }

  // `rlx run MODEL --target TARGET` with the bundled model's inputs.
  std::vector<std::string> run(const std::string& model, const std::string& target) {
    return {"run",      model,   "--target", target,
            "--inputs", kInputs, "--output", (dir_ / "out.safetensors").string()};
  }

  fs::path dir_;
};

const std::vector<std::string> kAll = {"hostile", "hostile_cpu", "hostile_importer"};

const json::Value* find_named(const json::Value* array, const std::string& name) {
  if (!array || !array->as_array()) return nullptr;
  for (const json::Value& v : *array->as_array())
    if (const json::Value* n = v.find("name"); n && n->as_string() && *n->as_string() == name)
      return &v;
  return nullptr;
}

std::string field(const json::Value* v, const std::string& key) {
  const json::Value* f = v ? v->find(key) : nullptr;
  return f && f->as_string() ? *f->as_string() : "<missing>";
}

TEST_F(HostilePluginsTest, ListingExitsZeroAndNamesWhatEachDid) {
  ProcessResult r = rlx({"--list-targets", "--json"}, kAll);
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  json::Value doc = json::parse(r.out);
  const json::Value* targets = doc.find("targets");
  const std::map<std::string, std::string> want = {
      {"hostile_ctor_segv", "crashed with SIGSEGV while loading the library"},
      {"hostile_ctor_abort", "crashed with SIGABRT while loading the library"},
      {"hostile_ctor_loop", "did not answer within 1 s while loading the library"},
      {"hostile_ctor_exit", "ended the process (exit status 0) while loading the library"},
      {"hostile_abi_data", "rlx_plugin_abi is not a function"},
      {"hostile_abi_pointer", "crashed with SIGSEGV during the ABI handshake"},
      {"hostile_factory_segv", "crashed with SIGSEGV in its factory"},
      {"hostile_factory_scribble", "crashed with SIGSEGV while asked its name and version"},
      // Named first on the search path, it shadows the real cpu target, and says why it fails.
      {"cpu", "crashed with SIGSEGV while loading the library: remove or fix the plugin (" +
                  (case_dir("hostile_cpu") / "cpu.toml").string() + ")"},
  };
  for (const auto& [name, detail] : want) {
    SCOPED_TRACE(name);
    const json::Value* p = find_named(targets, name);
    ASSERT_NE(p, nullptr) << r.out;
    EXPECT_EQ(field(p, "status"), "broken");
    EXPECT_THAT(field(p, "detail"), StartsWith(detail));
  }
  const json::Value* importer = find_named(doc.find("importers"), "hostile_importer");
  EXPECT_EQ(field(importer, "status"), "broken");
  EXPECT_THAT(field(importer, "detail"), StartsWith("crashed with SIGSEGV while loading"));
  // The plugins beside the binary are untouched by their neighbours.
  EXPECT_EQ(field(find_named(doc.find("importers"), "onnx"), "status"), "available");

  ProcessResult text = rlx({"--list-targets"}, kAll);
  EXPECT_EQ(text.exit_code, 0) << dump(text);
  EXPECT_THAT(text.out, HasSubstr("hostile_ctor_exit"));
}

TEST_F(HostilePluginsTest, BundledModelRunsOnCpuAmongThem) {
  // The hostile importer claims .rlx as well: passed over, the file is read as rlx IR.
  ProcessResult r = rlx(run(kModel, "cpu"), {"hostile", "hostile_importer"});
  EXPECT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_TRUE(fs::exists(dir_ / "out.safetensors")) << dump(r);
}

// The error lists every usable target, so it loads them all: each hostile one is left out. (A
// known rlx target that is not installed is named as a missing package: FirstHourCliTest.)
TEST_F(HostilePluginsTest, UnknownTargetIsAnErrorListingTheUsableOnes) {
  ProcessResult r = rlx(run(kModel, "cpuu"), {"hostile"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("unknown target 'cpuu'; available targets: ")) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("cpu")) << dump(r);
  EXPECT_THAT(r.err, Not(HasSubstr("hostile"))) << dump(r);
}

TEST_F(HostilePluginsTest, AHostileCpuIsABrokenTargetNotACrash) {
  ProcessResult r = rlx(run(kModel, "cpu"), {"hostile_cpu"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("target 'cpu' is broken: crashed with SIGSEGV while loading the "
                               "library: remove or fix the plugin"))
      << dump(r);
}

TEST_F(HostilePluginsTest, AHostileImporterIsNamedWhenNothingElseReadsTheFile) {
  // Neither the rlx IR reader nor any other importer reads this: the claimant is the story.
  std::ofstream(dir_ / "model.rlx") << "\x08\x07 not rlx IR\n";
  ProcessResult r = rlx(run((dir_ / "model.rlx").string(), "cpu"), {"hostile_importer"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr(fmt::format(
                         "no importer could read '{}':\n  the importer 'hostile_importer' that "
                         "claims it is broken: crashed with SIGSEGV while loading the library",
                         (dir_ / "model.rlx").string())))
      << dump(r);

  // An .onnx file goes to the real ONNX importer, which says what is wrong with it.
  std::ofstream(dir_ / "model.onnx") << "\x08\x07 not ONNX either";
  r = rlx(run((dir_ / "model.onnx").string(), "cpu"), {"hostile_importer"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, Not(HasSubstr("hostile_importer"))) << dump(r);
}

}  // namespace
}  // namespace rlx
