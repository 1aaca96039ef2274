// Generated code for a program's loop kernels: all of them rendered into one C translation unit
// (one compiler run per program, kernels with equal bodies rendered once), built through the
// kernel cache and loaded with dlopen.
//
// A generated function has the signature
//   void f(char* const* args, int64_t begin, int64_t end)
// args[j] is the j-th storage buffer the kernel touches (sdk::kernel_buffers order) and
// [begin, end) a range of the kernel's output points (its parallel dims flattened row-major), so
// the host can split one kernel over threads.
#pragma once
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "codegen_toolchain.h"
#include "rlx/core/lir.h"
#include "rlx/sdk/render.h"

namespace rlx::cpu {

using KernelFn = void (*)(char* const* args, int64_t begin, int64_t end);

// The C dialect with kPointRange and kPositionalTable: what the cpu target compiles.
const sdk::Dialect& cpu_dialect();

struct ModuleSource {
  std::string text;
  // For each program kernel: the index of its function in the text (rlx_f<i>), -1 for calls.
  std::vector<int32_t> function_of_kernel;
  int32_t functions = 0;
};
ModuleSource render_module(const lir::Program& program);

// Wall time of each stage of building a module, and where it came from.
struct BuildStats {
  double codegen_ms = 0, compiler_ms = 0, load_ms = 0;
  bool cache_hit = false;
  bool prebuilt = false;         // loaded from a compiled folder (prebuilt_kernels.h)
  std::filesystem::path object;  // the shared object loaded
  int32_t functions = 0, loop_kernels = 0;
};

class KernelModule {
 public:
  // Renders, builds (or finds in the cache) and loads the module for program's loop kernels.
  KernelModule(const lir::Program& program, const Toolchain& tc);
  // The module for program's loop kernels from a registered prebuilt object (prebuilt_kernels.h),
  // or nullptr when none was built from the source this program renders to. Runs no compiler.
  static std::shared_ptr<const KernelModule> prebuilt(const lir::Program& program);
  ~KernelModule();
  KernelModule(const KernelModule&) = delete;
  KernelModule& operator=(const KernelModule&) = delete;

  // The function of program kernel i (a loop kernel).
  KernelFn function(size_t kernel) const { return fns_.at(kernel); }
  const BuildStats& stats() const { return stats_; }
  const std::string& source() const { return source_; }

 private:
  using Clock = std::chrono::steady_clock;
  KernelModule() = default;
  // Looks up every function of src in the loaded object and keeps the source.
  void bind_functions(ModuleSource src, const std::filesystem::path& object,
                      Clock::time_point load_start);

  void* handle_ = nullptr;
  std::vector<KernelFn> fns_;
  BuildStats stats_;
  std::string source_;
};

// Runs one loop kernel through its generated function: inline for small kernels, split over
// oneTBB threads by ranges of output points for large ones. Holds its argument table, so a run
// allocates nothing.
class CompiledLoopRunner {
 public:
  CompiledLoopRunner(const lir::LoopKernel& k, const lir::Program& p,
                     std::shared_ptr<const KernelModule> module, size_t kernel_index);
  void run(const std::vector<void*>& ptrs) const;

 private:
  std::shared_ptr<const KernelModule> module_;  // keeps the code loaded
  KernelFn fn_;
  std::vector<int32_t> buffers_;        // storage buffer of each argument position
  mutable std::vector<char*> args_;     // filled per run from the program's pointer table
  int64_t points_ = 0;                  // output points (product of the parallel dims)
  int64_t work_ = 0;                    // points * reduced points: the kernel's scalar work
  int64_t grain_ = 1;                   // points per task when split
};

}  // namespace rlx::cpu
