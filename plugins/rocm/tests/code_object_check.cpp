#include "code_object_check.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

#include "test_support.h"

namespace rlx::test {

namespace {

std::string head(const std::string& text) {
  return text.size() > 3000 ? text.substr(0, 3000) + "\n..." : text;
}

}  // namespace

CommandOutput run_command(const std::string& cmd) {
  CommandOutput o;
  if (FILE* pipe = popen((cmd + " 2>&1").c_str(), "r")) {
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) o.text.append(buf, n);
    o.status = pclose(pipe);
  }
  return o;
}

std::string llvm_tools_dir() {
  for (const char* dir : {"/usr/lib/llvm-17/bin/", "/usr/lib/llvm-16/bin/", "/usr/lib/llvm-15/bin/",
                          "/usr/lib/llvm-14/bin/", "/opt/rocm/llvm/bin/"})
    if (::access((std::string(dir) + "llvm-mc").c_str(), X_OK) == 0 &&
        ::access((std::string(dir) + "llvm-objdump").c_str(), X_OK) == 0 &&
        ::access((std::string(dir) + "llvm-readelf").c_str(), X_OK) == 0)
      return dir;
  return "";
}

std::vector<std::string> kernel_names(const std::string& source) {
  static const std::regex entry(
      R"(extern "C" __global__ void (?:__launch_bounds__\(\d+\) )?(\w+)\()");
  std::vector<std::string> out;
  for (std::sregex_iterator it(source.begin(), source.end(), entry), end; it != end; ++it)
    out.push_back((*it)[1]);
  return out;
}

std::string check_code_object(const std::string& code_object, const std::string& arch,
                              const std::vector<std::string>& kernels) {
  const std::string tools = llvm_tools_dir();
  if (tools.empty()) return "no LLVM with the AMDGPU target here (llvm-mc, llvm-objdump)";
  TempDir dir;
  const std::string object = (dir.path() / "kernels.hsaco").string();
  const std::string disassembly = (dir.path() / "kernels.s").string();
  std::ofstream(object, std::ios::binary) << code_object;

  // The metadata: the target and each kernel's name.
  CommandOutput notes = run_command(fmt::format("'{}llvm-readelf' --notes '{}'", tools, object));
  if (notes.status != 0) return "llvm-readelf cannot read the code object:\n" + head(notes.text);
  if (notes.text.find("amdhsa.target:") == std::string::npos ||
      notes.text.find("amdgcn-amd-amdhsa--" + arch) == std::string::npos)
    return fmt::format("the code object's metadata names no target amdgcn-amd-amdhsa--{}:\n{}",
                       arch, head(notes.text));
  static const std::regex name_entry(R"(\.name:\s+(\w+))");
  std::vector<std::string> named;
  for (std::sregex_iterator it(notes.text.begin(), notes.text.end(), name_entry), end; it != end;
       ++it)
    named.push_back((*it)[1]);
  for (const std::string& k : kernels)
    if (std::find(named.begin(), named.end(), k) == named.end())
      return fmt::format("kernel {} is not in the code object's metadata:\n{}", k,
                         head(notes.text));

  // The machine code: disassembled for the architecture, with no word it does not know, then
  // assembled again.
  CommandOutput dis = run_command(fmt::format("'{}llvm-objdump' -d --mcpu={} '{}'", tools,
                                              arch.substr(0, arch.find(':')), object));
  if (dis.status != 0) return "llvm-objdump cannot disassemble the code object:\n" + head(dis.text);
  if (dis.text.find("<unknown>") != std::string::npos)
    return "the code object holds words that are no " + arch + " instruction:\n" + head(dis.text);
  // llvm-objdump writes each instruction on a line of its own after a tab (with its address
  // and encoding as a comment), the rest is headers and labels.
  std::string instructions, line;
  size_t count = 0;
  for (std::stringstream lines(dis.text); std::getline(lines, line);)
    if (!line.empty() && line[0] == '\t') {
      instructions += line + "\n";
      ++count;
    }
  if (count == 0) return "the code object holds no instructions:\n" + head(dis.text);
  std::ofstream(disassembly) << instructions;
  CommandOutput as = run_command(fmt::format(
      "'{}llvm-mc' --triple=amdgcn-amd-amdhsa --mcpu={} -filetype=obj "
      "'{}' -o '{}'",
      tools, arch.substr(0, arch.find(':')), disassembly, (dir.path() / "again.o").string()));
  if (as.status != 0)
    return fmt::format("the code object's {} instructions do not assemble for {}:\n{}", count, arch,
                       head(as.text));
  return "";
}

}  // namespace rlx::test
