// End to end: the digits MLP is trained and quantized here, `rlx compile --target cortexm`
// writes its C, the host int8 reference (sdk/int8's int8_program.cpp) and an independent
// per-element computation of the documented rule agree, and firmware built by arm-none-eabi-gcc
// returns the same int32 outputs bit for bit under qemu-system-arm on Cortex-M4 (mps2-an386), M7
// (mps2-an500) and M55 (mps3-an547). Without the toolchain or qemu the firmware tests skip.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "c_emitter.h"
#include "digits_mlp.h"
#include "firmware_runner.h"
#include "int8_program.h"
#include "rlx/core/ir_text.h"
#include "size_report.h"

namespace {

namespace fs = std::filesystem;
using namespace rlx;
using namespace rlx::cortexm;
using namespace rlx::int8;
using namespace rlx::cortexm::testing;

constexpr int kTrainRows = 1437;  // the rest (360) is the test set

// Everything the firmware tests share: trained once per test program.
struct Compiled {
  Digits digits;
  Mlp mlp;
  fs::path dir;  // rlx compile's output
  Int8Program program;
  std::vector<std::vector<int8_t>> inputs;    // test rows, quantized
  std::vector<std::vector<int32_t>> outputs;  // host reference
  double f32_accuracy = 0, int8_accuracy = 0;
  // The same network ending in a Softmax: int8 probabilities.
  fs::path softmax_dir;
  Int8Program softmax_program;
  std::vector<std::vector<int32_t>> softmax_outputs;
  double softmax_accuracy = 0;
};

const Compiled& compiled() {
  static const Compiled c = [] {
    Compiled c;
    c.digits = load_digits(std::string(RLX_CORTEXM_DIR) + "/tests/data/digits.csv.gz");
    c.mlp = train_mlp(c.digits, kTrainRows);
    const fs::path root = scratch_root();
    fs::create_directories(root);
    c.dir = compile_graph(quantized_graph(c.mlp, c.digits, kTrainRows), root, "digits_mlp");
    c.program = lower_int8(load_graph_file(c.dir / "model.mir"), "cortexm");
    c.softmax_dir =
        compile_graph(quantized_graph(c.mlp, c.digits, kTrainRows, true), root, "digits_softmax");
    c.softmax_program = lower_int8(load_graph_file(c.softmax_dir / "model.mir"), "cortexm");
    int f32_right = 0, int8_right = 0, softmax_right = 0, tests = 0;
    for (int r = kTrainRows; r < c.digits.n; ++r, ++tests) {
      const float* x = &c.digits.x[static_cast<size_t>(r) * 64];
      f32_right += argmax(c.mlp.forward(x)) == c.digits.y[r];
      c.inputs.push_back(quantize_input(c.program, x));
      c.outputs.push_back(run_reference(c.program, c.inputs.back().data()));
      std::vector<float> real(c.program.output_size);
      for (int n = 0; n < c.program.output_size; ++n)
        real[n] = c.outputs.back()[n] * c.program.layers.back().out_scale[n];
      int8_right += argmax(real) == c.digits.y[r];
      c.softmax_outputs.push_back(run_reference(c.softmax_program, c.inputs.back().data()));
      const auto& q = c.softmax_outputs.back();
      softmax_right += std::max_element(q.begin(), q.end()) - q.begin() == c.digits.y[r];
    }
    c.softmax_accuracy = static_cast<double>(softmax_right) / tests;
    c.f32_accuracy = static_cast<double>(f32_right) / tests;
    c.int8_accuracy = static_cast<double>(int8_right) / tests;
    return c;
  }();
  return c;
}

TEST(CortexmDigits, CompileWritesTheSourcesAndTheSizes) {
  const Compiled& c = compiled();
  for (const char* f : {"model.c", "model.h", "rlx_cm_int8.h", "cortexm.mk", "cortexm.cmake",
                        "cortexm_report.json", "manifest.json"})
    EXPECT_TRUE(fs::exists(c.dir / f)) << f;
  std::stringstream header;
  header << std::ifstream(c.dir / "model.h").rdbuf();
  EXPECT_NE(header.str().find("#define RLX_MODEL_INPUT_SIZE 64"), std::string::npos);
  EXPECT_NE(header.str().find("#define RLX_MODEL_OUTPUT_SIZE 10"), std::string::npos);
  EXPECT_NE(header.str().find("#define RLX_MODEL_ARENA_BYTES 32"), std::string::npos);
  ASSERT_EQ(c.program.layers.size(), 2u);
  EXPECT_TRUE(c.program.layers[0].relu);
  EXPECT_EQ(c.program.layers[0].lo, c.program.layers[0].zero_out);  // ReLU fused as a clamp
}

TEST(CortexmDigits, HostInt8KeepsTheFloatAccuracy) {
  const Compiled& c = compiled();
  std::printf("digits test set: f32 accuracy %.4f, int8 accuracy %.4f\n", c.f32_accuracy,
              c.int8_accuracy);
  EXPECT_GT(c.f32_accuracy, 0.9);
  EXPECT_GT(c.int8_accuracy, 0.9);
  EXPECT_LE(std::fabs(c.f32_accuracy - c.int8_accuracy), 0.02);
}

// The documented rule, element by element from the quantized parameters as the graph holds
// them (u8 activations with their zero point, bias rounded once), in long double: 64 mantissa
// bits hold acc * m exactly.
// The outputs of the quantized MLP in `mir` for one u8-shifted input by that rule; `clip` > 0
// is the upper bound of a Clip after the hidden ReLU (a clamp of the quantized value, since
// rounding is monotone).
std::vector<long long> rule_outputs(const Graph& mir, const std::vector<int8_t>& input,
                                    float clip = 0) {
  std::vector<const Node*> qm;
  for (const Node& n : mir.nodes)
    if (n.op == "QMatMul") qm.push_back(&n);
  EXPECT_EQ(qm.size(), 2u);
  auto constant = [&](const Node& n, int i) {
    const Value& v = mir.values[n.inputs[i]];
    return v.producer >= 0 ? mir.nodes[v.producer].attr_tensor("value") : mir.weights.at(v.name);
  };
  std::vector<int> x(input.begin(), input.end());
  for (int& v : x) v += 128;  // back to u8
  std::vector<long long> out;
  for (size_t l = 0; l < qm.size(); ++l) {
    Tensor w = constant(*qm[l], 1), ws = constant(*qm[l], 2), b = constant(*qm[l], 5);
    const float xs = constant(*qm[l], 3).as<float>()[0];
    const int xz = constant(*qm[l], 4).as<uint8_t>()[0];
    const int n_out = static_cast<int>(w.shape()[0]), k = static_cast<int>(w.shape()[1]);
    std::vector<int> next;
    out.clear();
    for (int n = 0; n < n_out; ++n) {
      const float acc_scale = xs * ws.as<float>()[n];
      long long acc = std::llrint(static_cast<double>(b.as<float>()[n]) / acc_scale);
      for (int i = 0; i < k; ++i) acc += (x[i] - xz) * w.as<int8_t>()[n * k + i];
      if (l == 0) acc = std::max(acc, 0LL);  // the hidden layer's ReLU
      if (l + 1 == qm.size()) {
        out.push_back(acc);
        continue;
      }
      const float ys = constant(*qm[l + 1], 3).as<float>()[0];
      const int yz = constant(*qm[l + 1], 4).as<uint8_t>()[0];
      auto f = to_fixed_point(static_cast<double>(acc_scale) / ys, "rule");
      long double real = static_cast<long double>(acc) * f.m / std::ldexp(1.0L, f.r);
      int q = std::clamp(static_cast<int>(std::floor(real + 0.5L)) + yz, 0, 255);
      if (clip > 0) q = std::min(q, std::clamp(static_cast<int>(std::nearbyint(clip / ys)) + yz, 0, 255));
      next.push_back(q);
    }
    x = next;
  }
  return out;
}

TEST(CortexmDigits, ReferenceFollowsTheDocumentedRule) {
  const Compiled& c = compiled();
  const Graph mir = load_graph_file(c.dir / "model.mir");
  for (size_t s = 0; s < c.inputs.size(); s += 7) {
    const std::vector<long long> out = rule_outputs(mir, c.inputs[s]);
    for (int n = 0; n < c.program.output_size; ++n)
      EXPECT_EQ(out[n], c.outputs[s][n]) << "sample " << s << " class " << n;
  }
}

// A Clip after the hidden ReLU (ReLU6's form, here at a bound the activations cross) becomes the
// upper clamp of that layer's requantization.
TEST(CortexmDigits, ClipIsTheRequantizationClamp) {
  const Compiled& c = compiled();
  const float bound = 1.0f;
  const fs::path dir = compile_graph(quantized_graph(c.mlp, c.digits, kTrainRows, false, bound),
                                     scratch_root(), "digits_clip");
  const Graph mir = load_graph_file(dir / "model.mir");
  const Int8Program p = lower_int8(mir, "cortexm");
  ASSERT_EQ(p.layers.size(), 2u);
  EXPECT_EQ(p.layers[0].lo, p.layers[0].zero_out);
  EXPECT_LT(p.layers[0].hi, 127);
  int changed = 0;
  for (size_t s = 0; s < c.inputs.size(); ++s) {
    const std::vector<int32_t> got = run_reference(p, c.inputs[s].data());
    changed += got != c.outputs[s];
    if (s % 7) continue;
    const std::vector<long long> want = rule_outputs(mir, c.inputs[s], bound);
    for (int n = 0; n < p.output_size; ++n) EXPECT_EQ(got[n], want[n]) << "sample " << s;
  }
  EXPECT_GT(changed, 0);  // the bound bites
}

// The int8 Softmax against a double-precision softmax of the same accumulators' real logits:
// within 2/256 per probability (the exp table's 1/256-octave steps and the final rounding).
TEST(CortexmDigits, SoftmaxFollowsTheFloatSoftmax) {
  const Compiled& c = compiled();
  ASSERT_TRUE(c.softmax_program.softmax);
  const std::vector<float>& scale = c.program.layers.back().out_scale;
  int worst = 0;
  for (size_t s = 0; s < c.outputs.size(); ++s) {
    std::vector<double> logit(scale.size());
    for (size_t n = 0; n < scale.size(); ++n) logit[n] = c.outputs[s][n] * double(scale[n]);
    const double top = *std::max_element(logit.begin(), logit.end());
    double sum = 0;
    for (double& v : logit) sum += (v = std::exp(v - top));
    for (size_t n = 0; n < scale.size(); ++n) {
      const int want = static_cast<int>(std::lround(256 * logit[n] / sum));
      worst = std::max(worst, std::abs(std::min(want, 255) - (c.softmax_outputs[s][n] + 128)));
    }
  }
  EXPECT_LE(worst, 2);
  std::printf("softmax: largest difference %d/256, accuracy by argmax %.4f\n", worst,
              c.softmax_accuracy);
  EXPECT_LE(std::fabs(c.softmax_accuracy - c.int8_accuracy), 0.02);
}

TEST(CortexmDigits, FloatGraphsAreRefusedByName) {
  const Compiled& c = compiled();
  const fs::path model = c.dir.parent_path() / "digits_f32.rlx";
  std::ofstream(model) << print_graph(float_graph(c.mlp));
  int rc = 0;
  const std::string log =
      rlx_cli(fmt::format("compile '{}' --target cortexm -o '{}'", model.string(),
                          (c.dir.parent_path() / "f32").string()),
              &rc);
  EXPECT_NE(rc, 0) << log;
  EXPECT_NE(log.find("MatMul"), std::string::npos) << log;
  EXPECT_NE(log.find("cortexm runs int8 graphs only"), std::string::npos) << log;
  EXPECT_NE(log.find("rlx quantize --scheme int8"), std::string::npos) << log;
}

TEST(CortexmDigits, CpuOptionPicksTheCore) {
  const Compiled& c = compiled();
  const fs::path model = c.dir.parent_path() / "digits_mlp.rlx";
  const fs::path out = c.dir.parent_path() / "m7";
  int rc = -1;
  std::string log = rlx_cli(fmt::format("compile '{}' --target cortexm --cpu cortex-m7 -o '{}'",
                                        model.string(), out.string()),
                            &rc);
  ASSERT_EQ(rc, 0) << log;
  std::stringstream mk, report;
  mk << std::ifstream(out / "cortexm.mk").rdbuf();
  EXPECT_NE(mk.str().find("RLX_CPU ?= cortex-m7"), std::string::npos) << mk.str();
  report << std::ifstream(out / "cortexm_report.json").rdbuf();
  if (!arm_gcc().empty()) {
    EXPECT_NE(report.str().find("\"cortex-m7\""), std::string::npos) << report.str();
    EXPECT_EQ(report.str().find("\"cortex-m4\""), std::string::npos) << report.str();
    EXPECT_TRUE(std::regex_search(log, std::regex("cortexm cortex-m7: flash [0-9]+ B")))
        << log;  // rlx compile prints the target's summary
  }
  log = rlx_cli(fmt::format("compile '{}' --target cortexm --cpu cortex-m3 -o '{}'", model.string(),
                            out.string()),
                &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(log.find("cortex-m4,cortex-m7,cortex-m55"), std::string::npos) << log;
  log = rlx_cli(fmt::format("compile '{}' --target cpu --cpu cortex-m4 -o '{}'", model.string(),
                            (c.dir.parent_path() / "cpu").string()),
                &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(log.find("generates for no particular CPU"), std::string::npos) << log;
}

TEST(CortexmDigits, ListedAsCodegenOnly) {
  int rc = 0;
  const std::string list = rlx_cli("--list-targets", &rc);
  EXPECT_TRUE(std::regex_search(list, std::regex("cortexm[^\n]*codegen-only"))) << list;
}

class CortexmFirmware : public ::testing::TestWithParam<Board> {};

TEST_P(CortexmFirmware, QemuOutputsEqualTheHostReference) {
  const Board board = GetParam();
  if (std::string why = firmware_skip_reason(board); !why.empty()) GTEST_SKIP() << why;
  const Compiled& c = compiled();
  const long long insn = run_firmware(board, c.dir, c.inputs, c.outputs);
  EXPECT_GT(insn, 0);
  const long long softmax_insn = run_firmware(board, c.softmax_dir, c.inputs, c.softmax_outputs);
  EXPECT_GT(softmax_insn, 0);
  std::stringstream report;
  report << std::ifstream(c.dir / "cortexm_sizes.txt").rdbuf();
  std::printf(
      "%s on %s: %zu samples equal the host reference, int8 accuracy %.4f, %lld instructions "
      "per inference (%lld with the int8 Softmax)\n%s",
      board.cpu, board.machine, c.outputs.size(), c.int8_accuracy, insn, softmax_insn,
      report.str().c_str());
  RecordProperty("instructions_per_inference", std::to_string(insn));
}

INSTANTIATE_TEST_SUITE_P(Boards, CortexmFirmware, ::testing::ValuesIn(boards()),
                         [](const auto& info) { return board_test_name(info.param); });

}  // namespace
