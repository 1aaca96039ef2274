// Checks an AMD GPU code object with the LLVM tools ROCm's compiler comes with (llvm-readelf,
// llvm-objdump, llvm-mc; Debian's hipcc brings LLVM 15): its metadata names the architecture and
// every kernel of the source, and its machine code disassembles for that architecture and
// assembles again, so a code object that is not valid gfx90a machine code fails.
#pragma once
#include <string>
#include <vector>

namespace rlx::test {

// What a shell command printed on stdout and stderr, and its exit status.
struct CommandOutput {
  int status = -1;
  std::string text;
};
CommandOutput run_command(const std::string& cmd);

// The folder of an LLVM that knows the AMDGPU targets (with a slash), or "" when none is here.
std::string llvm_tools_dir();

// The entry points of generated HIP or CUDA source: every `extern "C" __global__ void` function.
std::vector<std::string> kernel_names(const std::string& source);

// "" when `code_object` is a valid code object for `arch` holding each of `kernels`; else what
// is wrong, with the tool's output.
std::string check_code_object(const std::string& code_object, const std::string& arch,
                              const std::vector<std::string>& kernels);

}  // namespace rlx::test
