// Sizes reaching an importer through the plugin boundary: silero_vad (ONNX and rten) has shape
// arithmetic rlx cannot keep symbolic (a reflect Pad gives `sequence + 128`), so `rlx run` must
// take the chunk length from the --inputs file and `rlx compile | explain | bench` from --bind.
// Outputs are checked against ONNX Runtime's (tests/frontends/rten/silero_reference.safetensors).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "process.h"
#include "rlx/core/json.h"
#include "rlx/core/safetensors.h"

namespace rlx::cli {
namespace {

namespace fs = std::filesystem;
using test::ProcessResult;
using ::testing::HasSubstr;

std::string dump(const ProcessResult& r) {
  return fmt::format("exit {}\n--- stdout\n{}--- stderr\n{}", r.exit_code, r.out, r.err);
}

const TensorMap& reference() {
  static const TensorMap ref = read_safetensors(RLX_SILERO_REFERENCE);
  return ref;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  if (a.shape() != b.shape()) return INFINITY;
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    worst = std::max(worst, std::fabs(a.scalar_at(i) - b.scalar_at(i)));
  return worst;
}

class ImportOptionsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    model_dir_ = RLX_RTEN_CONFORMANCE_DIR;  // tests/data/rten
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) / fmt::format("rlx-importopts-{}-{}", info->name(), getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty() && !HasFailure()) fs::remove_all(dir_);
  }
  ProcessResult rlx(std::vector<std::string> args) {
    return test::run_process(RLX_BINARY, args,
                             {{"XDG_DATA_HOME", (dir_ / "none").string()},
                              {"XDG_DATA_DIRS", (dir_ / "none").string()},
                              {"RLX_PLUGIN_PATH", std::nullopt},
                              {"RLX_DISABLE_PLUGINS", std::nullopt}});
  }
  // The reference case's inputs; sr is i64 in ONNX and i32 in rten (its converter narrows).
  fs::path write_inputs(const std::string& c, bool rten) {
    const TensorMap& ref = reference();
    TensorMap in = {{"input", ref.at(c + ".input")}, {"h", ref.at(c + ".h")}, {"c", ref.at(c + ".c")}};
    Tensor sr = ref.at(c + ".sr");
    if (rten) {
      Tensor narrow(DType::kI32, {});
      narrow.as<int32_t>()[0] = static_cast<int32_t>(sr.as<int64_t>()[0]);
      sr = narrow;
    }
    in.emplace("sr", sr);
    fs::path p = dir_ / (c + (rten ? ".rten" : ".onnx") + ".in.safetensors");
    write_safetensors(p, in);
    return p;
  }
  void expect_reference(const fs::path& out, const std::string& c) {
    TensorMap got = read_safetensors(out);
    for (const char* name : {"output", "hn", "cn"}) {
      ASSERT_TRUE(got.count(name)) << name;
      EXPECT_LE(max_abs_diff(got.at(name), reference().at(c + "." + name)), 2e-5) << c << " " << name;
    }
  }
  fs::path model_dir_, dir_;
};

TEST_F(ImportOptionsCli, RunTakesTheChunkLengthFromTheInputs) {
  for (bool rten : {false, true})
    for (const std::string c : {"b1_sr16000", "b2_sr8000"}) {
      fs::path out = dir_ / (c + ".out.safetensors");
      ProcessResult r = rlx({"run", (model_dir_ / (rten ? "silero_vad.rten" : "silero_vad.onnx")).string(),
                             "--target", "cpu", "--inputs", write_inputs(c, rten).string(),
                             "--output", out.string()});
      ASSERT_EQ(r.exit_code, 0) << dump(r);
      expect_reference(out, c);
    }
}

TEST_F(ImportOptionsCli, CompileAndExplainTakeBind) {
  const std::string onnx = (model_dir_ / "silero_vad.onnx").string();
  ProcessResult r = rlx({"compile", onnx, "--target", "cpu", "-o", (dir_ / "out").string(),
                         "--bind", "sequence=512", "--bind", "batch=2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  std::ifstream file(dir_ / "out" / "manifest.json");
  json::Value manifest =
      json::parse(std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()));
  const json::Value* bindings = manifest.find("bindings");
  ASSERT_TRUE(bindings && bindings->find("sequence")) << dump(r);
  // Only the chunk length is needed at import; the batch may stay symbolic for explain.
  r = rlx({"explain", (model_dir_ / "silero_vad.rten").string(), "--target", "cpu", "--bind",
           "sequence=256", "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
}

TEST_F(ImportOptionsCli, WithoutASizeTheErrorSaysWhichNodeAndHowToGiveOne) {
  ProcessResult r = rlx({"compile", (model_dir_ / "silero_vad.onnx").string(), "--target", "cpu",
                         "-o", (dir_ / "out").string()});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("Pad")) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("--bind")) << dump(r);
}

TEST_F(ImportOptionsCli, ASizeForAnUnknownDimNamesTheKnownOnes) {
  ProcessResult r = rlx({"compile", (model_dir_ / "silero_vad.onnx").string(), "--target", "cpu",
                         "-o", (dir_ / "out").string(), "--bind", "seq=512"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("'seq'")) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("sequence")) << dump(r);
}

TEST_F(ImportOptionsCli, BenchTakesBind) {
  ProcessResult r = rlx({"bench", (model_dir_ / "silero_vad.rten").string(), "--target", "cpu",
                         "--bind", "sequence=512", "--bind", "batch=1", "--warmup", "1",
                         "--runs", "2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_TRUE(json::parse(r.out).find("p50_ms")) << dump(r);
}

}  // namespace
}  // namespace rlx::cli
