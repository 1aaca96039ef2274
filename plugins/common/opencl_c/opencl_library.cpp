#include "opencl_library.h"

#include <fmt/format.h>

#include "rlx/core/error.h"

namespace rlx::opencl_c {

namespace {

int64_t product(std::vector<int64_t>::const_iterator a, std::vector<int64_t>::const_iterator b) {
  int64_t p = 1;
  for (; a != b; ++a) p *= *a;
  return p;
}

std::string where(const lir::CallKernel& c) {
  return c.loc.empty() ? c.callee : fmt::format("{} ('{}')", c.callee, c.loc);
}

// Index arithmetic of both calls: (outer, len, inner) of the operand split at `axis`.
struct AxisSplit {
  int64_t outer, len, inner;
};

AxisSplit split(const lir::CallKernel& c, const lir::Buffer& operand) {
  const auto& s = operand.shape;
  int64_t axis = std::get<int64_t>(c.attrs.at("axis"));
  if (axis < 0) axis += static_cast<int64_t>(s.size());
  if (axis < 0 || axis >= static_cast<int64_t>(s.size()))
    throw Error(ErrorKind::kCompile, fmt::format("{}: axis out of range", where(c)));
  return {product(s.begin(), s.begin() + axis), s[axis], product(s.begin() + axis + 1, s.end())};
}

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

const std::string& entry(const sdk::DTypeTable& t, DType dt, const lir::CallKernel& c) {
  const std::string& s = t[static_cast<int>(dt)];
  if (s.empty())
    throw Error(ErrorKind::kCompile,
                fmt::format("{}: OpenCL C has no type for {}", where(c), dtype_name(dt)));
  return s;
}

}  // namespace

const sdk::Dialect& OpenClKernelLibrary::dialect() const { return sdk::opencl_dialect(); }

bool OpenClKernelLibrary::has_call(const std::string& callee) const {
  return callee == "gather" || callee == "scatter";
}

gpu_host::NativeKernel OpenClKernelLibrary::call_kernel(const lir::CallKernel& c,
                                                        const lir::Program& p, int32_t index,
                                                        int32_t slot) const {
  const sdk::Dialect& d = dialect();
  const lir::Buffer& operand = p.buffers.at(c.inputs.at(0));
  const lir::Buffer& ids = p.buffers.at(c.inputs.at(1));
  if (!is_integer(ids.dtype))
    throw Error(ErrorKind::kCompile, fmt::format("{}: indices are {}, not an integer type",
                                                 where(c), dtype_name(ids.dtype)));
  const std::string& t = entry(d.storage_type, operand.dtype, c);
  const std::string& it = entry(d.storage_type, ids.dtype, c);
  AxisSplit a = split(c, operand);
  int64_t nidx = ids.numel();
  gpu_host::NativeKernel k;
  k.symbol = fmt::format("k{}_{}", index, c.callee);
  k.checks_indices = true;
  k.where = where(c);
  k.axis_size = a.len;
  int32_t out = p.storage_of(c.outputs.at(0));
  if (c.callee == "gather") {
    k.buffers = {p.storage_of(c.inputs[0]), p.storage_of(c.inputs[1]), out};
    k.work_items = a.outer * nidx * a.inner;
    k.source = fmt::format(R"(// {0}: one work-item per output element
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
                           k.where, k.symbol, t, it, k.work_items, a.len, a.inner, nidx,
                           resolve_index(slot));
    return k;
  }
  // scatter: the output starts as a copy of the operand; one work-item per (outer, inner)
  // position walks the indices in order, so a repeated index keeps the last update (replace) or
  // sums every one (add), as on the cpu, with no race between work-items.
  bool add = c.attrs.count("reduce") && std::get<std::string>(c.attrs.at("reduce")) == "add";
  std::string update = "out[dst] = upd[src];";
  if (add) {
    DType dt = operand.dtype;
    if (dt == DType::kBool)
      throw Error(ErrorKind::kCompile, fmt::format("{}: scatter-add is not defined on bool", where(c)));
    auto load = [&](const std::string& x) {
      return fmt::format(fmt::runtime(entry(d.load, dt, c)), fmt::arg("x", x));
    };
    std::string sum = fmt::format("{} + {}", load("out[dst]"), load("upd[src]"));
    const std::string& wrap = d.wrap_type[static_cast<int>(dt)];
    if (!wrap.empty())  // integers wrap, as the renderer's add does
      sum = fmt::format("({})(({}){} + ({}){})", entry(d.compute_type, dt, c), wrap,
                        load("out[dst]"), wrap, load("upd[src]"));
    update = fmt::format("out[dst] = {};",
                         fmt::format(fmt::runtime(entry(d.store, dt, c)), fmt::arg("x", sum)));
  }
  k.buffers = {p.storage_of(c.inputs[1]), p.storage_of(c.inputs[2]), out};
  k.copies_before = {{p.storage_of(c.inputs[0]), out}};
  k.work_items = a.outer * a.inner;
  k.source = fmt::format(R"(// {0}: one work-item per (outer, inner) position, indices in order
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
                         k.where, k.symbol, t, it, k.work_items, a.len, a.inner, nidx,
                         resolve_index(slot), update);
  return k;
}

const OpenClKernelLibrary& opencl_library() {
  static const OpenClKernelLibrary lib;
  return lib;
}

}  // namespace rlx::opencl_c
