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

}  // namespace

std::optional<std::string> hvx_dot_kernel(const lir::CallKernel& call, const lir::Program& p,
                                          const std::string& name) {
  auto ints = [&](const char* key) { return std::get<IntList>(call.attrs.at(key)); };
  const IntList lb = ints("lhs_batch"), rb = ints("rhs_batch"), lc = ints("lhs_contract"),
                rc = ints("rhs_contract");
  const lir::Buffer &lhs = p.buffers.at(call.inputs.at(0)), &rhs = p.buffers.at(call.inputs.at(1));
  const lir::Buffer& out = p.buffers.at(call.outputs.at(0));
  const bool i8 = lhs.dtype == DType::kI8 && rhs.dtype == DType::kI8;
  const bool i16 = lhs.dtype == DType::kI16 && rhs.dtype == DType::kI16;
  if ((!i8 && !i16) || !narrow_output(out.dtype)) return std::nullopt;
  const int64_t lrank = static_cast<int64_t>(lhs.shape.size()),
                rrank = static_cast<int64_t>(rhs.shape.size());
  if (lc.size() != 1 || rc.size() != 1 || lc[0] != lrank - 1 || rc[0] != rrank - 1)
    return std::nullopt;
  const int64_t k = lhs.shape.back();
  if (k == 0 || out.numel() == 0) return std::nullopt;

  // The output's dims in order (batch, lhs free, rhs free), each with its strides in the operands.
  struct Dim {
    int64_t size, lhs, rhs;
  };
  const auto ls = gpu_host::row_major_strides(lhs.shape),
             rs = gpu_host::row_major_strides(rhs.shape);
  std::vector<Dim> dims;
  for (size_t j = 0; j < lb.size(); ++j) dims.push_back({lhs.shape[lb[j]], ls[lb[j]], rs[rb[j]]});
  for (int64_t d : gpu_host::free_dims(lhs.shape.size(), lb, lc))
    dims.push_back({lhs.shape[d], ls[d], 0});
  for (int64_t d : gpu_host::free_dims(rhs.shape.size(), rb, rc))
    dims.push_back({rhs.shape[d], 0, rs[d]});

  const sdk::Dialect& c = hexagon_dialect();
  const std::string in_type = i8 ? "int8_t" : "int16_t",
                    out_type = c.storage_type[static_cast<size_t>(out.dtype)];
  std::string body, lhs_at = "0", rhs_at = "0";
  std::string indent = "  ";
  for (size_t d = 0; d < dims.size(); ++d) {
    body +=
        fmt::format("{0}for (int64_t i{1} = 0; i{1} < {2}; ++i{1}) {{\n", indent, d, dims[d].size);
    indent += "  ";
    if (dims[d].lhs) lhs_at += fmt::format(" + i{} * {}", d, dims[d].lhs);
    if (dims[d].rhs) rhs_at += fmt::format(" + i{} * {}", d, dims[d].rhs);
  }
  body += fmt::format("{}out[o++] = ({})rlx_hvx_dot_{}(a + ({}), b + ({}), {});\n", indent,
                      out_type, i8 ? "i8" : "i16", lhs_at, rhs_at, k);
  for (size_t d = dims.size(); d-- > 0;) {
    indent.resize(indent.size() - 2);
    body += indent + "}\n";
  }
  return fmt::format(
      "// {0}: dot_general ({1}) as HVX dot products over k = {2}\n"
      "void {3}(char* const* restrict buffers) {{\n"
      "  const {4}* a = (const {4}*)buffers[{5}];\n"
      "  const {4}* b = (const {4}*)buffers[{6}];\n"
      "  {7}* out = ({7}*)buffers[{8}];\n"
      "  int64_t o = 0;\n{9}}}\n",
      name, call.loc, k, name, in_type, p.storage_of(lhs.id), p.storage_of(rhs.id), out_type,
      p.storage_of(out.id), body);
}

}  // namespace rlx::hexagon
