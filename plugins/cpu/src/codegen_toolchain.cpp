#include "codegen_toolchain.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <sstream>

#include "rlx/core/error.h"

namespace rlx::cpu {

namespace {

namespace fs = std::filesystem;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// `cc --version` runs once per compiler and process: a warm compile must not pay for a process.
std::string version_of(const std::string& compiler) {
  static std::mutex mu;
  static std::map<std::string, std::string> known;
  std::lock_guard lock(mu);
  auto it = known.find(compiler);
  if (it != known.end()) return it->second;
  std::string out;
  int rc = run_command({compiler, "--version"}, &out);
  std::string first = out.substr(0, out.find('\n'));
  if (rc != 0 || first.empty()) first = "";
  return known.emplace(compiler, first).first->second;
}

std::vector<std::string> split_flags(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// -O3 with the host's vector ISA; -ffp-contract=off keeps a * b + c two roundings like the
// interpreter and the reference (an FMA would change the last bit); -fno-math-errno lets sqrt and
// rounding become instructions without changing any result (kernels never read errno). No
// -ffast-math: it would reorder float sums and drop NaN handling, which the renderer defines.
std::vector<std::string> base_flags(const std::string& isa) {
  std::vector<std::string> f = {"-std=c11", "-O3",          "-fPIC", "-shared",
                                "-w",       "-fno-math-errno", "-ffp-contract=off",
                                "-fno-semantic-interposition"};
  if (isa != "baseline") f.push_back("-march=" + isa);
  return f;
}

}  // namespace

int isa_rank(const std::string& isa) {
  if (isa == "x86-64-v4") return 2;
  if (isa == "x86-64-v3") return 1;
  if (isa == "baseline") return 0;
  return -1;
}

std::string host_isa() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  // __builtin_cpu_supports also checks that the OS saves the wide registers (XCR0).
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx2") &&
      __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2"))
    return "x86-64-v4";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2"))
    return "x86-64-v3";
#endif
  return "baseline";
}

std::string Toolchain::identity() const {
  std::string s = compiler + "\n" + version + "\n" + isa + "\n";
  for (const auto& f : flags) s += f + " ";
  return s;
}

std::string Toolchain::describe() const {
  return fmt::format("{} ({}), {}", version.empty() ? "unknown compiler" : version, compiler, isa);
}

KernelPlan choose_kernel_plan() {
  std::string mode = env("RLX_CPU_KERNELS");
  if (mode.empty()) mode = "auto";
  if (mode != "auto" && mode != "compiled" && mode != "interpret")
    throw_user_error(fmt::format(
        "RLX_CPU_KERNELS={} is not a kernel mode: use compiled, interpret or auto", mode));
  KernelPlan plan;
  if (mode == "interpret") {
    plan.note = "kernels interpreted (RLX_CPU_KERNELS=interpret)";
    return plan;
  }
  std::string asked = env("RLX_CC");
  std::string compiler;
  for (const std::string& name :
       asked.empty() ? std::vector<std::string>{"cc", "gcc", "clang"} : std::vector{asked}) {
    compiler = sdk::find_executable(name);
    if (!compiler.empty()) break;
  }
  if (compiler.empty()) {
    std::string why = asked.empty() ? "no C compiler found (cc, gcc, clang on PATH)"
                                    : fmt::format("RLX_CC={} is not an executable", asked);
    if (mode == "compiled")
      throw_user_error(fmt::format("cpu: RLX_CPU_KERNELS=compiled, but {}: install gcc, set "
                                   "RLX_CC, or use RLX_CPU_KERNELS=interpret",
                                   why));
    plan.note = fmt::format("kernels interpreted: {} (install gcc)", why);
    return plan;
  }
  std::string host = host_isa();
  std::string isa = env("RLX_CPU_ISA");
  if (isa.empty()) isa = host;
  if (isa_rank(isa) < 0)
    throw_user_error(
        fmt::format("RLX_CPU_ISA={} is not an ISA level: use x86-64-v4, x86-64-v3 or baseline", isa));
  if (isa_rank(isa) > isa_rank(host))
    throw_user_error(fmt::format(
        "RLX_CPU_ISA={} asks for more than this CPU runs: use {} or lower", isa, host));
  plan.mode = KernelMode::kCompiled;
  plan.toolchain.compiler = compiler;
  plan.toolchain.version = version_of(compiler);
  plan.toolchain.isa = isa;
  plan.toolchain.flags = base_flags(isa);
  for (auto& f : split_flags(env("RLX_CPU_CFLAGS"))) plan.toolchain.flags.push_back(f);
  plan.note = "kernels compiled by " + plan.toolchain.describe();
  return plan;
}

int compile_timeout_s() {
  const std::string text = env("RLX_CC_TIMEOUT_S");
  if (text.empty()) return kDefaultCompileTimeoutS;
  int v = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0)
    throw_user_error(fmt::format(
        "RLX_CC_TIMEOUT_S={} is not a number of seconds: use a whole number (0 for no limit)",
        text));
  return v;
}

}  // namespace rlx::cpu
