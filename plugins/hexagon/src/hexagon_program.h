// One LIR program as a freestanding Hexagon program: the kernels as C (loop kernels through the
// SDK's renderer, dot_general as HVX dot products where hvx_dot.h applies and as the shared
// per-output loop kernel elsewhere) and a generated driver: _start lays out every buffer
// statically (inputs and outputs as arrays, constants as const arrays in the image, temporaries
// at their planned offsets in one arena), reads each input from a file in the working folder,
// calls the kernels in program order, writes each output to a file and exits with 0 (3 to 6: a
// file could not be opened, read or written).
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "rlx/core/lir.h"

namespace rlx::hexagon {

inline constexpr const char* kKernelsFile = "hexagon_kernels.c";
inline constexpr const char* kDriverFile = "hexagon_main.c";
inline constexpr const char* kElfFile = "hexagon_program.elf";

struct ProgramSources {
  std::string kernels;  // kKernelsFile
  std::string driver;   // kDriverFile
};

// Throws rlx::Error (kCompile) naming the kernel when the program holds a library call other than
// dot_general, or a dtype the dialect lacks.
ProgramSources render_hexagon_program(const lir::Program& program);

// The file the driver reads graph input j (named `name`) from, and writes output j to.
std::string input_file(size_t j, const std::string& name);
std::string output_file(size_t j, const std::string& name);

// Writes the two sources and the runtime (header and C file) into `dir`; returns their names.
std::vector<std::string> write_program(const ProgramSources& sources,
                                       const std::filesystem::path& dir);

}  // namespace rlx::hexagon
