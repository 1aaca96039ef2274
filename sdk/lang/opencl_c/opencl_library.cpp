#include "opencl_library.h"

#include <fmt/format.h>

namespace rlx::opencl_c {

OpenClKernelLibrary::OpenClKernelLibrary()
    : CFamilyIndexLibrary("OpenCL C", {"long", "uint", "ulong", "L", "0xFFFFFFFFUL",
                                       "get_global_id(0)", "work-item"}) {}

const sdk::Dialect& OpenClKernelLibrary::dialect() const { return sdk::opencl_dialect(); }

std::string OpenClKernelLibrary::signature(const std::string& symbol,
                                           const std::vector<Param>& params) const {
  std::string ps;
  for (size_t i = 0; i < params.size(); ++i)
    ps += fmt::format("{}__global {}{}* {}", i ? ", " : "", params[i].written ? "" : "const ",
                      params[i].type, params[i].name);
  return fmt::format("__kernel void {}({})", symbol, ps);
}

// atomic_cmpxchg makes exactly one work-item write the slot.
std::string OpenClKernelLibrary::claim_status(int32_t slot) const {
  return fmt::format("      if (atomic_cmpxchg(&status[{}], 0, 1) == 0) {{\n", slot);
}

const OpenClKernelLibrary& opencl_library() {
  static const OpenClKernelLibrary lib;
  return lib;
}

}  // namespace rlx::opencl_c
