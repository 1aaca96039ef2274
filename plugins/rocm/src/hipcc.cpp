#include "hipcc.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "code_object.h"
#include "dynamic_library.h"
#include "rlx/core/error.h"

namespace rlx::rocm {

namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// Removes the temporary folder on every path out of hipcc_compile.
struct TempFolder {
  fs::path path;
  ~TempFolder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

std::string hipcc_path(std::string* why) {
  std::vector<std::string> tried;
  if (const char* p = std::getenv("RLX_HIPCC"); p && *p) tried.push_back(p);
  if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');)
      if (!dir.empty()) tried.push_back(dir + "/hipcc");
  }
  if (const char* root = std::getenv("ROCM_PATH"); root && *root)
    tried.push_back(std::string(root) + "/bin/hipcc");
  tried.push_back("/opt/rocm/bin/hipcc");
  for (const std::string& p : tried)
    if (::access(p.c_str(), X_OK) == 0) return p;
  if (why) *why = "hipcc not found (on PATH, $ROCM_PATH/bin or /opt/rocm/bin): install hipcc";
  return "";
}

std::string hipcc_compile(const std::string& source, const std::string& arch) {
  std::string why;
  const std::string hipcc = hipcc_path(&why);
  if (hipcc.empty()) throw_unsupported("rocm cannot compile kernels here: " + why);
  char pattern[] = "/tmp/rlx-hipcc-XXXXXX";
  if (!::mkdtemp(pattern))
    throw_internal_error("rocm: cannot make a temporary folder for hipcc in /tmp");
  TempFolder tmp{pattern};
  const fs::path src = tmp.path / "rocm_kernels.hip", out = tmp.path / "rocm_kernels.co",
                 log = tmp.path / "hipcc.log";
  std::ofstream(src, std::ios::binary) << source;
  // The architecture is given, so hipcc need not look for a device (it would, and complain).
  const std::string cmd = fmt::format(
      "'{}' --genco --offload-arch={} -std=c++17 -ffp-contract=off -w '{}' -o '{}' "
      ">'{}' 2>&1",
      hipcc, arch, src.string(), out.string(), log.string());
  const int rc = std::system(cmd.c_str());
  if (rc != 0 || !fs::exists(out)) {
    const std::string text = cuda::tidy_compiler_log(read_all(log));
    throw Error(ErrorKind::kCompile,
                fmt::format("rocm: {} could not compile the generated HIP for {} (exit status "
                            "{}); `rlx compile --target rocm` writes the source. Output:\n{}",
                            hipcc, arch, rc, text));
  }
  return code_object_for(read_all(out), arch, "hipcc's output");
}

}  // namespace rlx::rocm
