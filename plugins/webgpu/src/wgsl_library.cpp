#include "wgsl_library.h"

#include <fmt/format.h>


namespace rlx::webgpu {

namespace {

std::string binding(int j, bool readonly, bool packed, const std::string& type, const std::string& name) {
  return fmt::format("@group(0) @binding({}) var<storage, {}> {}: array<{}>;\n", j,
                     readonly && !packed ? "read" : "read_write", name, packed ? "atomic<u32>" : type);
}

// Reads index j (i64 or i32), resolves a negative index from the end, and on a bad one records
// the first (position, value) in status slot S: the compare-exchange loop makes exactly one
// invocation write the slot (a weak exchange may fail spuriously, so it retries while the flag
// is still clear).
std::string resolve_index(int32_t slot, const std::string& it, const std::string& on_bad) {
  bool wide = it == "i64";
  return fmt::format(R"(    let v: {0} = ids[j];
    let r: {0} = select(v, v + {0}(len), v < {0}(0));
    if (r < {0}(0) || r >= {0}(len)) {{
      loop {{
        let c = atomicCompareExchangeWeak(&status[{1}], 0, 1);
        if (c.exchanged) {{
          atomicStore(&status[{2}], j);
          atomicStore(&status[{3}], {5});
          atomicStore(&status[{4}], {6});
          break;
        }}
        if (c.old_value != 0) {{ break; }}
      }}
      {7}
    }}
)",
                     it, slot * 4, slot * 4 + 1, slot * 4 + 2, slot * 4 + 3, wide ? "i32(v & 0xFFFFFFFFli)" : "v",
                     wide ? "i32(v >> 32u)" : "select(0, -1, v < 0)", on_bad);
}

}  // namespace

const sdk::Dialect& WgslKernelLibrary::dialect() const { return sdk::wgsl_dialect(); }

// The kernel marker, the buffers in NativeKernel order (gather's source, indices and output; a
// scatter's indices, updates and output, or, where it computes its updates, what computes them,
// b0, b1, ... as the renderer names them, then the indices and the output), the status buffer,
// the entry point and its index. Packed elements (bool/f16/bf16) are atomic words, read_write
// even when read only.
std::string WgslKernelLibrary::head(const gpu_host::IndexCall& c, bool gather) const {
  auto is_packed = [&](DType t) { return !dialect().load_element[static_cast<int>(t)].empty(); };
  const bool packed = is_packed(c.dtype);
  std::string s = fmt::format("{}{}\n// {}{}\n", sdk::kShaderKernelMarker, c.symbol, c.where,
                              computed_note(c));
  int j = 0;
  if (gather) {
    s += binding(j, true, packed, c.type, "src") + binding(j + 1, true, false, c.index_type, "ids");
    j += 2;
  } else if (c.updates) {
    for (; j < c.updates->params; ++j) {
      const DType t = c.updates->program.buffers.at(j).dtype;
      s += binding(j, true, is_packed(t), entry(dialect().storage_type, t, c), fmt::format("b{}", j));
    }
    s += binding(j++, true, false, c.index_type, "ids");
  } else {
    s += binding(j, true, false, c.index_type, "ids") + binding(j + 1, true, packed, c.type, "upd");
    j += 2;
  }
  s += binding(j, false, packed, c.type, "dst");
  return s + fmt::format("@group(0) @binding({}) var<storage, read_write> status: array<atomic<i32>>;\n", j + 1) +
         fmt::format(R"(@compute @workgroup_size(64)
fn {}(@builtin(global_invocation_id) rlx_id: vec3<u32>, @builtin(num_workgroups) rlx_groups: vec3<u32>) {{
  let gid: i32 = {};
  if (gid >= {}) {{ return; }}
  let len: i32 = {};
  let inner: i32 = {};
  let nidx: i32 = {};
)",
                     c.symbol, dialect().global_id, c.work_items, c.len, c.inner, c.nidx);
}

// Elements as stored: packed sub-word elements through the dialect's load_element and
// store_element, others by plain indexing.
std::string WgslKernelLibrary::read(DType dt, const std::string& ptr, const std::string& i) const {
  const std::string& f = dialect().load_element[static_cast<int>(dt)];
  if (f.empty()) return fmt::format("{}[{}]", ptr, i);
  return fmt::format(fmt::runtime(f), fmt::arg("ptr", ptr), fmt::arg("i", i));
}

std::string WgslKernelLibrary::write(DType dt, const std::string& ptr, const std::string& i,
                                     const std::string& x) const {
  const std::string& f = dialect().store_element[static_cast<int>(dt)];
  if (f.empty()) return fmt::format("{}[{}] = {};", ptr, i, x);
  return fmt::format(fmt::runtime(f), fmt::arg("ptr", ptr), fmt::arg("i", i), fmt::arg("x", x));
}

std::string WgslKernelLibrary::gather_source(const gpu_host::IndexCall& c) const {
  return head(c, true) + fmt::format(R"(  let i = gid % inner;
  let j = (gid / inner) % nidx;
  let o = gid / (inner * nidx);
{}  {}
}}
)",
                                     resolve_index(c.status_slot, c.index_type, "return;"),
                                     write(c.dtype, "dst", "gid", read(c.dtype, "src", "(o * len + i32(r)) * inner + i")));
}

std::string WgslKernelLibrary::scatter_source(const gpu_host::IndexCall& c) const {
  const sdk::Dialect& d = dialect();
  // Computed updates: the producer's statements for element si, its f32 value `u` stored as the
  // element's dtype.
  const std::string compute = c.updates ? sdk::render_prologue(*c.updates, d, "si", "u", 2) : "";
  std::string update = c.updates ? write(c.dtype, "dst", "di", apply(d.store, c.dtype, "u", c))
                                 : write(c.dtype, "dst", "di", read(c.dtype, "upd", "si"));
  if (c.add) {
    // WGSL integer arithmetic wraps, as the renderer's add does.
    const std::string upd = c.updates ? "u" : apply(d.load, c.dtype, read(c.dtype, "upd", "si"), c);
    std::string sum = fmt::format("{}({} + {})", entry(d.compute_type, c.dtype, c),
                                  apply(d.load, c.dtype, read(c.dtype, "dst", "di"), c), upd);
    update = write(c.dtype, "dst", "di", apply(d.store, c.dtype, sum, c));
  }
  return head(c, false) + fmt::format(R"(  let i = gid % inner;
  let o = gid / inner;
  for (var j: i32 = 0; j < nidx; j++) {{
{}    let di = (o * len + i32(r)) * inner + i;
    let si = (o * nidx + j) * inner + i;
{}    {}
  }}
}}
)",
                                      resolve_index(c.status_slot, c.index_type, "continue;"), compute,
                                      update);
}

const WgslKernelLibrary& wgsl_library() {
  static const WgslKernelLibrary lib;
  return lib;
}

std::string complete_wgsl_module(const std::string& source) {
  const std::string marker = sdk::kShaderKernelMarker;
  std::string out;
  size_t at = source.find(marker);
  out = source.substr(0, at);
  while (at != std::string::npos) {
    size_t name_end = source.find('\n', at);
    size_t next = source.find(marker, at + marker.size());
    std::string section = source.substr(at, next == std::string::npos ? std::string::npos : next - at);
    if (name_end != std::string::npos && section.find("rlx_ipow64(") != std::string::npos) {
      size_t cut = name_end - at + 1;
      section = section.substr(0, cut) + sdk::kWgslInt64Helpers + section.substr(cut);
    }
    out += section;
    at = next;
  }
  return out;
}


}  // namespace rlx::webgpu
