// End to end: the digits MLP is trained and quantized here, `rlx compile --target cortexm`
// writes its C, the host int8 reference (sdk/int8's int8_program.cpp) and an independent
// per-element computation of the documented rule agree, and firmware built by arm-none-eabi-gcc
// returns the same int32 outputs bit for bit under qemu-system-arm on Cortex-M4 (mps2-an386), M7
// (mps2-an500) and M55 (mps3-an547). Without the toolchain or qemu the firmware tests skip.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "c_emitter.h"
#include "digits_mlp.h"
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

std::string shell(const std::string& cmd, int* rc = nullptr) {
  std::string out;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe) {
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
    const int status = pclose(pipe);
    if (rc) *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  return out;
}

std::string rlx_cli(const std::string& args, int* rc) {
  return shell(
      fmt::format("'{}' --plugin-path '{}' {} 2>&1", RLX_BINARY, RLX_TEST_PLUGIN_DIR, args), rc);
}

int argmax(const std::vector<float>& v) {
  return static_cast<int>(std::max_element(v.begin(), v.end()) - v.begin());
}

fs::path scratch_root() {
  return fs::temp_directory_path() / fmt::format("rlx_cortexm_{}", getpid());
}

// Removes the scratch folder when the test program ends.
class ScratchCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(scratch_root(), ec);
  }
};
const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new ScratchCleanup);

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

// rlx compile of `graph` into root/name; returns the folder.
fs::path compile_graph(const Graph& graph, const fs::path& root, const std::string& name) {
  std::ofstream(root / (name + ".rlx")) << print_graph(graph);
  const fs::path dir = root / name;
  int rc = -1;
  std::string log = rlx_cli(fmt::format("compile '{}' --target cortexm -o '{}'",
                                        (root / (name + ".rlx")).string(), dir.string()),
                            &rc);
  if (rc != 0) throw std::runtime_error("rlx compile failed: " + log);
  return dir;
}

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
TEST(CortexmDigits, ReferenceFollowsTheDocumentedRule) {
  const Compiled& c = compiled();
  const Graph mir = load_graph_file(c.dir / "model.mir");
  std::vector<const Node*> qm;
  for (const Node& n : mir.nodes)
    if (n.op == "QMatMul") qm.push_back(&n);
  ASSERT_EQ(qm.size(), 2u);
  auto constant = [&](const Node& n, int i) {
    const Value& v = mir.values[n.inputs[i]];
    return v.producer >= 0 ? mir.nodes[v.producer].attr_tensor("value") : mir.weights.at(v.name);
  };
  for (size_t s = 0; s < c.inputs.size(); s += 7) {
    std::vector<int> x(c.inputs[s].begin(), c.inputs[s].end());
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
        next.push_back(std::clamp(static_cast<int>(std::floor(real + 0.5L)) + yz, 0, 255));
      }
      x = next;
    }
    for (int n = 0; n < c.program.output_size; ++n)
      EXPECT_EQ(out[n], c.outputs[s][n]) << "sample " << s << " class " << n;
  }
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

struct Board {
  const char* cpu;
  const char* machine;
};

void PrintTo(const Board& b, std::ostream* os) {
  *os << b.cpu << " on " << b.machine;
}

class CortexmFirmware : public ::testing::TestWithParam<Board> {};

// Builds a firmware of the model in `dir` with the test inputs, runs it on the board and checks
// every output row against `want`; returns the instructions per inference.
long long run_firmware(const Board& board, const fs::path& dir,
                       const std::vector<std::vector<int8_t>>& inputs,
                       const std::vector<std::vector<int32_t>>& want) {
  const fs::path fw = dir / "firmware";
  fs::create_directories(fw);
  {
    std::ofstream h(fw / "inputs.h");
    h << "#include <stdint.h>\n#include \"model.h\"\n#define RLX_FW_SAMPLES " << inputs.size()
      << "\nextern const int8_t rlx_fw_inputs[RLX_FW_SAMPLES][RLX_MODEL_INPUT_SIZE];\n";
    std::ofstream s(fw / "inputs.c");
    s << "#include \"inputs.h\"\nconst int8_t rlx_fw_inputs[RLX_FW_SAMPLES][RLX_MODEL_INPUT_SIZE] "
         "= {\n";
    for (const auto& in : inputs) {
      s << " {";
      for (int8_t v : in) s << static_cast<int>(v) << ",";
      s << "},\n";
    }
    s << "};\n";
  }
  std::string flags;
  for (const CpuFlags& f : known_cpus())
    if (f.cpu == board.cpu) flags = f.flags;
  const std::string src = std::string(RLX_CORTEXM_DIR) + "/tests/firmware";
  const fs::path elf = fw / (std::string(board.cpu) + ".elf");
  int rc = -1;
  std::string log = shell(
      fmt::format(
          "'{}' {} -O2 -std=c99 -nostartfiles --specs=rdimon.specs -T '{}/mps.ld' -I '{}' -I '{}' "
          "'{}/startup.c' '{}/harness.c' '{}/model.c' '{}/inputs.c' -o '{}' 2>&1",
          arm_gcc(), flags, src, dir.string(), fw.string(), src, src, dir.string(), fw.string(),
          elf.string()),
      &rc);
  EXPECT_EQ(rc, 0) << log;
  if (rc != 0) return -1;
  const std::string run = shell(
      fmt::format("timeout 120 qemu-system-arm -machine {} -nographic -monitor none -serial none "
                  "-semihosting-config enable=on,target=native -icount shift=0 -kernel '{}' 2>&1",
                  board.machine, elf.string()),
      &rc);
  EXPECT_EQ(rc, 0) << run.substr(0, 2000);
  std::stringstream lines(run);
  size_t row = 0;
  long long insn = -1;
  for (std::string line; std::getline(lines, line);) {
    std::stringstream l(line);
    std::string tag;
    l >> tag;
    if (tag == "insn_per_inference") l >> insn;
    if (tag != "o") continue;
    if (row >= want.size()) break;
    std::vector<int32_t> got;
    for (long long v; l >> v;) got.push_back(static_cast<int32_t>(v));
    EXPECT_EQ(got, want[row]) << board.cpu << " sample " << row;
    if (got != want[row]) return -1;
    ++row;
  }
  EXPECT_EQ(row, want.size()) << run.substr(0, 2000);
  return insn;
}

TEST_P(CortexmFirmware, QemuOutputsEqualTheHostReference) {
  const Board board = GetParam();
  if (arm_gcc().empty())
    GTEST_SKIP() << "arm-none-eabi-gcc is not on PATH (apt install gcc-arm-none-eabi "
                    "libnewlib-arm-none-eabi)";
  if (shell("command -v qemu-system-arm").empty())
    GTEST_SKIP() << "qemu-system-arm is not on PATH (apt install qemu-system-arm)";
  if (shell(fmt::format("qemu-system-arm -machine help | grep -w {}", board.machine)).empty())
    GTEST_SKIP() << "this qemu-system-arm has no machine " << board.machine;
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

INSTANTIATE_TEST_SUITE_P(Boards, CortexmFirmware,
                         ::testing::Values(Board{"cortex-m4", "mps2-an386"},
                                           Board{"cortex-m7", "mps2-an500"},
                                           Board{"cortex-m55", "mps3-an547"}),
                         [](const auto& info) {
                           std::string n = info.param.cpu;
                           n.erase(std::remove(n.begin(), n.end(), '-'), n.end());
                           return n;
                         });

}  // namespace
