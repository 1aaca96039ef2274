#include "hvx_dot.h"

#include <fmt/format.h>

#include <variant>
#include <vector>

#include "dot_general_form.h"
#include "hexagon_dialect.h"

namespace rlx::hexagon {

namespace {

bool narrow_output(DType t) {
  return t == DType::kI8 || t == DType::kU8 || t == DType::kI16 || t == DType::kU16 ||
         t == DType::kI32 || t == DType::kU32;
}

// Whether the only kernel writing storage buffer `id` stores into it an i32 conversion of an i8
// value (a widened int8 activation), so every element fits in i8.
bool widened_from_i8(const lir::Program& p, int32_t id) {
  int writers = 0;
  bool widened = false;
  for (const lir::Kernel& kernel : p.kernels) {
    if (const auto* call = std::get_if<lir::CallKernel>(&kernel)) {
      for (int32_t o : call->outputs) writers += p.storage_of(o) == id;
      continue;
    }
    const auto& loop = std::get<lir::LoopKernel>(kernel);
    for (const lir::Store& s : loop.stores) {
      if (p.storage_of(s.buffer) != id) continue;
      ++writers;
      const lir::Expr& e = loop.exprs.at(s.expr);
      widened = loop.reduce.empty() && e.kind == lir::ExprKind::kConvert &&
                e.dtype == DType::kI32 && loop.exprs.at(e.args.at(0)).dtype == DType::kI8;
    }
  }
  return writers == 1 && widened;
}

bool constant_fits_i8(const lir::Buffer& b) {
  if (b.kind != lir::BufferKind::kConstant || b.dtype != DType::kI32) return false;
  const auto* v = static_cast<const int32_t*>(b.data.data());
  for (int64_t i = 0; i < b.numel(); ++i)
    if (v[i] < -128 || v[i] > 127) return false;
  return true;
}

// An operand as the HVX kernel reads it: its element type and a C pointer to its elements. An i32
// operand whose values all fit in i8 (a constant, or a widened int8 activation) is read as i8:
// a constant narrowed here into a const array (`globals`), an activation narrowed into a static
// array at the start of the kernel (`setup`).
struct Operand {
  std::string type, pointer;
};

std::optional<Operand> operand(const lir::Program& p, const lir::Buffer& buffer,
                               const std::string& name, std::string& globals, std::string& setup) {
  const int32_t id = p.storage_of(buffer.id);
  const lir::Buffer& b = p.buffers.at(id);
  if (buffer.dtype == DType::kI8 || buffer.dtype == DType::kI16) {
    const std::string type = buffer.dtype == DType::kI8 ? "int8_t" : "int16_t";
    return Operand{type, fmt::format("(const {}*)buffers[{}]", type, id)};
  }
  if (buffer.dtype != DType::kI32) return std::nullopt;
  if (constant_fits_i8(b)) {
    const auto* v = static_cast<const int32_t*>(b.data.data());
    globals += fmt::format("static const int8_t {}[{}] __attribute__((aligned(128))) = {{{}}};\n",
                           name, b.numel(), fmt::join(v, v + b.numel(), ","));
    return Operand{"int8_t", name};
  }
  if (b.kind == lir::BufferKind::kConstant || !widened_from_i8(p, id)) return std::nullopt;
  globals += fmt::format("static int8_t {}[{}] __attribute__((aligned(128)));\n", name, b.numel());
  setup += fmt::format(
      "  for (int64_t i = 0; i < {0}; ++i) {1}[i] = (int8_t)((const int32_t*)buffers[{2}])[i];\n",
      b.numel(), name, id);
  return Operand{"int8_t", name};
}

}  // namespace

std::optional<std::string> hvx_dot_kernel(const lir::CallKernel& call, const lir::Program& p,
                                          const std::string& name) {
  const lir::Buffer &lhs = p.buffers.at(call.inputs.at(0)), &rhs = p.buffers.at(call.inputs.at(1));
  const lir::Buffer& out = p.buffers.at(call.outputs.at(0));
  if (!narrow_output(out.dtype) || out.numel() == 0) return std::nullopt;
  // One contracted dim, contiguous in both operands: each output is a dot of two K-element rows.
  gpu_host::ProductDims product = gpu_host::product_dims(call, p);
  if (product.dims.size() != product.parallel + 1) return std::nullopt;
  const auto [k, k_lhs, k_rhs] = product.dims.back();
  if (k == 0 || k_lhs != 1 || k_rhs != 1) return std::nullopt;
  product.dims.pop_back();
  std::string globals, setup;
  const std::optional<Operand> a = operand(p, lhs, name + "_a", globals, setup),
                               b = operand(p, rhs, name + "_b", globals, setup);
  if (!a || !b || a->type != b->type) return std::nullopt;

  const std::string out_type = hexagon_dialect().storage_type[static_cast<size_t>(out.dtype)];
  std::string body, lhs_at = "0", rhs_at = "0", indent = "  ";
  for (size_t d = 0; d < product.dims.size(); ++d) {
    const auto [size, in_lhs, in_rhs] = product.dims[d];
    body += fmt::format("{0}for (int64_t i{1} = 0; i{1} < {2}; ++i{1}) {{\n", indent, d, size);
    indent += "  ";
    if (in_lhs) lhs_at += fmt::format(" + i{} * {}", d, in_lhs);
    if (in_rhs) rhs_at += fmt::format(" + i{} * {}", d, in_rhs);
  }
  body += fmt::format("{}out[o++] = ({})rlx_hvx_dot_{}(a + ({}), b + ({}), {});\n", indent,
                      out_type, a->type == "int8_t" ? "i8" : "i16", lhs_at, rhs_at, k);
  for (size_t d = product.dims.size(); d-- > 0;) {
    indent.resize(indent.size() - 2);
    body += indent + "}\n";
  }
  return fmt::format(
      "// {0}: dot_general ({1}) as HVX dot products over k = {2}\n{3}"
      "void {0}(char* const* restrict buffers) {{\n{4}"
      "  const {5}* a = {6};\n"
      "  const {5}* b = {7};\n"
      "  {8}* out = ({8}*)buffers[{9}];\n"
      "  int64_t o = 0;\n{10}}}\n",
      name, call.loc, k, globals, setup, a->type, a->pointer, b->pointer, out_type,
      p.storage_of(out.id), body);
}

}  // namespace rlx::hexagon
