#include "hexagon_toolchain.h"

#include <fmt/format.h>

#include <cstdlib>
#include <vector>

#include "hexagon_program.h"
#include "hexagon_runtime.h"
#include "rlx/core/error.h"
#include "rlx/sdk/process.h"

namespace rlx::hexagon {

namespace {

namespace fs = std::filesystem;

// A clang build of a few thousand lines takes seconds; a test program under the emulator less.
// Past these something hangs, and the error says so instead of blocking the caller.
constexpr int kBuildTimeoutS = 300;
constexpr int kRunTimeoutS = 300;

struct Found {
  std::string clang, why;
};

Found find_clang() {
  std::vector<std::string> names;
  if (const char* c = std::getenv("RLX_HEXAGON_CLANG"); c && *c) names.push_back(c);
  names.insert(names.end(), {"clang-14", "clang"});
  for (const std::string& name : names) {
    const std::string clang = sdk::find_executable(name);
    if (clang.empty()) continue;
    // The backend list is the only reliable test: Debian builds have Hexagon, others may not.
    std::string targets;
    if (sdk::run_command({clang, "-print-targets"}, &targets, 30) != 0 ||
        targets.find(" hexagon ") == std::string::npos)
      continue;
    if (sdk::find_executable("ld.lld").empty())
      return {"", "found " + clang + " with a Hexagon backend but no ld.lld on PATH: install lld"};
    return {clang, ""};
  }
  return {"",
          "no clang with a Hexagon backend ($RLX_HEXAGON_CLANG, clang-14, clang on PATH): "
          "install clang (Debian's has the backend) and lld"};
}

// The compiler's arguments after its path. -ffp-contract=off: no fused multiply-add, so float
// results round as the renderer says. -hexagon-autohvx lets LLVM's loop vectorizer use HVX for
// the loop kernels (elementwise integer ops, reductions: their loops are plain strided loops);
// v67 has no float lanes, so float kernels stay scalar.
std::vector<std::string> build_arguments(const std::string& folder) {
  const std::string at = folder.empty() ? "" : folder + "/";
  return {"--target=hexagon",
          "-mv67",
          "-mhvx",
          "-mhvx-length=128b",
          "-mllvm",
          "-hexagon-autohvx",
          "-O2",
          "-std=gnu11",
          "-ffreestanding",
          "-nostdlib",
          "-ffp-contract=off",
          "-fuse-ld=lld",
          "-w",
          "-I" + (folder.empty() ? "." : folder),
          at + kKernelsFile,
          at + kDriverFile,
          at + kRuntimeSourceName,
          "-o",
          at + kElfFile};
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
  const std::string path = sdk::find_executable(e);
  if (path.empty() && why)
    *why = fmt::format("RLX_HEXAGON_EMULATOR names {}, which is not an executable file", e);
  return path;
}

std::string build_command(const std::string& clang) {
  return fmt::format("'{}' {}", clang, fmt::join(build_arguments(""), " "));
}

void build_program(const std::string& clang, const fs::path& where) {
  const fs::path dir = fs::absolute(where);
  std::vector<std::string> argv = {clang};
  for (std::string& a : build_arguments(dir.string())) argv.push_back(std::move(a));
  std::string log;
  const int status = sdk::run_command(argv, &log, kBuildTimeoutS);
  if (status != 0 || !fs::exists(dir / kElfFile))
    throw Error(
        ErrorKind::kCompile,
        fmt::format("hexagon: {} could not build the generated program in {} ({}); "
                    "`rlx compile --target hexagon -o DIR` writes the sources. Output:\n{}",
                    clang, dir.string(),
                    status == sdk::kTimedOut ? fmt::format("stopped after {} s", kBuildTimeoutS)
                                             : fmt::format("exit status {}", status),
                    log));
}

void run_program(const std::string& emulator, const fs::path& where) {
  const fs::path dir = fs::absolute(where);
  // The driver opens its files relative to the working folder; the folder and the emulator
  // reach the shell as arguments, never as text it parses.
  std::string log;
  const int status = sdk::run_command(
      {"/bin/sh", "-c", "cd \"$0\" && exec \"$1\" ./\"$2\"", dir.string(), emulator, kElfFile},
      &log, kRunTimeoutS);
  if (status == 0) return;
  const std::string what = status == sdk::kTimedOut     ? fmt::format("ran past {} s", kRunTimeoutS)
                           : status == 3 || status == 4 ? "could not read an input file"
                           : status == 5 || status == 6
                               ? "could not write an output file"
                               : fmt::format("failed (exit status {})", status);
  throw Error(ErrorKind::kDevice, fmt::format("hexagon: the program {} under {} in {}. Output:\n{}",
                                              what, emulator, dir.string(), log));
}

}  // namespace rlx::hexagon
