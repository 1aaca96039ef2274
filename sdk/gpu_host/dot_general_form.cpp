#include "dot_general_form.h"

#include <algorithm>
#include <array>

namespace rlx::gpu_host {

namespace {

// One dim of the product: its size and its element strides in lhs and rhs (0 where it is not
// that operand's).
using Dim = std::array<int64_t, 3>;

struct Collapsed {
  int64_t size = 1, lhs = 0, rhs = 0;
};

// The dims as one, when each (but size-1 ones, which any stride walks) steps over exactly the
// next one in both operands; nullopt otherwise.
std::optional<Collapsed> collapse(const std::vector<Dim>& dims) {
  Collapsed c;
  bool first = true;
  for (const Dim& d : dims) {
    if (d[0] == 1) continue;
    if (!first && (c.lhs != d[1] * d[0] || c.rhs != d[2] * d[0])) return std::nullopt;
    c.size *= d[0];
    c.lhs = d[1];
    c.rhs = d[2];
    first = false;
  }
  return c;
}

bool computes_in_f32(DType t) {
  return t == DType::kF16 || t == DType::kBF16 || t == DType::kF32;
}

}  // namespace

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

bool same_walk(const std::vector<int64_t>& domain, const std::vector<int64_t>& strides,
               const std::vector<int64_t>& expected) {
  if (strides.size() != domain.size() || expected.size() != domain.size()) return false;
  for (size_t d = 0; d < domain.size(); ++d)
    if (domain[d] != 1 && strides[d] != expected[d]) return false;
  return true;
}

IntList free_dims(size_t rank, const IntList& batch, const IntList& contract) {
  IntList f;
  for (int64_t d = 0; d < static_cast<int64_t>(rank); ++d)
    if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
        std::find(contract.begin(), contract.end(), d) == contract.end())
      f.push_back(d);
  return f;
}

ProductDims product_dims(const lir::CallKernel& call, const lir::Program& p) {
  auto ints = [&](const char* key) { return std::get<IntList>(call.attrs.at(key)); };
  const IntList lb = ints("lhs_batch"), rb = ints("rhs_batch"), lc = ints("lhs_contract"),
                rc = ints("rhs_contract");
  const lir::Buffer &lhs = p.buffers.at(call.inputs.at(0)), &rhs = p.buffers.at(call.inputs.at(1));
  const auto ls = row_major_strides(lhs.shape), rs = row_major_strides(rhs.shape);
  ProductDims d;
  for (size_t j = 0; j < lb.size(); ++j) d.dims.push_back({lhs.shape[lb[j]], ls[lb[j]], rs[rb[j]]});
  for (int64_t f : free_dims(lhs.shape.size(), lb, lc)) d.dims.push_back({lhs.shape[f], ls[f], 0});
  for (int64_t f : free_dims(rhs.shape.size(), rb, rc)) d.dims.push_back({rhs.shape[f], 0, rs[f]});
  d.parallel = d.dims.size();
  for (size_t j = 0; j < lc.size(); ++j) d.dims.push_back({lhs.shape[lc[j]], ls[lc[j]], rs[rc[j]]});
  return d;
}

std::optional<MatmulCall> matmul_form(const lir::CallKernel& call, const lir::Program& p,
                                      const std::string& name) {
  auto ints = [&](const char* key) { return std::get<IntList>(call.attrs.at(key)); };
  const IntList lb = ints("lhs_batch"), rb = ints("rhs_batch"), lc = ints("lhs_contract"),
                rc = ints("rhs_contract");
  const lir::Buffer &lhs = p.buffers.at(call.inputs.at(0)), &rhs = p.buffers.at(call.inputs.at(1));
  const lir::Buffer& out = p.buffers.at(call.outputs.at(0));
  if (!computes_in_f32(lhs.dtype) || !computes_in_f32(rhs.dtype) || !computes_in_f32(out.dtype))
    return std::nullopt;
  if (lhs.numel() == 0 || rhs.numel() == 0 || out.numel() == 0) return std::nullopt;
  const auto ls = row_major_strides(lhs.shape), rs = row_major_strides(rhs.shape);
  std::vector<Dim> batch, m, n, k;
  for (size_t j = 0; j < lb.size(); ++j) batch.push_back({lhs.shape[lb[j]], ls[lb[j]], rs[rb[j]]});
  for (int64_t d : free_dims(lhs.shape.size(), lb, lc)) m.push_back({lhs.shape[d], ls[d], 0});
  for (int64_t d : free_dims(rhs.shape.size(), rb, rc)) n.push_back({rhs.shape[d], 0, rs[d]});
  for (size_t j = 0; j < lc.size(); ++j) k.push_back({lhs.shape[lc[j]], ls[lc[j]], rs[rc[j]]});
  auto cb = collapse(batch), cm = collapse(m), cn = collapse(n), ck = collapse(k);
  if (!cb || !cm || !cn || !ck) return std::nullopt;

  MatmulCall c;
  sdk::MatmulShape& s = c.shape;
  s.name = name;
  s.batch = cb->size;
  s.m = cm->size;
  s.n = cn->size;
  s.k = ck->size;
  s.a_dtype = lhs.dtype;
  s.b_dtype = rhs.dtype;
  s.c_dtype = out.dtype;
  s.tf32 = call.attrs.count("tf32") && lhs.dtype == DType::kF32 && rhs.dtype == DType::kF32;
  s.a_batch = cb->lhs;
  s.a_m = cm->lhs;
  s.a_k = ck->lhs;
  s.b_batch = cb->rhs;
  s.b_k = ck->rhs;
  s.b_n = cn->rhs;
  const int32_t a = p.storage_of(call.inputs[0]), b = p.storage_of(call.inputs[1]),
                o = p.storage_of(call.outputs[0]);
  if (o == a || o == b) return std::nullopt;
  s.b_constant = p.buffers.at(b).kind == lir::BufferKind::kConstant;
  if (a == b) {
    if (lhs.dtype != rhs.dtype) return std::nullopt;
    s.a_buffer = s.b_buffer = 0;
    s.c_buffer = 1;
    c.buffers = {a, o};
  } else {
    c.buffers = {a, b, o};
  }
  return c;
}

namespace {

// The type a loop kernel computes a product of `t` in: f32 for the floats up to 32 bits, f64,
// i64 for integers.
DType compute_class(DType t) {
  if (t == DType::kF16 || t == DType::kBF16 || t == DType::kF32) return DType::kF32;
  if (t == DType::kF64) return DType::kF64;
  return DType::kI64;
}

}  // namespace

lir::LoopKernel dot_general_kernel(const lir::CallKernel& call, const lir::Program& p,
                                   const std::string& name) {
  const lir::Buffer& out = p.buffers.at(call.outputs.at(0));
  const ProductDims dims = product_dims(call, p);
  lir::LoopKernel k;
  k.name = name;
  std::vector<int64_t> a, b;  // strides of lhs and rhs over the domain
  for (const auto& [size, sa, sb] : dims.dims) {
    k.domain.push_back(size);
    a.push_back(sa);
    b.push_back(sb);
  }
  k.num_parallel = static_cast<int32_t>(dims.parallel);
  if (k.domain.size() > static_cast<size_t>(k.num_parallel)) k.reduce = "sum";
  DType c = compute_class(out.dtype);
  lir::Expr la{.kind = lir::ExprKind::kLoad, .dtype = c};
  la.load = {.buffer = call.inputs[0], .offset = 0, .strides = a, .guards = {}};
  lir::Expr lb_{.kind = lir::ExprKind::kLoad, .dtype = c};
  lb_.load = {.buffer = call.inputs[1], .offset = 0, .strides = b, .guards = {}};
  lir::Expr mul{.kind = lir::ExprKind::kBinary, .dtype = c, .op = "mul", .args = {0, 1}};
  k.exprs = {la, lb_, mul};
  k.stores = {{.buffer = call.outputs[0], .expr = 2}};
  return k;
}

}  // namespace rlx::gpu_host
