#include "hexagon_toolchain.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "hexagon_program.h"
#include "hexagon_runtime.h"
#include "rlx/core/error.h"

namespace rlx::hexagon {

namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// `name` itself when it holds a '/', else the first executable of that name on PATH.
std::string on_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && ::access((dir + "/" + name).c_str(), X_OK) == 0) return dir + "/" + name;
  return "";
}

int exit_status(int rc) {
  return rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

struct Found {
  std::string clang, why;
};

Found find_clang() {
  std::vector<std::string> names;
  if (const char* c = std::getenv("RLX_HEXAGON_CLANG"); c && *c) names.push_back(c);
  names.insert(names.end(), {"clang-14", "clang"});
  for (const std::string& name : names) {
    const std::string clang = on_path(name);
    if (clang.empty()) continue;
    // The backend list is the only reliable test: Debian builds have Hexagon, others may not.
    const std::string probe =
        fmt::format("'{}' -print-targets 2>/dev/null | grep -q ' hexagon '", clang);
    if (std::system(probe.c_str()) != 0) continue;
    if (on_path("ld.lld").empty())
      return {"", "found " + clang + " with a Hexagon backend but no ld.lld on PATH: install lld"};
    return {clang, ""};
  }
  return {"",
          "no clang with a Hexagon backend ($RLX_HEXAGON_CLANG, clang-14, clang on PATH): "
          "install clang (Debian's has the backend) and lld"};
}

}  // namespace

std::string hexagon_clang(std::string* why) {
  static const Found found = find_clang();
  if (found.clang.empty() && why) *why = found.why;
  return found.clang;
}

std::string hexagon_emulator(std::string* why) {
  const char* e = std::getenv("RLX_HEXAGON_EMULATOR");
  if (!e || !*e) {
    if (why) *why = "no Hexagon DSP runtime (FastRPC) here";
    return "";
  }
  const std::string path = on_path(e);
  if (path.empty() && why)
    *why = fmt::format("RLX_HEXAGON_EMULATOR names {}, which is not an executable file", e);
  return path;
}

std::string build_command(const std::string& clang) {
  // -ffp-contract=off: no fused multiply-add, so float results round as the renderer says.
  return fmt::format(
      "'{}' --target=hexagon -mv67 -mhvx -mhvx-length=128b -O2 -std=gnu11 -ffreestanding "
      "-nostdlib -ffp-contract=off -fuse-ld=lld -w -I. {} {} {} -o {}",
      clang, kKernelsFile, kDriverFile, kRuntimeSourceName, kElfFile);
}

void build_program(const std::string& clang, const fs::path& where) {
  const fs::path dir = fs::absolute(where), log = dir / "clang.log";
  const std::string cmd =
      fmt::format("cd '{}' && {} >'{}' 2>&1", dir.string(), build_command(clang), log.string());
  const int rc = std::system(cmd.c_str());
  if (exit_status(rc) != 0 || !fs::exists(dir / kElfFile))
    throw Error(
        ErrorKind::kCompile,
        fmt::format("hexagon: {} could not build the generated program in {} (exit status {}); "
                    "`rlx compile --target hexagon -o DIR` writes the sources. Output:\n{}",
                    clang, dir.string(), exit_status(rc), read_all(log)));
}

void run_program(const std::string& emulator, const fs::path& where) {
  const fs::path dir = fs::absolute(where), log = dir / "run.log";
  const std::string cmd = fmt::format("cd '{}' && '{}' ./{} >'{}' 2>&1", dir.string(), emulator,
                                      kElfFile, log.string());
  const int status = exit_status(std::system(cmd.c_str()));
  if (status == 0) return;
  const char* what = status == 3 || status == 4   ? "could not read an input file"
                     : status == 5 || status == 6 ? "could not write an output file"
                                                  : "failed";
  throw Error(ErrorKind::kDevice,
              fmt::format("hexagon: the program {} under {} in {} (exit status {}). "
                          "Output:\n{}",
                          what, emulator, dir.string(), status, read_all(log)));
}

}  // namespace rlx::hexagon
