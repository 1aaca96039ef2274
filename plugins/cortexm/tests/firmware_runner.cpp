#include "firmware_runner.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "c_emitter.h"
#include "rlx/core/ir_text.h"
#include "size_report.h"

namespace rlx::cortexm::testing {

namespace fs = std::filesystem;

std::string shell(const std::string& cmd, int* rc) {
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

namespace {

// Removes the scratch folder when the test program ends.
class ScratchCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(scratch_root(), ec);
  }
};
const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new ScratchCleanup);
}  // namespace

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

void PrintTo(const Board& b, std::ostream* os) {
  *os << b.cpu << " on " << b.machine;
}

const std::vector<Board>& boards() {
  static const std::vector<Board> kBoards = {
      {"cortex-m4", "mps2-an386"}, {"cortex-m7", "mps2-an500"}, {"cortex-m55", "mps3-an547"}};
  return kBoards;
}

std::string board_test_name(const Board& b) {
  std::string n = b.cpu;
  n.erase(std::remove(n.begin(), n.end(), '-'), n.end());
  return n;
}

std::string firmware_skip_reason(const Board& board) {
  if (arm_gcc().empty())
    return "arm-none-eabi-gcc is not on PATH (apt install gcc-arm-none-eabi "
           "libnewlib-arm-none-eabi)";
  if (shell("command -v qemu-system-arm").empty())
    return "qemu-system-arm is not on PATH (apt install qemu-system-arm)";
  if (shell(fmt::format("qemu-system-arm -machine help | grep -w {}", board.machine)).empty())
    return fmt::format("this qemu-system-arm has no machine {}", board.machine);
  return "";
}

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

}  // namespace rlx::cortexm::testing
