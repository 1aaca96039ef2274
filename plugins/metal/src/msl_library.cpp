#include "msl_library.h"

#include <fmt/format.h>

namespace rlx::metal {

MslKernelLibrary::MslKernelLibrary()
    : CFamilyIndexLibrary("MSL", {"long", "uint", "ulong", "L", "0xFFFFFFFFUL", "(long)rlx_gid",
                                  "work-item"}) {}

const sdk::Dialect& MslKernelLibrary::dialect() const { return sdk::msl_dialect(); }

// Buffers bound at their position ([[buffer(j)]]), then the index parameters every kernel of
// the module takes, in the dialect's order.
std::string MslKernelLibrary::signature(const std::string& symbol,
                                        const std::vector<Param>& params) const {
  std::string ps;
  for (size_t j = 0; j < params.size(); ++j)
    ps += fmt::format("device {}{}* {} [[buffer({})]],", params[j].written ? "" : "const ",
                      params[j].type, params[j].name, j) + (j % 2 ? "\n    " : " ");
  return fmt::format(
      "kernel void {}({}uint rlx_gid [[thread_position_in_grid]], uint rlx_lid "
      "[[thread_position_in_threadgroup]],\n    uint rlx_group [[threadgroup_position_in_grid]])",
      symbol, ps);
}

// MSL has only the weak compare-exchange: it is retried while it fails spuriously (expected
// still 0), so exactly one work-item writes the slot.
std::string MslKernelLibrary::claim_status(int32_t slot) const {
  return fmt::format(R"(      int expected = 0;
      bool won = false;
      while (!(won = atomic_compare_exchange_weak_explicit((device atomic_int*)&status[{}], &expected, 1,
                                                           memory_order_relaxed, memory_order_relaxed)) &&
             expected == 0) {{
      }}
      if (won) {{
)",
                     slot);
}

const MslKernelLibrary& msl_library() {
  static const MslKernelLibrary lib;
  return lib;
}

}  // namespace rlx::metal
