#include "render_parts.h"

#include <fmt/format.h>

#include <cctype>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "rlx/core/error.h"

namespace rlx::sdk::detail {

bool is_signed_int(DType t) {
  return t == DType::kI8 || t == DType::kI16 || t == DType::kI32 || t == DType::kI64;
}

bool single_float(DType t) {
  return t == DType::kF16 || t == DType::kBF16 || t == DType::kF32;
}

std::pair<int64_t, int64_t> int_limits(DType t) {
  switch (t) {
    case DType::kBool:
      return {0, 1};
    case DType::kI8:
      return {INT8_MIN, INT8_MAX};
    case DType::kU8:
      return {0, UINT8_MAX};
    case DType::kI16:
      return {INT16_MIN, INT16_MAX};
    case DType::kI32:
      return {INT32_MIN, INT32_MAX};
    case DType::kU16:
      return {0, UINT16_MAX};
    case DType::kU32:
      return {0, UINT32_MAX};
    default:
      return {INT64_MIN, INT64_MAX};
  }
}

std::string float_text(float v) {
  std::string s = fmt::format("{}", v);
  if (std::fabs(std::strtod(s.c_str(), nullptr)) > std::numeric_limits<float>::max())
    s = fmt::format("{}", static_cast<double>(v));
  return s;
}

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? sep : "") + parts[i];
  return s;
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) s[d - 1] = s[d] * dims[d];
  return s;
}

std::string read_element(const Dialect& d, const std::string& ptr, const std::string& index,
                         DType dtype) {
  const std::string& packed = d.load_element[static_cast<int>(dtype)];
  if (packed.empty()) return fmt::format("{}[{}]", ptr, index);
  return fmt::format(fmt::runtime(packed), fmt::arg("ptr", ptr), fmt::arg("i", index));
}

std::string write_element(const Dialect& d, const std::string& ptr, const std::string& index,
                          DType dtype, const std::string& bits) {
  const std::string& packed = d.store_element[static_cast<int>(dtype)];
  if (packed.empty()) return fmt::format("{}[{}] = {};", ptr, index, bits);
  return fmt::format(fmt::runtime(packed), fmt::arg("ptr", ptr), fmt::arg("i", index),
                     fmt::arg("x", bits));
}

std::string buffer_param(const Dialect& d, const std::string& storage_type, bool written,
                         const std::string& name) {
  return fmt::format("{}{}{}* {}{}", d.global_space.empty() ? "" : d.global_space + " ",
                     written ? "" : "const ", storage_type,
                     d.restrict_kw.empty() ? "" : d.restrict_kw + " ", name);
}

void KernelText::fail(const std::string& why) const {
  throw Error(ErrorKind::kCompile,
              fmt::format("cannot render {} in dialect {}: {}", what_, d_.name, why));
}

const std::string& KernelText::entry(const DTypeTable& table, DType dtype,
                                     const char* what_entry) const {
  const std::string& e = table[static_cast<int>(dtype)];
  if (e.empty()) fail(fmt::format("the dialect has no {} for {}", what_entry, dtype_name(dtype)));
  return e;
}

void KernelText::open(const std::string& symbol, const std::vector<BufferParam>& params,
                      const std::string& comment, const std::string& shared, bool cooperative,
                      bool simd) {
  if (d_.buffer_params != BufferParams::kOnePerBuffer)
    fail("such kernels take one parameter per buffer");
  line(d_.comment + comment);
  std::string signature;
  if (d_.render_signature) {
    if (auto sig = d_.render_signature(d_, symbol, params)) signature = *sig;
  }
  if (signature.empty()) {
    std::string ps;
    for (const BufferParam& b : params)
      ps += (ps.empty() ? "" : ", ") + buffer_param(d_,
                                                    entry(d_.storage_type, b.dtype, "storage type"),
                                                    b.written, fmt::format("b{}", b.storage));
    for (const std::string& extra : d_.extra_params) ps += (ps.empty() ? "" : ", ") + extra;
    const std::string attribute = cooperative && !d_.fixed_group_size_attribute.empty()
                                      ? d_.fixed_group_size_attribute + " "
                                      : "";
    signature = fmt::format("{} {}{}({})", d_.kernel_prefix, attribute, symbol, ps);
  }
  if (simd) {
    signature = with_simd_params(d_, signature);
    if (signature.empty()) fail("the dialect has no SIMD-group parameters");
  }
  if (!shared.empty() && d_.shared_at_module_scope) {
    // After a shader section's marker line, so the arrays belong to this kernel's section.
    size_t at =
        signature.rfind(kShaderKernelMarker, 0) == 0 ? signature.find('\n') : std::string::npos;
    signature = at == std::string::npos
                    ? shared + signature
                    : signature.substr(0, at + 1) + shared + signature.substr(at + 1);
  }
  out_ += signature + " {\n";
  ++indent_;
  if (!shared.empty() && !d_.shared_at_module_scope) {
    for (size_t at = 0; at < shared.size();) {
      size_t end = shared.find('\n', at);
      if (end == std::string::npos) end = shared.size();
      line(shared.substr(at, end - at));
      at = end + 1;
    }
  }
  if (!d_.kernel_entry.empty()) line(d_.kernel_entry);
}

std::string KernelText::finish() {
  while (indent_ > 0) close();
  return std::move(out_);
}

void KernelText::computed(const OperandPrologue& prologue, const std::string& index,
                          const std::string& name) {
  out_ += render_prologue(prologue, d_, index, name, indent_);
}

void KernelText::line(const std::string& s) {
  out_ += std::string(2 * indent_, ' ') + s + "\n";
}

void KernelText::declare(const std::string& type, const std::string& name, const std::string& x) {
  line(fmt::format(fmt::runtime(d_.declare), fmt::arg("type", type), fmt::arg("name", name),
                   fmt::arg("x", x)));
}

void KernelText::declare_mutable(const std::string& type, const std::string& name,
                                 const std::string& x) {
  line(fmt::format(fmt::runtime(d_.declare_mutable), fmt::arg("type", type), fmt::arg("name", name),
                   fmt::arg("x", x)));
}

void KernelText::array(const std::string& type, const std::string& name, int64_t size) {
  line(fmt::format(fmt::runtime(d_.private_array), fmt::arg("type", type), fmt::arg("name", name),
                   fmt::arg("size", size)));
}

void KernelText::loop(const std::string& var, int64_t end) {
  loop_to(var, std::to_string(end));
}

void KernelText::loop(const std::string& var, int64_t end, const std::string& type) {
  line(fmt::format(fmt::runtime(d_.loop), fmt::arg("type", type), fmt::arg("var", var),
                   fmt::arg("end", end)));
  ++indent_;
}

void KernelText::loop_to(const std::string& var, const std::string& end) {
  line(fmt::format(fmt::runtime(d_.loop), fmt::arg("type", d_.index_type), fmt::arg("var", var),
                   fmt::arg("end", end)));
  ++indent_;
}

void KernelText::if_block(const std::string& condition) {
  line(fmt::format("if ({}) {{", condition));
  ++indent_;
}

void KernelText::close() {
  --indent_;
  line("}");
}

void KernelText::work_item(const std::string& name, int64_t n) {
  std::string id = d_.global_id;
  if (id.empty()) {
    if (d_.group_id[0].empty() || d_.group_size[0].empty() || d_.local_id[0].empty())
      fail("the dialect maps work-items but names no global_id or group/local ids");
    id = fmt::format("{} * {} + {}", cast(d_.index_type, d_.group_id[0]), d_.group_size[0],
                     d_.local_id[0]);
  }
  let(name, id);
  line(fmt::format("if ({} >= {}) {{ return; }}", name, n));
}

void KernelText::group_ids(int64_t groups, const std::string& int_type) {
  let("gi", d_.group_index);
  declare(int_type, "li", cast(int_type, d_.local_index));
  let("g", choose(fmt::format("gi < {}", groups), "gi", std::to_string(groups - 1)));
}

std::string KernelText::shared_array(const std::string& type, const std::string& name,
                                     int64_t size) const {
  return fmt::format(fmt::runtime(d_.shared_array), fmt::arg("type", type), fmt::arg("name", name),
                     fmt::arg("size", size)) +
         "\n";
}

void KernelText::group_sum(const std::string& part, const std::string& total, int64_t slots,
                           const std::string& array, int64_t group, const std::string& int_type) {
  const std::string f32 = entry(d_.compute_type, DType::kF32, "compute type");
  if (has_simd()) {
    declare(f32, total + "_simd", simd_sum(part));
    if_block(fmt::format("{} == 0", d_.simd_lane));
    line(fmt::format("{}[{} + {}] = {}_simd;", array, slots, d_.simd_group, total));
    close();
    line(d_.barrier);
    declare_mutable(f32, total, f32_literal(0.0));
    loop_to("s", cast(d_.index_type, d_.simd_groups));
    line(fmt::format("{} = {} + {}[{} + s];", total, total, array, slots));
    close();
    return;
  }
  line(fmt::format("{}[li] = {};", array, part));
  line(d_.barrier);
  declare_mutable(f32, total, f32_literal(0.0));
  loop("j", group, int_type);
  line(fmt::format("{} = {} + {}[j];", total, total, array));
  close();
  line(d_.barrier);
}

std::string KernelText::simd_sum(const std::string& x) const {
  return fmt::format(fmt::runtime(d_.simd_sum), fmt::arg("x", x));
}

std::string KernelText::simd_max(const std::string& x) const {
  return fmt::format(fmt::runtime(d_.simd_max), fmt::arg("x", x));
}

std::string KernelText::choose(const std::string& c, const std::string& t,
                               const std::string& f) const {
  return fmt::format(fmt::runtime(d_.conditional), fmt::arg("c", c), fmt::arg("t", t),
                     fmt::arg("f", f));
}

std::string KernelText::f32_literal(double v) const {
  if (std::isinf(v) || std::isnan(v)) fail("a non-finite literal");
  std::string s = float_text(static_cast<float>(v));
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + d_.float_suffix;
}

std::string KernelText::cast(const std::string& type, const std::string& x) const {
  return fmt::format(fmt::runtime(d_.cast), fmt::arg("type", type), fmt::arg("x", x));
}

std::string KernelText::math(const std::string& op) const {
  auto it = d_.math.find(op);
  if (it == d_.math.end()) fail(fmt::format("the dialect has no math function for {}", op));
  return it->second + d_.math_float_suffix;
}

std::string KernelText::multiply_add(const std::string& a, const std::string& b,
                                     const std::string& c) const {
  auto fma = d_.math.find("fma");
  if (fma != d_.math.end()) return fmt::format("{}({}, {}, {})", fma->second, a, b, c);
  return fmt::format("{} * {} + {}", a, b, c);
}

std::string KernelText::load(int32_t position, DType dtype, const std::string& index) const {
  return fmt::format(fmt::runtime(entry(d_.load, dtype, "load conversion")),
                     fmt::arg("x", read_element(d_, fmt::format("b{}", position), index, dtype)));
}

std::string KernelText::store(int32_t position, DType dtype, const std::string& index,
                              const std::string& value) const {
  std::string bits =
      fmt::format(fmt::runtime(entry(d_.store, dtype, "store conversion")), fmt::arg("x", value));
  return write_element(d_, fmt::format("b{}", position), index, dtype, bits);
}

std::map<int32_t, BufferUse> buffer_uses(const lir::LoopKernel& k, const lir::Program& p) {
  std::map<int32_t, BufferUse> uses;
  auto touch = [&](int32_t b, bool write) {
    RLX_CHECK(b >= 0 && b < static_cast<int32_t>(p.buffers.size()),
              fmt::format("kernel {} uses buffer {}, which the program lacks", k.name, b));
    int32_t s = p.storage_of(b);
    auto [it, fresh] = uses.try_emplace(s, BufferUse{p.buffers[b].dtype});
    // A storage is one pointer, so every view of it in one kernel must agree on the dtype.
    RLX_CHECK(it->second.dtype == p.buffers[b].dtype,
              fmt::format("kernel {} views buffer {} as two dtypes", k.name, s));
    (write ? it->second.written : it->second.read) = true;
  };
  for (const lir::Expr& e : k.exprs)
    if (e.kind == lir::ExprKind::kLoad) touch(e.load.buffer, false);
  for (const lir::Store& s : k.stores) touch(s.buffer, true);
  return uses;
}

std::string with_simd_params(const Dialect& d, std::string signature) {
  // After the last parameter: the dialect's signature hook does not know which kernels reduce
  // in SIMD groups, and those alone take the indices the reductions need.
  const size_t close = signature.rfind(')');
  if (close == std::string::npos || close == 0) return "";
  // CUDA's lane and warp come from built-in variables: no parameters to add.
  if (d.simd_params.empty()) return d.simd_sum.empty() ? "" : signature;
  std::string ps;
  for (const std::string& p : d.simd_params)
    ps += (ps.empty() && signature[close - 1] == '(' ? "" : ", ") + p;
  signature.insert(close, ps);
  return signature;
}

const std::string& simd_reduction(const Dialect& d, const std::string& reduce) {
  static const std::string kNone;
  if (reduce == "sum") return d.simd_sum;
  if (reduce == "max") return d.simd_max;
  if (reduce == "min") return d.simd_min;
  if (reduce == "prod") return d.simd_product;
  return kNone;
}

}  // namespace rlx::sdk::detail

namespace rlx::sdk {

const lir::LoopKernel& prologue_kernel(const OperandPrologue& prologue) {
  if (prologue.program.kernels.size() != 1) throw_internal_error("a prologue is one kernel");
  return std::get<lir::LoopKernel>(prologue.program.kernels[0]);
}

std::string computed_by(const OperandPrologue& prologue) {
  const std::string& kernel = prologue_kernel(prologue).name;
  return prologue.norm ? kernel + " after " + prologue.norm->name : kernel;
}

int64_t lanes_per_output(const lir::LoopKernel& k, const Dialect& d) {
  const auto rank = static_cast<int32_t>(k.domain.size());
  if (d.mapping != DomainMapping::kWorkItemPerOutput || d.simd_reduce_min_extent <= 0 ||
      d.simd_width <= 0 || d.simd_params.empty() || d.simd_max.empty() || k.reduce.empty() ||
      k.num_parallel < 0 || k.num_parallel >= rank || detail::simd_reduction(d, k.reduce).empty())
    return 1;
  // A short reduction stays one work-item's loop: with fewer elements than lanes, lanes would
  // idle and the serial loop is already short, so the SIMD group's exchange costs more than it
  // saves (and MiniLM's 8-token sums keep their text).
  int64_t extent = 1;
  for (int32_t dim = k.num_parallel; dim < rank; ++dim) extent *= k.domain[dim];
  if (extent < d.simd_reduce_min_extent) return 1;
  // The SIMD-group functions take 32- and 16-bit scalars, not 64-bit ones, and what an integer
  // sum does on overflow there is not the renderer's wrap; floats reduced in f32 alone qualify.
  if (d.float_accumulator) return 1;
  for (const lir::Store& s : k.stores)
    if (s.expr < 0 || s.expr >= static_cast<int32_t>(k.exprs.size()) ||
        !detail::single_float(k.exprs[s.expr].dtype))
      return 1;
  return d.simd_width;
}

namespace detail {

std::string describe_kernel(const lir::LoopKernel& k, const lir::Program& p,
                            const std::map<int32_t, BufferUse>& uses,
                            const std::map<int32_t, int32_t>& local, bool positional) {
  std::vector<std::string> dims;
  for (int64_t n : k.domain) dims.push_back(std::to_string(n));
  // Positional kernels leave out what differs between kernels sharing a body (the kernel's
  // and the buffers' names), so equal bodies stay equal text.
  std::string s = fmt::format("{}domain [{}], {} parallel", positional ? "" : k.name + ": ",
                              join(dims, ", "), k.num_parallel);
  if (!k.reduce.empty()) s += ", reduce " + k.reduce;
  std::vector<std::string> bs;
  for (auto& [id, u] : uses)
    bs.push_back(fmt::format(
        "b{} {}{}{}", local.at(id), u.read ? "r" : "", u.written ? "w" : "",
        positional ? fmt::format(" {}", dtype_name(u.dtype)) : " " + p.buffers[id].name));
  return s + "; buffers: " + join(bs, ", ");
}

bool offsets_fit_31_bits(const lir::LoopKernel& k) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  int64_t total = 1;
  for (int64_t n : k.domain) {
    if (n < 1) continue;
    if (total > kMax / n) return false;
    total *= n;
  }
  for (const lir::Expr& e : k.exprs) {
    if (e.kind != lir::ExprKind::kLoad && e.kind != lir::ExprKind::kIndex) continue;
    if (e.load.offset > kMax || e.load.offset < -kMax) return false;
    int64_t reach = e.load.offset < 0 ? -e.load.offset : e.load.offset;
    std::vector<int64_t> strides = e.load.strides;
    if (strides.empty() && e.kind == lir::ExprKind::kIndex && e.dim >= 0 &&
        e.dim < static_cast<int32_t>(k.domain.size()))
      strides.assign(static_cast<size_t>(e.dim) + 1, 0), strides[e.dim] = 1;
    for (size_t d = 0; d < strides.size() && d < k.domain.size(); ++d) {
      const int64_t s = strides[d] < 0 ? -strides[d] : strides[d], span = k.domain[d] - 1;
      if (s == 0 || span <= 0) continue;
      if (s > kMax || span > (kMax - reach) / s) return false;
      reach += s * span;
    }
  }
  return true;  // stores write at the flat output index, below `total`
}

const std::string& index_type(const Dialect& d, const lir::LoopKernel& k) {
  return d.narrow_index_type.empty() || !offsets_fit_31_bits(k) ? d.index_type
                                                                : d.narrow_index_type;
}

}  // namespace detail

int64_t outputs_per_item(const lir::LoopKernel& k, const Dialect& d) {
  if (d.mapping != DomainMapping::kWorkItemPerOutput || !k.reduce.empty() ||
      k.num_parallel != static_cast<int32_t>(k.domain.size()))
    return 1;
  constexpr int64_t kMinItems = 32768;  // a few waves of an H100's 132 x 2048 threads stay
  int64_t most = d.max_outputs_per_item;
  // RLX_GPU_OUTPUTS_PER_ITEM=N caps it for every GPU-style target (1: one output a work-item),
  // so a device run can race the two.
  if (const char* cap = std::getenv("RLX_GPU_OUTPUTS_PER_ITEM"); cap && *cap)
    most = std::min<int64_t>(most, std::max<int64_t>(1, std::atoll(cap)));
  const int64_t n = work_items(k);
  int64_t per = 1;
  while (per * 2 <= most && n % (per * 2) == 0 && n / (per * 2) >= kMinItems) per *= 2;
  return per;
}

std::vector<int32_t> kernel_buffers(const lir::LoopKernel& kernel, const lir::Program& program) {
  std::vector<int32_t> ids;
  for (auto& [id, use] : detail::buffer_uses(kernel, program)) ids.push_back(id);
  return ids;
}

int64_t work_items(const lir::LoopKernel& kernel) {
  int64_t n = 1;
  for (int32_t d = 0; d < kernel.num_parallel; ++d) n *= kernel.domain[d];
  return n;
}

std::string kernel_symbol(const lir::LoopKernel& kernel) {
  return kernel_symbol(kernel.name);
}

std::string kernel_symbol(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "k_" + s;
  return s;
}

std::string render_program(const lir::Program& program, const Dialect& dialect) {
  std::string out = dialect.prelude + "\n";
  for (size_t i = 0; i < program.kernels.size(); ++i) {
    if (auto* k = std::get_if<lir::LoopKernel>(&program.kernels[i])) {
      out += render_kernel(*k, program, dialect) + "\n";
      continue;
    }
    const auto& c = std::get<lir::CallKernel>(program.kernels[i]);
    std::vector<std::string> in, o;
    for (int32_t b : c.inputs) in.push_back(fmt::format("b{}", b));
    for (int32_t b : c.outputs) o.push_back(fmt::format("b{}", b));
    out += fmt::format("{}kernel {}: library call {}({}) -> {}, provided by the target\n\n",
                       dialect.comment, i, c.callee, detail::join(in, ", "), detail::join(o, ", "));
  }
  return out;
}

}  // namespace rlx::sdk
