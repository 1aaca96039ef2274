#include "glsl_library.h"

#include <fmt/format.h>

#include "rlx/core/error.h"

namespace rlx::vulkan {

namespace {

int64_t product(std::vector<int64_t>::const_iterator a, std::vector<int64_t>::const_iterator b) {
  int64_t p = 1;
  for (; a != b; ++a) p *= *a;
  return p;
}

std::string where(const lir::CallKernel& c) {
  return c.loc.empty() ? c.callee : fmt::format("{} ('{}')", c.callee, c.loc);
}

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

const std::string& entry(const sdk::DTypeTable& t, DType dt, const lir::CallKernel& c) {
  const std::string& s = t[static_cast<int>(dt)];
  if (s.empty())
    throw Error(ErrorKind::kCompile, fmt::format("{}: GLSL has no type for {}", where(c), dtype_name(dt)));
  return s;
}

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

bool GlslKernelLibrary::has_call(const std::string& callee) const {
  return callee == "gather" || callee == "scatter";
}

gpu_host::NativeKernel GlslKernelLibrary::call_kernel(const lir::CallKernel& c, const lir::Program& p,
                                                      int32_t index, int32_t slot) const {
  const sdk::Dialect& d = dialect();
  const lir::Buffer& operand = p.buffers.at(c.inputs.at(0));
  const lir::Buffer& ids = p.buffers.at(c.inputs.at(1));
  if (!is_integer(ids.dtype))
    throw Error(ErrorKind::kCompile,
                fmt::format("{}: indices are {}, not an integer type", where(c), dtype_name(ids.dtype)));
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
  std::string head = fmt::format("{}{}\n// {}\n", sdk::kShaderKernelMarker, k.symbol, k.where);
  std::string status = fmt::format("layout(std430, {}binding = 3) buffer B_status {{ int status[]; }};\n",
                                   opengl_ ? "" : "set = 0, ");
  // Elements as stored: packed sub-word elements (OpenGL's bool/f16/bf16) through the dialect's
  // load_element/store_element, others by plain indexing.
  DType dt = operand.dtype;
  auto read = [&](const std::string& ptr, const std::string& i) {
    const std::string& packed = d.load_element[static_cast<int>(dt)];
    if (packed.empty()) return fmt::format("{}[{}]", ptr, i);
    return fmt::format(fmt::runtime(packed), fmt::arg("ptr", ptr), fmt::arg("i", i));
  };
  auto write = [&](const std::string& ptr, const std::string& i, const std::string& x) {
    const std::string& packed = d.store_element[static_cast<int>(dt)];
    if (packed.empty()) return fmt::format("{}[{}] = {};", ptr, i, x);
    return fmt::format(fmt::runtime(packed), fmt::arg("ptr", ptr), fmt::arg("i", i), fmt::arg("x", x));
  };
  if (c.callee == "gather") {
    k.buffers = {p.storage_of(c.inputs[0]), p.storage_of(c.inputs[1]), out};
    k.work_items = a.outer * nidx * a.inner;
    k.source = head + binding(opengl_, 0, true, t, "src") + binding(opengl_, 1, true, it, "ids") + binding(opengl_, 2, false, t, "dst") +
               status +
               fmt::format(R"(void main() {{
  const int gid = {0};
  if (gid >= {1}) {{ return; }}
  const int len = {2}, inner = {3}, nidx = {4};
  const int i = gid % inner, j = (gid / inner) % nidx, o = gid / (inner * nidx);
{5}      return;
    }}
  {6}
}}
)",
                           d.global_id, k.work_items, a.len, a.inner, nidx, resolve_index(slot, ids.dtype == DType::kI64),
                           write("dst", "gid", read("src", "(o * len + int(r)) * inner + i")));
    return k;
  }
  // scatter: the output starts as a copy of the operand; one invocation per (outer, inner)
  // position walks the indices in order, so a repeated index keeps the last update (replace) or
  // sums every one (add), as on the cpu, with no race between invocations.
  bool add = c.attrs.count("reduce") && std::get<std::string>(c.attrs.at("reduce")) == "add";
  std::string update = write("dst", "di", read("upd", "si"));
  if (add) {
    if (dt == DType::kBool)
      throw Error(ErrorKind::kCompile, fmt::format("{}: scatter-add is not defined on bool", where(c)));
    auto load = [&](const std::string& x) { return fmt::format(fmt::runtime(entry(d.load, dt, c)), fmt::arg("x", x)); };
    // GLSL integer arithmetic wraps, as the renderer's add does.
    std::string sum = fmt::format("{}({} + {})", entry(d.compute_type, dt, c), load(read("dst", "di")), load(read("upd", "si")));
    update = write("dst", "di", fmt::format(fmt::runtime(entry(d.store, dt, c)), fmt::arg("x", sum)));
  }
  k.buffers = {p.storage_of(c.inputs[1]), p.storage_of(c.inputs[2]), out};
  k.copies_before = {{p.storage_of(c.inputs[0]), out}};
  k.work_items = a.outer * a.inner;
  k.source = head + binding(opengl_, 0, true, it, "ids") + binding(opengl_, 1, true, t, "upd") + binding(opengl_, 2, false, t, "dst") + status +
             fmt::format(R"(void main() {{
  const int gid = {0};
  if (gid >= {1}) {{ return; }}
  const int len = {2}, inner = {3}, nidx = {4};
  const int i = gid % inner, o = gid / inner;
  for (int j = 0; j < nidx; ++j) {{
{5}      continue;
    }}
    const int di = (o * len + int(r)) * inner + i, si = (o * nidx + j) * inner + i;
    {6}
  }}
}}
)",
                         d.global_id, k.work_items, a.len, a.inner, nidx, resolve_index(slot, ids.dtype == DType::kI64), update);
  return k;
}

const GlslKernelLibrary& glsl_library() {
  static const GlslKernelLibrary lib(false);
  return lib;
}

const GlslKernelLibrary& glsl_opengl_library() {
  static const GlslKernelLibrary lib(true);
  return lib;
}

}  // namespace rlx::vulkan
