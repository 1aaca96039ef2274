#include "hlsl_library.h"

#include <fmt/format.h>

#include "rlx/core/error.h"

namespace rlx::directx {

namespace {

int64_t product(std::vector<int64_t>::const_iterator a, std::vector<int64_t>::const_iterator b) {
  int64_t p = 1;
  for (; a != b; ++a) p *= *a;
  return p;
}

std::string where(const lir::CallKernel& c) {
  return c.loc.empty() ? c.callee : fmt::format("{} ('{}')", c.callee, c.loc);
}

const std::string& entry(const sdk::DTypeTable& t, DType dt, const lir::CallKernel& c) {
  const std::string& s = t[static_cast<int>(dt)];
  if (s.empty())
    throw Error(ErrorKind::kCompile, fmt::format("{}: HLSL has no type for {}", where(c), dtype_name(dt)));
  return s;
}

std::string binding(int j, const std::string& type, const std::string& name) {
  return fmt::format("[[vk::binding({0}, 0)]] RWStructuredBuffer<{1}> {2} : register(u{0});\n", j, type, name);
}

// Index j widened to the index dtype's compute type; a bad one records the first (position,
// value) in status slot S (InterlockedCompareExchange makes one invocation write it).
std::string resolve_index(int32_t slot, const std::string& it) {
  return fmt::format(R"(    const {4} v = ids[j];
    const {4} r = v < 0 ? v + len : v;
    if (r < 0 || r >= len) {{
      int was;
      InterlockedCompareExchange(status[{0}], 0, 1, was);
      if (was == 0) {{
        status[{1}] = j;
        status[{2}] = (int)(v & 0xFFFFFFFF);
        status[{3}] = {5};
      }}
)",
                     slot * 4, slot * 4 + 1, slot * 4 + 2, slot * 4 + 3, it,
                     it == "int" ? "v < 0 ? -1 : 0" : "(int)(v >> 32)");
}

}  // namespace

const sdk::Dialect& HlslKernelLibrary::dialect() const { return sdk::hlsl_dialect(); }

bool HlslKernelLibrary::has_call(const std::string& callee) const { return callee == "gather" || callee == "scatter"; }

gpu_host::NativeKernel HlslKernelLibrary::call_kernel(const lir::CallKernel& c, const lir::Program& p,
                                                      int32_t index, int32_t slot) const {
  const sdk::Dialect& d = dialect();
  const lir::Buffer& operand = p.buffers.at(c.inputs.at(0));
  const lir::Buffer& ids = p.buffers.at(c.inputs.at(1));
  if (!is_integer(ids.dtype))
    throw Error(ErrorKind::kCompile,
                fmt::format("{}: indices are {}, not an integer type", where(c), dtype_name(ids.dtype)));
  const std::string& t = entry(d.storage_type, operand.dtype, c);
  const std::string& it = entry(d.compute_type, ids.dtype, c);
  const auto& s = operand.shape;
  int64_t axis = std::get<int64_t>(c.attrs.at("axis"));
  if (axis < 0) axis += static_cast<int64_t>(s.size());
  if (axis < 0 || axis >= static_cast<int64_t>(s.size()))
    throw Error(ErrorKind::kCompile, fmt::format("{}: axis out of range", where(c)));
  int64_t outer = product(s.begin(), s.begin() + axis), len = s[axis], inner = product(s.begin() + axis + 1, s.end());
  int64_t nidx = ids.numel();
  gpu_host::NativeKernel k;
  k.symbol = fmt::format("k{}_{}", index, c.callee);
  k.checks_indices = true;
  k.where = where(c);
  k.axis_size = len;
  int32_t out = p.storage_of(c.outputs.at(0));
  std::string head = fmt::format("{}{}\n// {}\n", sdk::kShaderKernelMarker, k.symbol, k.where);
  std::string status = binding(3, "int", "status");
  std::string entry_point = "[numthreads(64, 1, 1)]\nvoid main(uint3 rlx_tid : SV_DispatchThreadID) {\n";
  if (c.callee == "gather") {
    k.buffers = {p.storage_of(c.inputs[0]), p.storage_of(c.inputs[1]), out};
    k.work_items = outer * nidx * inner;
    k.source = head + binding(0, t, "src") + binding(1, entry(d.storage_type, ids.dtype, c), "ids") +
               binding(2, t, "dst") + status + entry_point +
               fmt::format(R"(  const int gid = {0};
  if (gid >= {1}) {{ return; }}
  const int len = {2}, inner = {3}, nidx = {4};
  const int i = gid % inner, j = (gid / inner) % nidx, o = gid / (inner * nidx);
{5}      return;
    }}
  dst[gid] = src[(o * len + (int)r) * inner + i];
}}
)",
                           d.global_id, k.work_items, len, inner, nidx, resolve_index(slot, it));
    return k;
  }
  bool add = c.attrs.count("reduce") && std::get<std::string>(c.attrs.at("reduce")) == "add";
  std::string update = "dst[di] = upd[si];";
  if (add) {
    DType dt = operand.dtype;
    auto load = [&](const std::string& x) { return fmt::format(fmt::runtime(entry(d.load, dt, c)), fmt::arg("x", x)); };
    std::string sum = fmt::format("(({})({} + {}))", entry(d.compute_type, dt, c), load("dst[di]"), load("upd[si]"));
    update = fmt::format("dst[di] = {};", fmt::format(fmt::runtime(entry(d.store, dt, c)), fmt::arg("x", sum)));
  }
  k.buffers = {p.storage_of(c.inputs[1]), p.storage_of(c.inputs[2]), out};
  k.copies_before = {{p.storage_of(c.inputs[0]), out}};
  k.work_items = outer * inner;
  k.source = head + binding(0, entry(d.storage_type, ids.dtype, c), "ids") + binding(1, t, "upd") +
             binding(2, t, "dst") + status + entry_point +
             fmt::format(R"(  const int gid = {0};
  if (gid >= {1}) {{ return; }}
  const int len = {2}, inner = {3}, nidx = {4};
  const int i = gid % inner, o = gid / inner;
  for (int j = 0; j < nidx; ++j) {{
{5}      continue;
    }}
    const int di = (o * len + (int)r) * inner + i, si = (o * nidx + j) * inner + i;
    {6}
  }}
}}
)",
                         d.global_id, k.work_items, len, inner, nidx, resolve_index(slot, it), update);
  return k;
}

const HlslKernelLibrary& hlsl_library() {
  static const HlslKernelLibrary lib;
  return lib;
}

}  // namespace rlx::directx
