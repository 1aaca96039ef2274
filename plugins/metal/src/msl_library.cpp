#include "msl_library.h"

#include <fmt/format.h>

namespace rlx::metal {

namespace {

// The index parameters every kernel of the module takes, in the dialect's order.
constexpr const char* kIndexParams =
    "uint rlx_gid [[thread_position_in_grid]], uint rlx_lid [[thread_position_in_threadgroup]],\n"
    "    uint rlx_group [[threadgroup_position_in_grid]]";

// Reads index j (any integer dtype, widened to long), resolves a negative index from the end,
// and on a bad one records the first (position, value) in status slot S and leaves `bad` set.
// MSL has only the weak compare-exchange: it is retried while it fails spuriously (expected
// still 0), so exactly one work-item writes the slot.
std::string resolve_index(int32_t slot) {
  return fmt::format(R"(    const long v = (long)ids[j];
    const long r = v < 0 ? v + len : v;
    if (r < 0 || r >= len) {{
      int expected = 0;
      bool won = false;
      while (!(won = atomic_compare_exchange_weak_explicit((device atomic_int*)&status[{0}], &expected, 1,
                                                           memory_order_relaxed, memory_order_relaxed)) &&
             expected == 0) {{
      }}
      if (won) {{
        status[{1}] = (int)j;
        status[{2}] = (int)(uint)((ulong)v & 0xFFFFFFFFUL);
        status[{3}] = (int)(uint)((ulong)v >> 32);
      }}
)",
                     slot * 4, slot * 4 + 1, slot * 4 + 2, slot * 4 + 3);
}

}  // namespace

const sdk::Dialect& MslKernelLibrary::dialect() const { return sdk::msl_dialect(); }

std::string MslKernelLibrary::gather_source(const gpu_host::IndexCall& c) const {
  return fmt::format(R"(// {0}: one work-item per output element
kernel void {1}(device const {2}* src [[buffer(0)]], device const {3}* ids [[buffer(1)]],
    device {2}* out [[buffer(2)]], device int* status [[buffer(3)]],
    {9}) {{
  const long gid = (long)rlx_gid;
  if (gid >= {4}L) {{ return; }}
  const long len = {5}L, inner = {6}L, nidx = {7}L;
  const long i = gid % inner, j = (gid / inner) % nidx, o = gid / (inner * nidx);
{8}      return;
    }}
  out[gid] = src[(o * len + r) * inner + i];
}}
)",
                     c.where, c.symbol, c.type, c.index_type, c.work_items, c.len, c.inner, c.nidx,
                     resolve_index(c.status_slot), kIndexParams);
}

std::string MslKernelLibrary::scatter_source(const gpu_host::IndexCall& c) const {
  const sdk::Dialect& d = dialect();
  std::string update = "out[dst] = upd[src];";
  if (c.add) {
    std::string sum = fmt::format("{} + {}", apply(d.load, c.dtype, "out[dst]", c),
                                  apply(d.load, c.dtype, "upd[src]", c));
    const std::string& wrap = d.wrap_type[static_cast<int>(c.dtype)];
    if (!wrap.empty())  // integers wrap, as the renderer's add does
      sum = fmt::format("({})(({}){} + ({}){})", entry(d.compute_type, c.dtype, c), wrap,
                        apply(d.load, c.dtype, "out[dst]", c), wrap, apply(d.load, c.dtype, "upd[src]", c));
    update = fmt::format("out[dst] = {};", apply(d.store, c.dtype, sum, c));
  }
  return fmt::format(R"(// {0}: one work-item per (outer, inner) position, indices in order
kernel void {1}(device const {3}* ids [[buffer(0)]], device const {2}* upd [[buffer(1)]],
    device {2}* out [[buffer(2)]], device int* status [[buffer(3)]],
    {10}) {{
  const long gid = (long)rlx_gid;
  if (gid >= {4}L) {{ return; }}
  const long len = {5}L, inner = {6}L, nidx = {7}L;
  const long i = gid % inner, o = gid / inner;
  for (long j = 0; j < nidx; ++j) {{
{8}      continue;
    }}
    const long dst = (o * len + r) * inner + i, src = (o * nidx + j) * inner + i;
    {9}
  }}
}}
)",
                     c.where, c.symbol, c.type, c.index_type, c.work_items, c.len, c.inner, c.nidx,
                     resolve_index(c.status_slot), update, kIndexParams);
}

const MslKernelLibrary& msl_library() {
  static const MslKernelLibrary lib;
  return lib;
}

}  // namespace rlx::metal
