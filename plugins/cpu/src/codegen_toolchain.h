// How the cpu target runs its loop kernels on this host: compiled to native code by the system C
// compiler (the default), or interpreted. The choice is read from the environment at every
// compile, so a process can switch between them:
//   RLX_CPU_KERNELS  auto (default: compiled when a C compiler is found, else interpreted),
//                    compiled (an error when there is no compiler), interpret
//   RLX_CC           the compiler to use (a name on PATH or a path); default cc, gcc, clang
//   RLX_CPU_ISA      x86-64-v4 | x86-64-v3 | baseline; default: the best this CPU runs
//   RLX_CPU_CFLAGS   extra flags appended to the compiler's command line (space-separated)
//   RLX_CC_TIMEOUT_S seconds one compiler run may take before it is stopped (default 300; 0: no
//                    limit)
#pragma once
#include <string>
#include <vector>

#include "rlx/sdk/process.h"

namespace rlx::cpu {

enum class KernelMode { kCompiled, kInterpreted };

struct Toolchain {
  std::string compiler;  // absolute path of the compiler driver
  std::string version;   // first line of `compiler --version`
  std::string isa;       // "x86-64-v4", "x86-64-v3" or "baseline"
  std::vector<std::string> flags;

  // Everything about the toolchain the bits of a built kernel depend on (the cache key).
  std::string identity() const;
  // "gcc 12.2.0 (/usr/bin/cc), x86-64-v4"
  std::string describe() const;
};

struct KernelPlan {
  KernelMode mode = KernelMode::kInterpreted;
  Toolchain toolchain;  // set when mode is kCompiled
  // Why kernels are interpreted (for listings), or how they are compiled.
  std::string note;
};

// Decides from the environment and the host. Throws rlx::Error (kUser) for settings that cannot
// be honoured: RLX_CPU_KERNELS=compiled without a compiler, an unknown mode, an ISA this CPU
// lacks. Never falls back silently: interpretation happens only when asked for, or when no
// compiler exists and the mode is auto (and then `note` says so).
KernelPlan choose_kernel_plan();

// The best ISA level this CPU and OS run: "x86-64-v4" (AVX-512), "x86-64-v3" (AVX2, FMA) or
// "baseline".
std::string host_isa();

// The order of the ISA levels: baseline 0, x86-64-v3 1, x86-64-v4 2; -1 for an unknown name.
int isa_rank(const std::string& isa);

inline constexpr int kDefaultCompileTimeoutS = 300;

// RLX_CC_TIMEOUT_S, else kDefaultCompileTimeoutS; 0 means no limit. Throws rlx::Error (kUser)
// when it is not a non-negative integer.
int compile_timeout_s();

// The SDK runs the compiler (rlx/sdk/process.h).
using sdk::kTimedOut;
using sdk::run_command;

}  // namespace rlx::cpu
