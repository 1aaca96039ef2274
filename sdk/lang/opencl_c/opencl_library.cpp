#include "opencl_library.h"

#include <fmt/format.h>

namespace rlx::opencl_c {

namespace {

// Reads index j (any integer dtype, widened to long), resolves a negative index from the end,
// and on a bad one records the first (position, value) in status slot S and leaves `bad` set.
// The compare-exchange makes exactly one work-item write the slot.
std::string resolve_index(int32_t slot) {
  return fmt::format(R"(    const long v = (long)ids[j];
    const long r = v < 0 ? v + len : v;
    if (r < 0 || r >= len) {{
      if (atomic_cmpxchg(&status[{0}], 0, 1) == 0) {{
        status[{1}] = (int)j;
        status[{2}] = (int)(uint)((ulong)v & 0xFFFFFFFFUL);
        status[{3}] = (int)(uint)((ulong)v >> 32);
      }}
)",
                     slot * 4, slot * 4 + 1, slot * 4 + 2, slot * 4 + 3);
}

}  // namespace

const sdk::Dialect& OpenClKernelLibrary::dialect() const { return sdk::opencl_dialect(); }

std::string OpenClKernelLibrary::gather_source(const gpu_host::IndexCall& c) const {
  return fmt::format(R"(// {0}: one work-item per output element
__kernel void {1}(__global const {2}* src, __global const {3}* ids, __global {2}* out,
                  __global int* status) {{
  const long gid = get_global_id(0);
  if (gid >= {4}L) {{ return; }}
  const long len = {5}L, inner = {6}L, nidx = {7}L;
  const long i = gid % inner, j = (gid / inner) % nidx, o = gid / (inner * nidx);
{8}      return;
    }}
  out[gid] = src[(o * len + r) * inner + i];
}}
)",
                     c.where, c.symbol, c.type, c.index_type, c.work_items, c.len, c.inner, c.nidx,
                     resolve_index(c.status_slot));
}

std::string OpenClKernelLibrary::scatter_source(const gpu_host::IndexCall& c) const {
  const sdk::Dialect& d = dialect();
  std::string update = "out[dst] = upd[src];";
  if (c.add) {
    std::string sum = fmt::format("{} + {}", apply(d.load, c.dtype, "out[dst]", c), apply(d.load, c.dtype, "upd[src]", c));
    const std::string& wrap = d.wrap_type[static_cast<int>(c.dtype)];
    if (!wrap.empty())  // integers wrap, as the renderer's add does
      sum = fmt::format("({})(({}){} + ({}){})", entry(d.compute_type, c.dtype, c), wrap,
                        apply(d.load, c.dtype, "out[dst]", c), wrap, apply(d.load, c.dtype, "upd[src]", c));
    update = fmt::format("out[dst] = {};", apply(d.store, c.dtype, sum, c));
  }
  return fmt::format(R"(// {0}: one work-item per (outer, inner) position, indices in order
__kernel void {1}(__global const {3}* ids, __global const {2}* upd, __global {2}* out,
                  __global int* status) {{
  const long gid = get_global_id(0);
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
                     resolve_index(c.status_slot), update);
}

const OpenClKernelLibrary& opencl_library() {
  static const OpenClKernelLibrary lib;
  return lib;
}

}  // namespace rlx::opencl_c
