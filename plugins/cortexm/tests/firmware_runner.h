// What the cortexm tests share: the rlx binary and the shell, a scratch folder removed at exit,
// `rlx compile --target cortexm` of a graph, and firmware built by arm-none-eabi-gcc and run by
// qemu-system-arm with outputs checked row by row.
#pragma once
#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "rlx/core/graph.h"

namespace rlx::cortexm::testing {

// Runs a shell command; its stdout, and its exit status in *rc.
std::string shell(const std::string& cmd, int* rc = nullptr);
// The rlx binary with the test's plugin folder; stdout and stderr.
std::string rlx_cli(const std::string& args, int* rc);
int argmax(const std::vector<float>& v);
// This test program's scratch folder (removed when it ends).
std::filesystem::path scratch_root();
// rlx compile of `graph` into root/name; returns the folder.
std::filesystem::path compile_graph(const Graph& graph, const std::filesystem::path& root,
                                    const std::string& name);

struct Board {
  const char* cpu;
  const char* machine;
};
void PrintTo(const Board& b, std::ostream* os);
// The emulated boards: Cortex-M4 on mps2-an386, M7 on mps2-an500, M55 on mps3-an547.
const std::vector<Board>& boards();
// A parameterized test's name for the board ("cortexm4").
std::string board_test_name(const Board& b);
// Why firmware cannot run here (no toolchain, no qemu, no such machine), or "".
std::string firmware_skip_reason(const Board& board);
// Builds a firmware of the model in `dir` with the test inputs, runs it on the board and checks
// every output row against `want` (GoogleTest assertions); returns the instructions per
// inference, or -1 after a failure.
long long run_firmware(const Board& board, const std::filesystem::path& dir,
                       const std::vector<std::vector<int8_t>>& inputs,
                       const std::vector<std::vector<int32_t>>& want);

}  // namespace rlx::cortexm::testing
