// The digits CNN end to end: trained by rlx's Trainer on the cpu target, quantized into QConv
// (dense and depthwise), MaxPool, AveragePool and QMatMul, compiled by `rlx compile --target
// cortexm`; the host int8 reference agrees with the documented rule computed here element by
// element, keeps the float accuracy, and the firmware under qemu-system-arm on the three cores
// returns the same int32 outputs bit for bit.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "digits_cnn.h"
#include "firmware_runner.h"
#include "int8_program.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/runtime.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using namespace rlx;
using namespace rlx::int8;
using namespace rlx::cortexm::testing;

constexpr int kTrainRows = 1437;  // the rest (360) is the test set

struct CompiledCnn {
  Digits digits;
  Cnn cnn;
  fs::path dir;
  Graph quantized;
  Int8Program program;
  std::vector<std::vector<int8_t>> inputs;
  std::vector<std::vector<int32_t>> outputs;
  double f32_accuracy = 0, int8_accuracy = 0;
};

const CompiledCnn& compiled() {
  static const CompiledCnn c = [] {
    CompiledCnn c;
    c.digits = load_digits(std::string(RLX_CORTEXM_DIR) + "/tests/data/digits.csv.gz");
    c.cnn = train_cnn(c.digits, kTrainRows);
    c.quantized = cnn_quantized_graph(c.cnn, c.digits, kTrainRows);
    const fs::path root = scratch_root();
    fs::create_directories(root);
    c.dir = compile_graph(c.quantized, root, "digits_cnn");
    c.program = lower_int8(load_graph_file(c.dir / "model.mir"), "cortexm");
    const int tests = c.digits.n - kTrainRows;
    const std::vector<float> logits = cnn_logits(c.cnn, c.digits, kTrainRows, tests);
    int f32_right = 0, int8_right = 0;
    for (int t = 0; t < tests; ++t) {
      const int r = kTrainRows + t;
      f32_right += argmax({logits.begin() + t * 10, logits.begin() + t * 10 + 10}) == c.digits.y[r];
      c.inputs.push_back(quantize_input(c.program, &c.digits.x[static_cast<size_t>(r) * 64]));
      c.outputs.push_back(run_reference(c.program, c.inputs.back().data()));
      std::vector<float> real(10);
      for (int n = 0; n < 10; ++n)
        real[n] = c.outputs.back()[n] * c.program.layers.back().out_scale[n];
      int8_right += argmax(real) == c.digits.y[r];
    }
    c.f32_accuracy = static_cast<double>(f32_right) / tests;
    c.int8_accuracy = static_cast<double>(int8_right) / tests;
    return c;
  }();
  return c;
}

TEST(CortexmCnn, TrainedByRlxAndQuantizedKeepsTheAccuracy) {
  const CompiledCnn& c = compiled();
  std::printf("digits CNN: final training loss %.4f, test accuracy f32 %.4f, int8 %.4f\n",
              c.cnn.final_loss, c.f32_accuracy, c.int8_accuracy);
  EXPECT_GT(c.f32_accuracy, 0.9);
  EXPECT_GT(c.int8_accuracy, 0.9);
  EXPECT_LE(std::fabs(c.f32_accuracy - c.int8_accuracy), 0.03);
}

TEST(CortexmCnn, EveryLayerKindReachesTheProgram) {
  const CompiledCnn& c = compiled();
  std::vector<LayerKind> kinds;
  for (const Layer& l : c.program.layers) kinds.push_back(l.kind);
  EXPECT_EQ(kinds,
            (std::vector<LayerKind>{LayerKind::kConv, LayerKind::kMaxPool, LayerKind::kConv,
                                    LayerKind::kConv, LayerKind::kAvgPool, LayerKind::kDense}));
  ASSERT_EQ(c.program.layers.size(), 6u);
  EXPECT_EQ(c.program.layers[2].win.group, 16);  // depthwise
  EXPECT_TRUE(c.program.layers[0].relu && c.program.layers[2].relu && c.program.layers[3].relu);
  // The second dense conv adds the max pool's output back, then the ReLU after the add.
  EXPECT_TRUE(c.program.layers[3].residual);
  EXPECT_FALSE(c.program.layers[3].pre_relu);
  EXPECT_EQ(c.program.layers[3].residual_from, 1);
  EXPECT_NE(c.program.layers[3].out_slot, c.program.layers[1].out_slot);
  EXPECT_NE(c.program.layers[2].out_slot, c.program.layers[1].out_slot);
  std::stringstream header;
  header << std::ifstream(c.dir / "model.h").rdbuf();
  EXPECT_NE(header.str().find("#define RLX_MODEL_INPUT_SIZE 64"), std::string::npos);
  // Three slots as large as the widest intermediate (the first conv's 16x8x8): the skip is kept
  // in one while the next two layers use the others.
  EXPECT_NE(header.str().find("#define RLX_MODEL_ARENA_BYTES 3072"), std::string::npos)
      << header.str();
}

// The documented rule computed here from the graph's constants, layer by layer in u8 with the
// zero points subtracted: convolutions and the dense layer as exact integer sums (padding adds
// nothing), requantization in long double (64 mantissa bits hold acc * m exactly), the residual
// as a second rescaled term, max pooling as the maximum, average pooling rounded half away from
// zero.
TEST(CortexmCnn, ReferenceFollowsTheDocumentedRule) {
  const CompiledCnn& c = compiled();
  const Graph& g = c.quantized;
  auto constant = [&](const Node& n, int i) {
    return g.nodes[g.values[n.inputs[i]].producer].attr_tensor("value");
  };
  std::vector<const Node*> layers;  // the quantized layers in graph order
  for (const Node& n : g.nodes)
    if (n.op == "QConv" || n.op == "QMatMul") layers.push_back(&n);
  ASSERT_EQ(layers.size(), 4u);
  for (size_t s = 0; s < c.inputs.size(); s += 9) {
    std::vector<int> x(c.inputs[s].begin(), c.inputs[s].end());  // u8 activations
    for (int& v : x) v += 128;
    int ch = 1, h = 8, w = 8;      // x's dims
    int zero = 0;                  // x's zero point
    std::vector<long long> acc;    // the last layer's accumulators, not yet requantized
    std::vector<float> acc_scale;  // per output channel
    bool relu = false;
    size_t next = 0;  // the next quantized layer
    // The max pool's output, kept for the residual Add in the depthwise conv's quantization.
    std::vector<int> skip;
    int skip_zero = 0;
    float skip_scale = 0;
    bool add = false;
    // Each term rescaled to the output's scale and rounded half up on its own.
    auto rescale = [](long long v, double ratio) {
      const auto f = to_fixed_point(ratio, "rule");
      return static_cast<int>(
          std::floor(static_cast<long double>(v) * f.m / std::ldexp(1.0L, f.r) + 0.5L));
    };
    auto requantize = [&] {
      if (acc.empty()) return;
      const Node& n = *layers[next];
      const float ys = constant(n, 3).as<float>()[0];
      const int yz = constant(n, 4).as<uint8_t>()[0];
      const size_t per = acc.size() / acc_scale.size();
      x.assign(acc.size(), 0);
      for (size_t i = 0; i < acc.size(); ++i) {
        int q = rescale(acc[i], static_cast<double>(acc_scale[i / per]) / ys) + yz;
        if (add) q += rescale(skip[i] - skip_zero, static_cast<double>(skip_scale) / ys);
        x[i] = std::clamp(q, relu ? yz : 0, 255);
      }
      zero = yz;
      acc.clear();
      add = false;
    };
    for (const Node& n : g.nodes) {
      if (n.op == "Relu") relu = true;
      if (n.op == "Add") add = true;
      if (n.op == "MaxPool" || n.op == "AveragePool") {
        requantize();  // pools work in the next quantized layer's quantization
        std::vector<int> y;
        for (int k = 0; k < ch; ++k)
          for (int oy = 0; oy < h / 2; ++oy)
            for (int ox = 0; ox < w / 2; ++ox) {
              int best = 0, sum = 0;
              for (int i = 0; i < 2; ++i)
                for (int j = 0; j < 2; ++j) {
                  const int v = x[(k * h + 2 * oy + i) * w + 2 * ox + j];
                  best = std::max(best, v);
                  sum += v - zero;
                }
              const int mean = sum >= 0 ? (2 * sum + 4) / 8 : -((8 - 2 * sum) / 8);
              y.push_back(n.op == "MaxPool" ? best : std::clamp(zero + mean, 0, 255));
            }
        x = y;
        h /= 2;
        w /= 2;
        if (n.op == "MaxPool") {
          skip = x;
          skip_zero = zero;
          skip_scale = constant(*layers[next], 3).as<float>()[0];
        }
      }
      if (n.op != "QConv" && n.op != "QMatMul") continue;
      requantize();
      zero = constant(n, 4).as<uint8_t>()[0];
      const Tensor wt = constant(n, 1), ws = constant(n, 2), b = constant(n, 5);
      const int o = static_cast<int>(wt.shape()[0]);
      const int8_t* wq = wt.as<int8_t>();
      acc_scale.assign(ws.as<float>(), ws.as<float>() + o);
      for (float& v : acc_scale) v *= constant(n, 3).as<float>()[0];
      auto bias = [&](int j) {
        return std::llrint(static_cast<double>(b.as<float>()[j]) / acc_scale[j]);
      };
      if (n.op == "QMatMul") {
        const int k = static_cast<int>(wt.shape()[1]);
        for (int j = 0; j < o; ++j) {
          long long a = bias(j);
          for (int i = 0; i < k; ++i) a += (x[i] - zero) * wq[j * k + i];
          acc.push_back(a);
        }
      } else {
        const int group = static_cast<int>(n.attr_int("group", 1)), cg = ch / group;
        const int kh = static_cast<int>(wt.shape()[2]), kw = static_cast<int>(wt.shape()[3]);
        const int pad = n.has_attr("pads") ? static_cast<int>(n.attr_ints("pads")[0]) : 0;
        for (int j = 0; j < o; ++j)
          for (int oy = 0; oy < h; ++oy)
            for (int ox = 0; ox < w; ++ox) {
              long long a = bias(j);
              for (int ci = 0; ci < cg; ++ci)
                for (int ky = 0; ky < kh; ++ky)
                  for (int kx = 0; kx < kw; ++kx) {
                    const int iy = oy + ky - pad, ix = ox + kx - pad;
                    if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;  // padding adds 0
                    const int in_ch = j / (o / group) * cg + ci;
                    a += (x[(in_ch * h + iy) * w + ix] - zero) *
                         wq[((j * cg + ci) * kh + ky) * kw + kx];
                  }
              acc.push_back(a);
            }
        ch = o;
      }
      relu = false;
      ++next;
    }
    ASSERT_EQ(acc.size(), 10u);
    for (int n = 0; n < 10; ++n)
      EXPECT_EQ(acc[n], c.outputs[s][n]) << "sample " << s << " class " << n;
  }
}

// The same quantized graph on the cpu target (its float face: QConv dequantizes to f32 and the
// next layer rounds again) agrees with the int8 program on the class of nearly every sample.
TEST(CortexmCnn, CpuRunsTheQuantizedGraph) {
  const CompiledCnn& c = compiled();
  Session session(test::cpu_target());
  CompiledModel model = session.compile(c.quantized);
  int agree = 0;
  for (size_t s = 0; s < c.inputs.size(); ++s) {
    const int r = kTrainRows + static_cast<int>(s);
    Tensor x(DType::kF32, {1, 1, 8, 8});
    std::copy_n(&c.digits.x[static_cast<size_t>(r) * 64], 64, x.as<float>());
    const Tensor y = model.run({{"x", x}}).begin()->second;
    std::vector<float> cpu(y.as<float>(), y.as<float>() + 10), int8(10);
    for (int n = 0; n < 10; ++n) int8[n] = c.outputs[s][n] * c.program.layers.back().out_scale[n];
    agree += argmax(cpu) == argmax(int8);
  }
  EXPECT_GE(agree, static_cast<int>(c.inputs.size()) * 97 / 100);
}

// fpga shares the int8 program but generates dense datapaths only: the CNN is refused by name,
// at dispatch, with the target that lowers it.
TEST(CortexmCnn, FpgaRefusesTheConvolutionsByName) {
  const CompiledCnn& c = compiled();
  int rc = 0;
  const std::string log =
      rlx_cli(fmt::format("compile '{}' --target fpga -o '{}'",
                          (c.dir.parent_path() / "digits_cnn.rlx").string(),
                          (c.dir.parent_path() / "fpga").string()),
              &rc);
  EXPECT_NE(rc, 0) << log;
  EXPECT_NE(log.find("QConv"), std::string::npos) << log;
  EXPECT_NE(log.find("fpga generates dense layers only so far"), std::string::npos) << log;
  EXPECT_NE(log.find("cortexm lowers int8 convolution networks"), std::string::npos) << log;
}

class CortexmCnnFirmware : public ::testing::TestWithParam<Board> {};

TEST_P(CortexmCnnFirmware, QemuOutputsEqualTheHostReference) {
  const Board board = GetParam();
  if (std::string why = firmware_skip_reason(board); !why.empty()) GTEST_SKIP() << why;
  const CompiledCnn& c = compiled();
  const long long insn = run_firmware(board, c.dir, c.inputs, c.outputs);
  EXPECT_GT(insn, 0);
  std::stringstream report;
  report << std::ifstream(c.dir / "cortexm_sizes.txt").rdbuf();
  std::printf(
      "digits CNN, %s on %s: %zu samples equal the host reference, int8 accuracy %.4f, %lld "
      "instructions per inference\n%s",
      board.cpu, board.machine, c.outputs.size(), c.int8_accuracy, insn, report.str().c_str());
  RecordProperty("instructions_per_inference", std::to_string(insn));
}

INSTANTIATE_TEST_SUITE_P(Boards, CortexmCnnFirmware, ::testing::ValuesIn(boards()),
                         [](const auto& info) { return board_test_name(info.param); });

}  // namespace
