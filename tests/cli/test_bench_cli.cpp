// `rlx bench` run as a user runs it, on the bundled tiny-gpt model: the JSON keys bench/ reads,
// relations every honest measurement satisfies, the outputs it writes (checked against the
// model's float64 NumPy reference), and the errors for flags it cannot use. Timings themselves
// are never asserted: they belong to bench/, as ratios against peers measured in the same run.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "process.h"
#include "rlx/core/json.h"
#include "rlx/core/safetensors.h"

namespace rlx::cli {
namespace {

namespace fs = std::filesystem;
using test::ProcessResult;
using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::string kModel = std::string(RLX_MODELS_DIR) + "/tiny-gpt/model.rlx";
const std::string kInputs = std::string(RLX_MODELS_DIR) + "/tiny-gpt/inputs.safetensors";
const std::string kReference = std::string(RLX_MODELS_DIR) + "/tiny-gpt/reference.safetensors";

std::string dump(const ProcessResult& r) {
  return fmt::format("exit {}\n--- stdout\n{}--- stderr\n{}", r.exit_code, r.out, r.err);
}

class BenchCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) / fmt::format("rlx-bench-{}-{}", info->name(), getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  // Only the build tree's plugins, as in cli_test.cpp; `system_data` lets the Vulkan loader
  // find the system's drivers (its ICD files are under XDG_DATA_DIRS).
  ProcessResult rlx(std::vector<std::string> args, bool system_data = false) {
    return test::run_process(
        RLX_BINARY, args,
        {{"XDG_DATA_HOME", (dir_ / "no-user-data").string()},
         {"XDG_DATA_DIRS",
          system_data ? "/usr/local/share:/usr/share" : (dir_ / "no-system-data").string()},
         {"RLX_PLUGIN_PATH", std::nullopt},
         {"RLX_DISABLE_PLUGINS", std::nullopt}});
  }
  fs::path dir_;
};

double number(const json::Value& doc, const std::string& key) {
  const json::Value* v = doc.find(key);
  if (!v || !v->as_number()) {
    ADD_FAILURE() << "no number '" << key << "'";
    return std::nan("");
  }
  return v->as_number()->value;
}

TEST_F(BenchCliTest, JsonHasTheKeysBenchReadsAndSaneRelations) {
  ProcessResult r = rlx({"bench", kModel, "--target", "cpu", "--inputs", kInputs, "--runs", "3",
                         "--warmup", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  json::Value doc = json::parse(r.out);
  const double p50 = number(doc, "p50_ms"), p90 = number(doc, "p90_ms");
  EXPECT_GT(p50, 0) << r.out;
  EXPECT_LE(p50, p90) << r.out;
  EXPECT_LE(number(doc, "min_ms"), p50) << r.out;
  EXPECT_LE(p90, number(doc, "max_ms")) << r.out;
  EXPECT_LE(number(doc, "min_ms"), number(doc, "mean_ms")) << r.out;
  EXPECT_LE(number(doc, "mean_ms"), number(doc, "max_ms")) << r.out;
  EXPECT_GT(number(doc, "compile_ms"), 0) << r.out;
  EXPECT_GT(number(doc, "first_run_ms"), 0) << r.out;
  // At least the binary, the runtime and the plugin are resident: more than 1 MB, less than 1 TB.
  EXPECT_GT(number(doc, "peak_rss_mb"), 1) << r.out;
  EXPECT_LT(number(doc, "peak_rss_mb"), 1e6) << r.out;
  // With three runs NumPy's interpolated percentiles are: p50 the middle run, p90 the middle
  // plus 0.8 of the way to the slowest (the middle one recovered from the mean; 3 decimals).
  const double mid = 3 * number(doc, "mean_ms") - number(doc, "min_ms") - number(doc, "max_ms");
  EXPECT_NEAR(p50, mid, 0.01) << r.out;
  EXPECT_NEAR(p90, mid + 0.8 * (number(doc, "max_ms") - mid), 0.01) << r.out;
  EXPECT_EQ(number(doc, "runs"), 3) << r.out;
  EXPECT_EQ(number(doc, "warmup"), 1) << r.out;
  const json::Value* inputs = doc.find("inputs");
  ASSERT_TRUE(inputs && inputs->find("ids") && inputs->find("ids")->as_string()) << r.out;
  EXPECT_EQ(*inputs->find("ids")->as_string(), "i64[6]");
}

// The device's figures appear only where the target's device gives them: cpu computes in host
// memory (its RSS is the figure), vulkan counts the memory it allocates but keeps no clock here,
// cuda gives both (tests/gpu/run-on-device.sh checks them on the H200).
TEST_F(BenchCliTest, DeviceFiguresOnlyWhereTheDeviceGivesThem) {
  ProcessResult cpu = rlx({"bench", kModel, "--target", "cpu", "--inputs", kInputs, "--runs", "2",
                           "--warmup", "1", "--json"});
  ASSERT_EQ(cpu.exit_code, 0) << dump(cpu);
  json::Value doc = json::parse(cpu.out);
  EXPECT_EQ(doc.find("peak_device_mb"), nullptr) << cpu.out;
  EXPECT_EQ(doc.find("device_p50_ms"), nullptr) << cpu.out;

  ProcessResult vk = rlx({"bench", kModel, "--target", "vulkan", "--inputs", kInputs, "--runs",
                          "2", "--warmup", "1", "--json"},
                         /*system_data=*/true);
  if (vk.exit_code != 0) GTEST_SKIP() << "vulkan does not run here: " << vk.err;
  doc = json::parse(vk.out);
  EXPECT_EQ(doc.find("device_p50_ms"), nullptr) << vk.out;
  // At least the logits it computed were in device memory: rows x vocabulary f32.
  const auto reference = read_safetensors(kReference);
  const Tensor& logits = reference.at("logits");
  EXPECT_GE(number(doc, "peak_device_mb") * 1e6, static_cast<double>(logits.nbytes())) << vk.out;
  EXPECT_LT(number(doc, "peak_device_mb"), 1e4) << vk.out;
  ProcessResult text = rlx({"bench", kModel, "--target", "vulkan", "--inputs", kInputs, "--runs",
                            "1", "--warmup", "1"},
                           /*system_data=*/true);
  EXPECT_THAT(text.out, HasSubstr("  peak device mem ")) << dump(text);
}

// Linux carries getrusage's ru_maxrss over an exec from the forking process; the figure must be
// rlx's own, not that of a large driver (bench/run.py) that started it.
TEST_F(BenchCliTest, PeakMemoryIsTheProcesssOwnNotItsParents) {
  std::vector<char> ballast(400u << 20);
  for (size_t i = 0; i < ballast.size(); i += 4096) ballast[i] = static_cast<char>(i);
  ProcessResult r = rlx({"bench", kModel, "--target", "cpu", "--inputs", kInputs, "--runs", "1",
                         "--warmup", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_LT(number(json::parse(r.out), "peak_rss_mb"), 300) << r.out;
  EXPECT_NE(ballast[4096], 1);  // keeps the ballast alive (and touched) until here
}

TEST_F(BenchCliTest, OutputOfTheTimedRunsMatchesTheFloat64Reference) {
  const fs::path out = dir_ / "out.safetensors";
  ProcessResult r = rlx({"bench", kModel, "-t", "cpu", "-i", kInputs, "-n", "2", "--warmup", "1",
                         "-o", out.string()});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.out, HasSubstr("p50")) << dump(r);
  EXPECT_THAT(r.out, HasSubstr("peak RSS")) << dump(r);
  Tensor logits = read_safetensors(out).at("logits");
  Tensor ref = read_safetensors(kReference).at("logits");
  ASSERT_EQ(logits.shape(), ref.shape());
  double worst = 0;
  for (int64_t i = 0; i < ref.numel(); ++i)
    worst = std::max(worst, std::fabs(logits.scalar_at(i) - ref.scalar_at(i)));
  EXPECT_LE(worst, 1e-4);
}

TEST_F(BenchCliTest, MadeUpInputsTakeTheirSizeFromSeq) {
  const fs::path out = dir_ / "out.safetensors";
  ProcessResult r = rlx({"bench", kModel, "--target", "cpu", "--seq", "9", "--runs", "1",
                         "--warmup", "1", "--json", "--output", out.string()});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  json::Value doc = json::parse(r.out);
  ASSERT_TRUE(doc.find("inputs") && doc.find("inputs")->find("positions")) << r.out;
  EXPECT_EQ(*doc.find("inputs")->find("positions")->as_string(), "i64[9]");
  Tensor logits = read_safetensors(out).at("logits");
  EXPECT_EQ(logits.shape(), (std::vector<int64_t>{9, 64}));
  for (int64_t i = 0; i < logits.numel(); ++i) ASSERT_TRUE(std::isfinite(logits.scalar_at(i)));
}

TEST_F(BenchCliTest, HelpDescribesTheMeasurement) {
  ProcessResult r = rlx({"bench", "--help"});
  EXPECT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.out, StartsWith("usage: rlx bench")) << dump(r);
  EXPECT_THAT(r.out, HasSubstr("--warmup")) << dump(r);
  ProcessResult top = rlx({"--help"});
  EXPECT_THAT(top.out, HasSubstr("bench")) << dump(top);
}

struct BadFlags {
  std::vector<std::string> extra;
  std::string message;
};

TEST_F(BenchCliTest, BadFlagsAreUserErrorsWithAHint) {
  const std::vector<BadFlags> cases = {
      {{"--inputs", kInputs, "--runs", "0"}, "--runs: '0' is not an integer >= 1"},
      {{"--inputs", kInputs, "--runs", "many"}, "--runs: 'many' is not an integer >= 1"},
      {{"--inputs", kInputs, "--warmup", "0"}, "--warmup: '0' is not an integer >= 1"},
      {{"--inputs", kInputs, "--seq", "4"}, "give either inputs (--inputs, --input) or sizes"},
      {{}, "missing: S"},
      {{"--seq", "4", "--batch", "2"}, "--batch: the model has no symbolic dim 'B'"},
      {{"--bind", "T=4", "--seq", "4"}, "no symbolic dim 'T'"},
      {{"--bind", "S", "--seq", "4"}, "--bind 'S' is not NAME=SIZE"},
      {{"--inputs", (fs::path(RLX_MODELS_DIR) / "absent.safetensors").string()}, "does not exist"},
      {{"--inputs", kReference}, "inputs 'ids' (i64[S]), 'positions' (i64[S]) are not in"},
      {{"--inputs", kInputs, "--frobs", "2"}, "unknown option '--frobs'"},
  };
  for (const BadFlags& c : cases) {
    std::vector<std::string> args = {"bench", kModel, "--target", "cpu"};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    ProcessResult r = rlx(args);
    EXPECT_EQ(r.exit_code, 1) << c.message << "\n" << dump(r);
    EXPECT_THAT(r.err, HasSubstr(c.message)) << dump(r);
    EXPECT_THAT(r.err, HasSubstr("\nhint: ")) << dump(r);
    EXPECT_TRUE(r.out.empty()) << dump(r);
  }
  // Without --target it runs on cpu.
  ProcessResult r = rlx({"bench", kModel, "--inputs", kInputs, "--runs", "2", "--warmup", "1"});
  EXPECT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.out, HasSubstr("p50")) << dump(r);
}

}  // namespace
}  // namespace rlx::cli
