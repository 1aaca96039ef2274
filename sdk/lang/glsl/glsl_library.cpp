#include "glsl_library.h"

#include <fmt/format.h>

namespace rlx::glsl {

namespace {

std::string binding(bool opengl, int j, bool readonly, const std::string& type, const std::string& name) {
  return fmt::format("layout(std430, {}binding = {}) restrict {}buffer B_{} {{ {} {}[]; }};\n",
                     opengl ? "" : "set = 0, ", j, readonly ? "readonly " : "", name, type, name);
}

// Reads index j (64-bit indices as int64_t, narrower ones as int), resolves a negative index from
// the end, and on a bad one records the first (position, value) in status slot S; the
// compare-exchange makes exactly one invocation write the slot.
std::string resolve_index(int32_t slot, bool wide) {
  return fmt::format(R"(    const {4} v = {4}(ids[j]);
    const {4} r = v < {5} ? v + {4}(len) : v;
    if (r < {5} || r >= {4}(len)) {{
      if (atomicCompSwap(status[{0}], 0, 1) == 0) {{
        status[{1}] = j;
        status[{2}] = {6};
        status[{3}] = {7};
      }}
)",
                     slot * 4, slot * 4 + 1, slot * 4 + 2, slot * 4 + 3, wide ? "int64_t" : "int",
                     wide ? "0l" : "0", wide ? "int(uint(uint64_t(v) & 0xFFFFFFFFul))" : "v",
                     wide ? "int(uint(uint64_t(v) >> 32))" : "(v < 0 ? -1 : 0)");
}

}  // namespace

const sdk::Dialect& GlslKernelLibrary::dialect() const {
  return opengl_ ? sdk::glsl_opengl_dialect() : sdk::glsl_vulkan_dialect();
}

// The kernel marker, the buffers in NativeKernel order and the status buffer: gather's source,
// indices and output; a scatter's indices, updates and output, or, where it computes its updates
// (IndexCall::updates), what computes them (b0, b1, ... as the renderer names them), the
// indices and the output.
std::string GlslKernelLibrary::bindings(const gpu_host::IndexCall& c, bool gather) const {
  std::string s = fmt::format("{}{}\n// {}{}\n", sdk::kShaderKernelMarker, c.symbol, c.where,
                              computed_note(c));
  int j = 0;
  if (gather) {
    s += binding(opengl_, 0, true, c.type, "src") + binding(opengl_, 1, true, c.index_type, "ids");
    j = 2;
  } else if (c.updates) {
    for (; j < c.updates->params; ++j)
      s += binding(opengl_, j, true, entry(dialect().storage_type, c.updates->program.buffers.at(j).dtype, c),
                   fmt::format("b{}", j));
    s += binding(opengl_, j++, true, c.index_type, "ids");
  } else {
    s += binding(opengl_, 0, true, c.index_type, "ids") + binding(opengl_, 1, true, c.type, "upd");
    j = 2;
  }
  s += binding(opengl_, j++, false, c.type, "dst");
  return s + fmt::format("layout(std430, {}binding = {}) buffer B_status {{ int status[]; }};\n",
                         opengl_ ? "" : "set = 0, ", j);
}

// Elements as stored: packed sub-word elements (OpenGL's bool/f16/bf16) through the dialect's
// load_element/store_element, others by plain indexing.
std::string GlslKernelLibrary::read(DType dt, const std::string& ptr, const std::string& i) const {
  const std::string& packed = dialect().load_element[static_cast<int>(dt)];
  if (packed.empty()) return fmt::format("{}[{}]", ptr, i);
  return fmt::format(fmt::runtime(packed), fmt::arg("ptr", ptr), fmt::arg("i", i));
}

std::string GlslKernelLibrary::write(DType dt, const std::string& ptr, const std::string& i, const std::string& x) const {
  const std::string& packed = dialect().store_element[static_cast<int>(dt)];
  if (packed.empty()) return fmt::format("{}[{}] = {};", ptr, i, x);
  return fmt::format(fmt::runtime(packed), fmt::arg("ptr", ptr), fmt::arg("i", i), fmt::arg("x", x));
}

std::string GlslKernelLibrary::gather_source(const gpu_host::IndexCall& c) const {
  return bindings(c, true) + fmt::format(R"(void main() {{
  const int gid = {0};
  if (gid >= {1}) {{ return; }}
  const int len = {2}, inner = {3}, nidx = {4};
  const int i = gid % inner, j = (gid / inner) % nidx, o = gid / (inner * nidx);
{5}      return;
    }}
  {6}
}}
)",
                                         dialect().global_id, c.work_items, c.len, c.inner, c.nidx,
                                         resolve_index(c.status_slot, c.index_dtype == DType::kI64),
                                         write(c.dtype, "dst", "gid", read(c.dtype, "src", "(o * len + int(r)) * inner + i")));
}

std::string GlslKernelLibrary::scatter_source(const gpu_host::IndexCall& c) const {
  const sdk::Dialect& d = dialect();
  // Computed updates: the producer's statements for element si, its f32 value `u` stored as the
  // element's dtype.
  const std::string compute = c.updates ? sdk::render_prologue(*c.updates, d, "si", "u", 2) : "";
  std::string update = c.updates ? write(c.dtype, "dst", "di", apply(d.store, c.dtype, "u", c))
                                 : write(c.dtype, "dst", "di", read(c.dtype, "upd", "si"));
  if (c.add) {
    // GLSL integer arithmetic wraps, as the renderer's add does.
    const std::string upd = c.updates ? "u" : apply(d.load, c.dtype, read(c.dtype, "upd", "si"), c);
    std::string sum = fmt::format("{}({} + {})", entry(d.compute_type, c.dtype, c), apply(d.load, c.dtype, read(c.dtype, "dst", "di"), c),
                                  upd);
    update = write(c.dtype, "dst", "di", apply(d.store, c.dtype, sum, c));
  }
  return bindings(c, false) + fmt::format(R"(void main() {{
  const int gid = {0};
  if (gid >= {1}) {{ return; }}
  const int len = {2}, inner = {3}, nidx = {4};
  const int i = gid % inner, o = gid / inner;
  for (int j = 0; j < nidx; ++j) {{
{5}      continue;
    }}
    const int di = (o * len + int(r)) * inner + i, si = (o * nidx + j) * inner + i;
{7}    {6}
  }}
}}
)",
                                          d.global_id, c.work_items, c.len, c.inner, c.nidx,
                                          resolve_index(c.status_slot, c.index_dtype == DType::kI64), update,
                                          compute);
}

const GlslKernelLibrary& glsl_library() {
  static const GlslKernelLibrary lib(false);
  return lib;
}

const GlslKernelLibrary& glsl_opengl_library() {
  static const GlslKernelLibrary lib(true);
  return lib;
}

}  // namespace rlx::glsl
