#include "spirv_compile.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "rlx/core/error.h"

namespace rlx::oneapi {

namespace {

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs a command line through the shell, returning its exit status and combined output.
int run(const std::vector<std::string>& argv, std::string* output) {
  std::string cmd;
  for (const auto& a : argv) cmd += quote(a) + " ";
  cmd += "2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) output->append(buf, n);
  int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

std::string find_tool(const char* env, std::initializer_list<const char*> names) {
  if (const char* v = std::getenv(env); v && *v) return v;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (const char* name : names) {
    size_t start = 0;
    while (start <= dirs.size()) {
      size_t end = dirs.find(':', start);
      if (end == std::string::npos) end = dirs.size();
      std::filesystem::path candidate = std::filesystem::path(dirs.substr(start, end - start)) / name;
      if (!candidate.parent_path().empty() && access(candidate.c_str(), X_OK) == 0) return candidate.string();
      start = end + 1;
    }
  }
  return "";
}

void compile_to_spirv(const std::filesystem::path& cl, const std::filesystem::path& spv) {
  std::string clang = find_tool("RLX_CLANG", {"clang-14", "clang"});
  std::string translator = find_tool("RLX_LLVM_SPIRV", {"llvm-spirv-14", "llvm-spirv"});
  if (clang.empty() || translator.empty())
    throw_user_error(fmt::format(
        "oneapi: wrote {} but cannot make SPIR-V: {} not found (install clang-14 and llvm-spirv-14, "
        "or set RLX_CLANG / RLX_LLVM_SPIRV)",
        cl.string(), clang.empty() ? "clang" : "llvm-spirv"));
  std::filesystem::path bc = spv;
  bc.replace_extension(".bc");
  // -disable-llvm-passes: the translator accepts what clang's front end emits; LLVM's optimiser
  // may introduce integer widths and intrinsics SPIR-V cannot express. The driver optimises.
  std::string out;
  int rc = run({clang, "-cl-std=CL1.2", "-target", "spir64", "-O2", "-Xclang", "-disable-llvm-passes",
                "-Xclang", "-finclude-default-header", "-emit-llvm", "-c", "-o", bc.string(), cl.string()},
               &out);
  if (rc != 0)
    throw Error(ErrorKind::kCompile, fmt::format("oneapi: {} failed on {} (exit {}):\n{}", clang, cl.string(), rc, out));
  out.clear();
  rc = run({translator, bc.string(), "-o", spv.string()}, &out);
  std::error_code ec;
  std::filesystem::remove(bc, ec);
  if (rc != 0)
    throw Error(ErrorKind::kCompile,
                fmt::format("oneapi: {} failed on {} (exit {}):\n{}", translator, cl.string(), rc, out));
}

}  // namespace rlx::oneapi
