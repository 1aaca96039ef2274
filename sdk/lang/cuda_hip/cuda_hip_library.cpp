#include "cuda_hip_library.h"

#include <fmt/format.h>

namespace rlx::cuda_hip {

namespace {

// Reads index j (any integer dtype, widened to int64_t), resolves a negative index from the end,
// and on a bad one records the first (position, value) in status slot S and leaves `bad` set.
// The compare-and-swap makes exactly one thread write the slot.
std::string resolve_index(int32_t slot) {
  return fmt::format(R"(    const int64_t v = (int64_t)ids[j];
    const int64_t r = v < 0 ? v + len : v;
    if (r < 0 || r >= len) {{
      if (atomicCAS(&status[{0}], 0, 1) == 0) {{
        status[{1}] = (int)j;
        status[{2}] = (int)(uint32_t)((uint64_t)v & 0xFFFFFFFFull);
        status[{3}] = (int)(uint32_t)((uint64_t)v >> 32);
      }}
)",
                     slot * 4, slot * 4 + 1, slot * 4 + 2, slot * 4 + 3);
}

// The flat thread index in 64 bits, as the dialect composes it.
constexpr const char* kGlobalId = "(int64_t)blockIdx.x * blockDim.x + threadIdx.x";

}  // namespace

std::string CudaHipKernelLibrary::gather_source(const gpu_host::IndexCall& c) const {
  return fmt::format(R"(// {0}: one thread per output element
extern "C" __global__ void {1}(const {2}* __restrict__ src, const {3}* __restrict__ ids, {2}* __restrict__ out,
                               int* status) {{
  const int64_t gid = {9};
  if (gid >= {4}LL) {{ return; }}
  const int64_t len = {5}LL, inner = {6}LL, nidx = {7}LL;
  const int64_t i = gid % inner, j = (gid / inner) % nidx, o = gid / (inner * nidx);
{8}      return;
    }}
  out[gid] = src[(o * len + r) * inner + i];
}}
)",
                     c.where, c.symbol, c.type, c.index_type, c.work_items, c.len, c.inner, c.nidx,
                     resolve_index(c.status_slot), kGlobalId);
}

std::string CudaHipKernelLibrary::scatter_source(const gpu_host::IndexCall& c) const {
  const sdk::Dialect& d = dialect();
  std::string update = "out[dst] = upd[src];";
  if (c.add) {
    std::string sum = fmt::format("{} + {}", apply(d.load, c.dtype, "out[dst]", c),
                                  apply(d.load, c.dtype, "upd[src]", c));
    const std::string& wrap = d.wrap_type[static_cast<int>(c.dtype)];
    if (!wrap.empty())  // integers wrap, as the renderer's add does
      sum = fmt::format("({})(({}){} + ({}){})", entry(d.compute_type, c.dtype, c), wrap,
                        apply(d.load, c.dtype, "out[dst]", c), wrap,
                        apply(d.load, c.dtype, "upd[src]", c));
    update = fmt::format("out[dst] = {};", apply(d.store, c.dtype, sum, c));
  }
  return fmt::format(R"(// {0}: one thread per (outer, inner) position, indices in order
extern "C" __global__ void {1}(const {3}* __restrict__ ids, const {2}* __restrict__ upd, {2}* __restrict__ out,
                               int* status) {{
  const int64_t gid = {10};
  if (gid >= {4}LL) {{ return; }}
  const int64_t len = {5}LL, inner = {6}LL, nidx = {7}LL;
  const int64_t i = gid % inner, o = gid / inner;
  for (int64_t j = 0; j < nidx; ++j) {{
{8}      continue;
    }}
    const int64_t dst = (o * len + r) * inner + i, src = (o * nidx + j) * inner + i;
    {9}
  }}
}}
)",
                     c.where, c.symbol, c.type, c.index_type, c.work_items, c.len, c.inner, c.nidx,
                     resolve_index(c.status_slot), update, kGlobalId);
}

const CudaHipKernelLibrary& cuda_library() {
  static const CudaHipKernelLibrary lib(sdk::cuda_dialect(), "CUDA C++");
  return lib;
}

const CudaHipKernelLibrary& hip_library() {
  static const CudaHipKernelLibrary lib(sdk::hip_dialect(), "HIP");
  return lib;
}

}  // namespace rlx::cuda_hip
