// Writes the C of an Int8Program: model.c (weights as const arrays, one run function), model.h
// (sizes, arena, I/O layout), the runtime header, and build fragments for Make and CMake.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "int8_program.h"
#include "rlx/core/target.h"

namespace rlx::cortexm {

// The int8 program is the SDK's (sdk/int8), shared with the fpga target.
using int8::Int8Program;
using int8::Layer;
using int8::LayerKind;
using int8::Window;

// The CPUs the build fragments know, with their gcc flags.
struct CpuFlags {
  std::string cpu;    // "cortex-m4"
  std::string flags;  // "-mcpu=cortex-m4 -mthumb ..."
};
const std::vector<CpuFlags>& known_cpus();

// The text of the SDK's int8 arithmetic, sdk/int8/rlx_cm_int8.h (embedded at build time).
const char* runtime_header_text();

std::string model_header(const Int8Program& p);
std::string model_source(const Int8Program& p);

// Writes every file into dir and returns them as artifacts; `cpu` (empty: cortex-m4) is the
// build fragments' default core.
std::vector<Artifact> write_sources(const Int8Program& p, const std::filesystem::path& dir,
                                    const std::string& cpu = {});

}  // namespace rlx::cortexm
