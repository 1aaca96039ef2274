// OpenCL C -> SPIR-V with the LLVM tools Intel's own stack uses: clang (-target spir64) emits
// LLVM bitcode and the SPIR-V/LLVM translator (llvm-spirv) turns it into a SPIR-V 1.x module
// that Level Zero's zeModuleCreate and ocloc accept.
#pragma once
#include <filesystem>
#include <string>

namespace rlx::oneapi {

// The tool to run: the environment variable `env` when set, else the first of `names` found in
// PATH; empty when none is.
std::string find_tool(const char* env, std::initializer_list<const char*> names);

// Compiles `cl` to `spv`; throws a user error naming the missing tool or quoting its output.
void compile_to_spirv(const std::filesystem::path& cl, const std::filesystem::path& spv);

}  // namespace rlx::oneapi
