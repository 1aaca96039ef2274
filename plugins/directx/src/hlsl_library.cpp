#include "hlsl_library.h"

#include <fmt/format.h>

#include "signature.h"
#include "target_plugin.h"

namespace rlx::directx {

namespace {

std::string binding(int j, const std::string& type, const std::string& name) {
  return fmt::format("[[vk::binding({0}, 0)]] RWStructuredBuffer<{1}> {2} : register(u{0});\n", j, type, name);
}

}  // namespace

const sdk::Dialect& HlslKernelLibrary::dialect() const { return sdk::hlsl_dialect(); }

Verdict hlsl_legality(const NodeSignature& s) {
  // HLSL has exp, log, tanh, erf, sin, cos and pow on 32-bit floats only.
  if (Verdict v = gpu_host::common_refusals(s, "directx", "HLSL", /*f64_single_only=*/true); !v.ok) return v;
  using gpu_host::uses;
  if (uses(s, DType::kBool) || uses(s, DType::kI8) || uses(s, DType::kU8))
    return Verdict::no(fmt::format("HLSL has no 8-bit storage type, so directx cannot store the bool/i8/u8 values "
                                   "of {}; convert them to i32 first",
                                   s.op));
  return Verdict::yes();
}

// The kernel marker, the buffers, the status buffer (binding `status`) and the entry point.
std::string HlslKernelLibrary::head(const gpu_host::IndexCall& c, const std::string& buffers, int status) const {
  return fmt::format("{}{}\n// {}{}\n", sdk::kShaderKernelMarker, c.symbol, c.where, computed_note(c)) + buffers +
         binding(status, "int", "status") + "[numthreads(64, 1, 1)]\nvoid main(uint3 rlx_tid : SV_DispatchThreadID) {\n";
}

// Index j widened to the index dtype's compute type; a bad one records the first (position,
// value) in the call's status slot (InterlockedCompareExchange makes one invocation write it).
std::string HlslKernelLibrary::resolve_index(const gpu_host::IndexCall& c) const {
  const std::string& it = entry(dialect().compute_type, c.index_dtype, c);
  const int32_t slot = c.status_slot;
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

std::string HlslKernelLibrary::gather_source(const gpu_host::IndexCall& c) const {
  return head(c, binding(0, c.type, "src") + binding(1, c.index_type, "ids") + binding(2, c.type, "dst"), 3) +
         fmt::format(R"(  const int gid = {0};
  if (gid >= {1}) {{ return; }}
  const int len = {2}, inner = {3}, nidx = {4};
  const int i = gid % inner, j = (gid / inner) % nidx, o = gid / (inner * nidx);
{5}      return;
    }}
  dst[gid] = src[(o * len + (int)r) * inner + i];
}}
)",
                     dialect().global_id, c.work_items, c.len, c.inner, c.nidx, resolve_index(c));
}

// A scatter's buffers: indices, updates and output; or, where it computes its updates
// (IndexCall::updates), what computes them (b0, b1, ... as the renderer names them), the indices
// and the output. Computed, element si is the producer's f32 value `u`, stored as the element's
// dtype.
std::string HlslKernelLibrary::scatter_source(const gpu_host::IndexCall& c) const {
  const sdk::Dialect& d = dialect();
  std::string buffers;
  int j = 0;
  if (c.updates) {
    for (; j < c.updates->params; ++j)
      buffers += binding(j, entry(d.storage_type, c.updates->program.buffers.at(j).dtype, c), fmt::format("b{}", j));
    buffers += binding(j++, c.index_type, "ids");
  } else {
    buffers = binding(0, c.index_type, "ids") + binding(1, c.type, "upd");
    j = 2;
  }
  buffers += binding(j++, c.type, "dst");
  const std::string compute = c.updates ? sdk::render_prologue(*c.updates, d, "si", "u", 2) : "";
  const std::string upd = c.updates ? "u" : apply(d.load, c.dtype, "upd[si]", c);
  std::string update = c.updates ? fmt::format("dst[di] = {};", apply(d.store, c.dtype, "u", c)) : "dst[di] = upd[si];";
  if (c.add) {
    std::string sum = fmt::format("(({})({} + {}))", entry(d.compute_type, c.dtype, c), apply(d.load, c.dtype, "dst[di]", c), upd);
    update = fmt::format("dst[di] = {};", apply(d.store, c.dtype, sum, c));
  }
  return head(c, buffers, j) + fmt::format(R"(  const int gid = {0};
  if (gid >= {1}) {{ return; }}
  const int len = {2}, inner = {3}, nidx = {4};
  const int i = gid % inner, o = gid / inner;
  for (int j = 0; j < nidx; ++j) {{
{5}      continue;
    }}
    const int di = (o * len + (int)r) * inner + i, si = (o * nidx + j) * inner + i;
{7}    {6}
  }}
}}
)",
                                           d.global_id, c.work_items, c.len, c.inner, c.nidx, resolve_index(c), update,
                                           compute);
}

const HlslKernelLibrary& hlsl_library() {
  static const HlslKernelLibrary lib;
  return lib;
}

}  // namespace rlx::directx
