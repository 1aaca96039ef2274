// Code size and RAM of the generated model per core, measured with the arm-none-eabi toolchain
// when it is on PATH (RLX_ARM_GCC names another gcc): text and rodata of model.o from
// arm-none-eabi-size, the run function's stack from gcc's -fstack-usage, and the arena.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace rlx::cortexm {

struct CoreSize {
  std::string cpu;
  int64_t text = 0, rodata = 0, data = 0, bss = 0;
  int64_t stack = 0;  // bytes of rlx_model_run's frame (kernels are inlined into it)
  int64_t arena = 0;
};

struct SizeReport {
  std::string toolchain;  // the gcc used, or empty when none was found
  std::string why_not;    // why nothing was measured
  std::vector<CoreSize> cores;
};

// The arm gcc to use, or "" when none is found.
std::string arm_gcc();

// Compiles dir/model.c for `cpu` (empty: each known core) in a scratch folder and reads the
// sizes.
SizeReport measure_sizes(const std::filesystem::path& dir, int64_t arena_bytes,
                         const std::string& cpu = {});

// The report as JSON (what cortexm_report.json holds).
std::string size_report_json(const SizeReport& r);
// The same in a line per core, for people (what rlx compile prints).
std::string size_report_text(const SizeReport& r);

}  // namespace rlx::cortexm
