// One LIR program as one device module: the source of every kernel (loop kernels through the
// SDK renderer, dot_general as a tiled matrix product (sdk::render_matmul) or, where that does
// not apply (dot_general_form.h), a generated reduction kernel, other library calls from the
// target's KernelLibrary) and the ordered steps that run it. `emit` writes `source`; the
// executor builds it once and walks `steps`.
#pragma once
#include <string>
#include <variant>
#include <vector>

#include "device_api.h"
#include "dot_general_form.h"  // dot_general_kernel, which the plan and hexagon use

namespace rlx::gpu_host {

// A kernel launch. Buffer ids are storage ids (aliases resolved).
struct Launch {
  std::string symbol;
  std::vector<int32_t> buffers;
  int64_t work_items = 0;  // 0: nothing to do (an empty output)
  std::vector<std::pair<int32_t, int32_t>> copies_before;
  int32_t status_slot = -1;  // >= 0: the status buffer is bound after `buffers`
  // > 0: the program's scratch buffer (zeroed once, at least this many bytes) is bound last
  // (sdk::AttentionKernel::scratch_bytes).
  int64_t scratch_bytes = 0;
  // The storage ids a loop kernel's launch writes (empty for other launches), and whether it
  // computes the same values on every run, so the executor runs it once when it loads the
  // program (once_launches.h).
  std::vector<int32_t> writes;
  bool once = false;
};

// A while loop whose control flow runs on the host: kernel `kernel` of the program is the
// CallKernel holding the cond and body regions.
struct HostWhile {
  int32_t kernel = -1;
};

// A product a vendor library computes (KernelLibrary::vendor_matmul): A, B and C are the storage
// ids `buffers` at the shape's positions.
struct LibraryMatmul {
  sdk::MatmulShape shape;
  std::vector<int32_t> buffers;
  std::string vendor;  // "cuBLASLt"
  // The bias row and residual the product adds (storage ids, -1: none), taken from the loop
  // kernel after it, whose output is then C (buffers at shape.c_buffer).
  int32_t bias = -1, residual = -1;
};

// A library call the device API runs through vendor routines (KernelLibrary::vendor_call):
// kernel `kernel` of the program, its inputs then outputs as storage ids.
struct LibraryCall {
  int32_t kernel = -1;
  std::vector<int32_t> buffers;
  std::string vendor;  // "cuSOLVER"
};

using Step = std::variant<Launch, HostWhile, LibraryMatmul, LibraryCall>;

struct IndexCheck {
  std::string where;
  int64_t axis_size = 0;
};

struct ModulePlan {
  std::string source;
  std::vector<Step> steps;
  std::vector<IndexCheck> checks;  // one per status slot
  // Where the temporaries live when fused kernels write a buffer before its own first kernel (a
  // product storing its epilogue's output, an attention storing its transpose's): the program's
  // buffer plan redone with those lifetimes started at the writing kernel (lir::plan_arena), so
  // no buffer it reads shares the memory. Empty: the program's own arena offsets.
  std::vector<int64_t> arena_offsets;
};

// Throws rlx::Error (kCompile) naming the call when the library lacks a kernel for it.
ModulePlan plan_module(const lir::Program& program, const KernelLibrary& library);

}  // namespace rlx::gpu_host
