// End to end: the digits MLP of the cortexm tests (trained and quantized here, ending at the
// int32 accumulators of its last layer) goes through `rlx compile --target fpga`; Verilator
// builds the SystemVerilog with testbench.cpp, and the simulated outputs equal the SDK's host
// int8 reference (run_reference, which the cortexm tests hold against the float model and a
// per-element computation of the rule) bit for bit, one inference at a time and streamed with
// random stalls on both handshakes; the measured cycles equal the state machine's count. Also:
// refusals by name and the listing. Without verilator the simulation tests skip.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "design.h"
#include "digits_mlp.h"
#include "int8_program.h"
#include "rlx/core/ir_text.h"

namespace {

namespace fs = std::filesystem;
using namespace rlx;
using rlx::cortexm::testing::Digits;
using rlx::cortexm::testing::Mlp;

constexpr int kTrainRows = 1437;  // the rest (360) is the test set, as in the cortexm tests

std::string shell(const std::string& cmd, int* rc) {
  std::string out;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe) {
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
    const int status = pclose(pipe);
    *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  return out;
}

// `env` is prepended to the command (RLX_FPGA_PARALLELISM=...).
std::string rlx_cli(const std::string& args, int* rc, const std::string& env = "") {
  return shell(
      fmt::format("{} '{}' --plugin-path '{}' {} 2>&1", env, RLX_BINARY, RLX_TEST_PLUGIN_DIR, args),
      rc);
}

bool have_verilator() {
  int rc = -1;
  shell("command -v verilator >/dev/null 2>&1", &rc);
  return rc == 0;
}

fs::path scratch_root() {
  return fs::temp_directory_path() / fmt::format("rlx_fpga_{}", getpid());
}

class ScratchCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(scratch_root(), ec);
  }
};
const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new ScratchCleanup);

// The trained network and its quantized test rows, once per test program.
struct Digits8 {
  Digits digits;
  Mlp mlp;
  fs::path model;  // the quantized graph as rlx text
};

const Digits8& digits8() {
  static const Digits8 d = [] {
    Digits8 d;
    d.digits = cortexm::testing::load_digits(RLX_DIGITS_CSV);
    d.mlp = cortexm::testing::train_mlp(d.digits, kTrainRows);
    fs::create_directories(scratch_root());
    d.model = scratch_root() / "digits_mlp.rlx";
    std::ofstream(d.model) << print_graph(
        cortexm::testing::quantized_graph(d.mlp, d.digits, kTrainRows));
    return d;
  }();
  return d;
}

// rlx compile --target fpga with parallelism p; returns the folder.
fs::path compile_design(int p) {
  const fs::path dir = scratch_root() / fmt::format("design_p{}", p);
  int rc = -1;
  const std::string log = rlx_cli(
      fmt::format("compile '{}' --target fpga -o '{}'", digits8().model.string(), dir.string()),
      &rc, fmt::format("RLX_FPGA_PARALLELISM={}", p));
  if (rc != 0) throw std::runtime_error("rlx compile failed: " + log);
  return dir;
}

// Builds the design in dir with the testbench; returns the simulator's path.
fs::path build_simulator(const fs::path& dir) {
  int rc = -1;
  const std::string log =
      shell(fmt::format("cd '{}' && verilator --cc --exe --build -j 2 -Wall -f rlx_model.f "
                        "--top-module {} --Mdir obj -o Vsim '{}' 2>&1",
                        dir.string(), fpga::kTopModule, RLX_FPGA_TESTBENCH),
            &rc);
  if (rc != 0) throw std::runtime_error("verilator failed:\n" + log);
  return dir / "obj" / "Vsim";
}

struct SimResult {
  std::vector<std::vector<int32_t>> outputs;
  std::vector<long> cycles;
};

SimResult simulate(const fs::path& dir, const fs::path& sim, const int8::Int8Program& prog,
                   const std::vector<std::vector<int8_t>>& inputs, unsigned seed) {
  {
    std::ofstream in(dir / "inputs.txt");
    for (const auto& row : inputs) {
      for (int8_t v : row) in << int{v} << ' ';
      in << '\n';
    }
  }
  int rc = -1;
  // The ROM files are read relative to the working directory: run in the design's folder.
  const std::string out =
      shell(fmt::format("cd '{}' && '{}' {} {} {} < inputs.txt 2>&1", dir.string(), sim.string(),
                        prog.input_size, prog.output_size, seed),
            &rc);
  if (rc != 0) throw std::runtime_error("the simulation failed:\n" + out);
  SimResult r;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream l(line);
    std::string word;
    l >> word;
    if (word != "out") continue;
    std::vector<int32_t> v;
    for (int i = 0; i < prog.output_size; ++i) {
      long x = 0;
      l >> x;
      v.push_back(static_cast<int32_t>(x));
    }
    long cycles = -1;
    l >> word >> cycles;
    r.outputs.push_back(std::move(v));
    r.cycles.push_back(cycles);
  }
  return r;
}

// The design at parallelism p against the host reference on `rows` test rows.
void check_design_against_reference(int p, int rows) {
  if (!have_verilator()) GTEST_SKIP() << "verilator is not installed (apt-get install verilator)";
  const Digits8& d = digits8();
  const fs::path dir = compile_design(p);
  const int8::Int8Program prog = int8::lower_int8(load_graph_file(dir / "model.mir"), "fpga");
  ASSERT_EQ(prog.layers.size(), 2u);
  ASSERT_FALSE(prog.softmax);
  std::vector<std::vector<int8_t>> inputs;
  std::vector<std::vector<int32_t>> want;
  for (int r = kTrainRows; r < std::min(d.digits.n, kTrainRows + rows); ++r) {
    inputs.push_back(int8::quantize_input(prog, &d.digits.x[static_cast<size_t>(r) * 64]));
    want.push_back(int8::run_reference(prog, inputs.back().data()));
  }
  const fs::path sim = build_simulator(dir);

  const SimResult one = simulate(dir, sim, prog, inputs, 0);
  ASSERT_EQ(one.outputs.size(), inputs.size());
  const int64_t expected_cycles = fpga::cycles_per_inference(prog, p);
  for (size_t s = 0; s < inputs.size(); ++s) {
    ASSERT_EQ(one.outputs[s], want[s]) << "inference " << s;
    ASSERT_EQ(one.cycles[s], expected_cycles) << "inference " << s;
  }
  const SimResult streamed = simulate(dir, sim, prog, inputs, 12345);
  ASSERT_EQ(streamed.outputs.size(), inputs.size());
  for (size_t s = 0; s < inputs.size(); ++s)
    ASSERT_EQ(streamed.outputs[s], want[s]) << "streamed inference " << s;

  // The design's own account of its latency says the same.
  std::stringstream json;
  json << std::ifstream(dir / "fpga_design.json").rdbuf();
  EXPECT_NE(json.str().find(fmt::format("\"cycles_per_inference\": {}", expected_cycles)),
            std::string::npos)
      << json.str();
  std::printf(
      "fpga P=%d: %zu digits rows equal the host int8 reference bit for bit; %lld cycles "
      "per inference\n",
      p, inputs.size(), static_cast<long long>(expected_cycles));
}

// The default parallelism on every test row (the simulation takes well under a second).
TEST(FpgaDesign, VerilatorOutputsEqualTheHostReference) {
  check_design_against_reference(fpga::kDefaultParallelism, 1000);
}

// 3 lanes divide neither 64 nor 32 inputs: the last weight word of each row is padded.
TEST(FpgaDesign, ParallelismThatDoesNotDivideTheInputs) {
  check_design_against_reference(3, 60);
}

bool have_yosys() {
  int rc = -1;
  shell("command -v yosys >/dev/null 2>&1", &rc);
  return rc == 0;
}

// The cells of yosys's `stat` output, by name.
std::map<std::string, long> read_cells(const fs::path& stat) {
  std::map<std::string, long> cells;
  std::ifstream in(stat);
  const std::regex row(R"(^\s+(\$?[A-Za-z_][A-Za-z0-9_$]*)\s+([0-9]+)\s*$)");
  std::smatch m;
  for (std::string line; std::getline(in, line);)
    if (std::regex_match(line, m, row)) cells[m[1]] += std::stol(m[2]);
  return cells;
}

struct Resources {
  long luts = 0, ffs = 0, bram = 0, dsp = 0;
};

// LUTs, flip-flops, block RAMs and DSP blocks of one family's cells.
Resources count_resources(const std::map<std::string, long>& cells, bool ice40) {
  Resources r;
  for (const auto& [name, n] : cells) {
    if (ice40) {
      if (name == "SB_LUT4") r.luts += n;
      if (name.starts_with("SB_DFF")) r.ffs += n;
      if (name.starts_with("SB_RAM40")) r.bram += n;
      if (name == "SB_MAC16") r.dsp += n;
    } else {
      if (std::regex_match(name, std::regex("LUT[1-6](_2)?"))) r.luts += n;
      if (std::regex_match(name, std::regex("FD[RSCP]E(_1)?"))) r.ffs += n;
      if (name.starts_with("RAMB")) r.bram += n;
      if (name.starts_with("DSP48")) r.dsp += n;
    }
  }
  return r;
}

// yosys synthesizes the default design for iCE40 (synth_ice40) and for Xilinx 7-series
// (synth_xilinx); the weight ROMs become block RAM on iCE40, and the resources are written next
// to the design (fpga_resources.txt) and printed. About 40 s on two cores, most of it iCE40's.
TEST(FpgaDesign, YosysSynthesizesForIce40AndXilinx) {
  if (!have_yosys()) GTEST_SKIP() << "yosys is not installed (apt-get install yosys)";
  const fs::path dir = compile_design(fpga::kDefaultParallelism);
  std::string sources;
  std::ifstream list(dir / "rlx_model.f");
  for (std::string f; std::getline(list, f);) sources += " " + f;
  std::string report = fmt::format(
      "resources of {} (parallelism {}), yosys synthesis\n"
      "family   LUTs     FFs      BRAM  DSP\n",
      fpga::kTopModule, fpga::kDefaultParallelism);
  for (const char* family : {"ice40", "xilinx"}) {
    int rc = -1;
    const std::string log = shell(
        // -flatten for Xilinx as synth_ice40 does by default, so `stat` counts one module.
        fmt::format("cd '{}' && yosys -q -p 'read_verilog -sv{}; synth_{} -top {}{}; tee -o "
                    "{}_stat.txt stat' 2>&1",
                    dir.string(), sources, family, fpga::kTopModule,
                    family[0] == 'x' ? " -flatten" : "", family),
        &rc);
    ASSERT_EQ(rc, 0) << log;
    const Resources r =
        count_resources(read_cells(dir / fmt::format("{}_stat.txt", family)), family[0] == 'i');
    EXPECT_GT(r.luts, 0) << family;
    EXPECT_GT(r.ffs, 0) << family;
    if (family[0] == 'i') EXPECT_GE(r.bram, 2) << "the weight ROMs are not in block RAM";
    report += fmt::format("{:<8} {:<8} {:<8} {:<5} {}\n", family, r.luts, r.ffs, r.bram, r.dsp);
  }
  std::ofstream(dir / "fpga_resources.txt") << report;
  std::printf("%s", report.c_str());
}

TEST(FpgaDesign, CompileWritesTheDesign) {
  const fs::path dir = compile_design(fpga::kDefaultParallelism);
  for (const char* f :
       {"rlx_model_dense0.sv", "rlx_model_dense1.sv", "rlx_model.sv", "rlx_model.f", "README.md",
        "fpga_design.json", "dense0_weights.hex", "dense0_bias.hex", "dense0_mult.hex",
        "dense0_shift.hex", "dense1_weights.hex", "dense1_bias.hex"})
    EXPECT_TRUE(fs::exists(dir / f)) << f;
  // 32 outputs of 64 inputs, 4 lanes a word: 16 words per output, 8 hex digits each.
  std::ifstream w(dir / "dense0_weights.hex");
  int lines = 0;
  for (std::string line; std::getline(w, line); ++lines) ASSERT_EQ(line.size(), 8u) << line;
  EXPECT_EQ(lines, 32 * 16);
  EXPECT_FALSE(fs::exists(dir / "dense1_mult.hex"));  // the int32 layer does not requantize
}

TEST(FpgaDesign, FloatGraphsAreRefusedByName) {
  const Digits8& d = digits8();
  const fs::path model = scratch_root() / "digits_f32.rlx";
  std::ofstream(model) << print_graph(cortexm::testing::float_graph(d.mlp));
  int rc = 0;
  const std::string log = rlx_cli(fmt::format("compile '{}' --target fpga -o '{}'", model.string(),
                                              (scratch_root() / "f32").string()),
                                  &rc);
  EXPECT_NE(rc, 0) << log;
  EXPECT_NE(log.find("MatMul"), std::string::npos) << log;
  EXPECT_NE(log.find("fpga generates int8 datapaths only"), std::string::npos) << log;
  EXPECT_NE(log.find("rlx quantize --scheme int8"), std::string::npos) << log;
}

TEST(FpgaDesign, SoftmaxIsRefusedWithTheWayOut) {
  const Digits8& d = digits8();
  const fs::path model = scratch_root() / "digits_softmax.rlx";
  std::ofstream(model) << print_graph(
      cortexm::testing::quantized_graph(d.mlp, d.digits, kTrainRows, true));
  int rc = 0;
  const std::string log = rlx_cli(fmt::format("compile '{}' --target fpga -o '{}'", model.string(),
                                              (scratch_root() / "softmax").string()),
                                  &rc);
  EXPECT_NE(rc, 0) << log;
  EXPECT_NE(log.find("fpga does not generate Softmax yet"), std::string::npos) << log;
}

TEST(FpgaDesign, BadParallelismIsRefused) {
  digits8();
  int rc = 0;
  const std::string log =
      rlx_cli(fmt::format("compile '{}' --target fpga -o '{}'", digits8().model.string(),
                          (scratch_root() / "bad_p").string()),
              &rc, "RLX_FPGA_PARALLELISM=0");
  EXPECT_NE(rc, 0) << log;
  EXPECT_NE(log.find("RLX_FPGA_PARALLELISM"), std::string::npos) << log;
}

TEST(FpgaDesign, ListedAsCodegenOnly) {
  int rc = 0;
  const std::string list = rlx_cli("--list-targets", &rc);
  ASSERT_EQ(rc, 0) << list;
  std::istringstream lines(list);
  bool found = false;
  for (std::string line; std::getline(lines, line);)
    if (line.find("  fpga ") == 0 || line.rfind("  fpga", 0) == 0) {
      found = true;
      EXPECT_NE(line.find("codegen-only"), std::string::npos) << line;
      EXPECT_NE(line.find("Verilator"), std::string::npos) << line;
    }
  EXPECT_TRUE(found) << list;
}

}  // namespace
