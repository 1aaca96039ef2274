// Krylov solvers on CSR matrices, and the MIR form of the CSR products they use, so every
// target with gather, scatter-add and while runs them (docs/scientific.md).
//   CG(indptr, indices, values, b[n]) {tol = 1e-10, max_iter = 1000, preconditioner = "none"}
//     -> x[n], iterations i32[], residual[]
//     conjugate gradients for an SPD A; preconditioner "jacobi" scales by 1 / diag(A) (PCG).
//     Stops when ||r|| <= tol ||b|| (r the recurrence residual) or after max_iter iterations;
//     residual is the final ||r|| / ||b||, so a caller sees whether it converged.
// The decomposition is a while loop whose body is one SpMV, two dot products and the vector
// updates: SpMV stays a HIR op inside the body, so a target with a native SpMV (cpu) uses it
// and any other target takes SpMV's own decomposition below.
#include "ops/op_family.h"
#include "ops/op_helpers.h"
#include "rlx/core/builder.h"

namespace rlx {
using namespace ops;

namespace {

using Ins = std::vector<ValueId>;

ValueId zeros(GraphBuilder& b, DType d, Shape s) {
  return b.broadcast_in_dim(b.scalar(d, 0), std::move(s), {});
}

// The row of every stored value: row_ids[j] = i for indptr[i] <= j < indptr[i + 1]. Counting
// row starts at each position (a scatter-add) and taking an inclusive prefix sum (log2(nnz)
// shifted adds) gives it with primitives every target has; empty rows count twice and fall out.
ValueId csr_row_ids(GraphBuilder& b, ValueId indptr, int64_t rows, int64_t nnz) {
  const DType it = b.type(indptr).dtype;
  const int64_t len = nnz + 1;  // an empty last row starts at nnz
  ValueId starts = b.slice(indptr, {0}, {rows});
  ValueId counts = b.op("scatter", {zeros(b, it, {len}), starts, b.full_like(starts, 1)},
                        {{"axis", int64_t{0}}, {"reduce", std::string("add")}});
  ValueId zero = b.scalar(it, 0);
  for (int64_t s = 1; s < len; s *= 2) {
    ValueId shifted = b.op("pad", {b.slice(counts, {0}, {len - s}), zero},
                           {{"low", IntList{s}}, {"high", IntList{0}}});
    counts = b.add(counts, shifted);
  }
  ValueId upto = b.slice(counts, {0}, {nnz});
  return b.sub(upto, b.full_like(upto, 1));
}

int64_t static_len(const TensorType& t, const char* what) {
  if (!t.shape[0].is_static()) fail("{} must have a static length, got {}", what, t.str());
  return t.shape[0].value;
}

// y = A x as gather, multiply and scatter-add by row.
Ins spmv_mir(GraphBuilder& b, const Node&, const Ins& in) {
  const ValueId indptr = in[0], indices = in[1], x = in[3];
  ValueId values = in[2];
  const int64_t rows = static_len(b.type(indptr), "indptr") - 1;
  const int64_t nnz = static_len(b.type(indices), "indices");
  const TensorType xt = b.type(x);
  ValueId rid = csr_row_ids(b, indptr, rows, nnz);
  ValueId picked = b.op("gather", {x, indices}, {{"axis", int64_t{0}}});
  Shape out{rows};
  if (xt.rank() == 2) {
    out.push_back(xt.shape[1]);
    values = b.broadcast_in_dim(values, b.type(picked).shape, {0});
  }
  ValueId prod = b.mul(values, picked);
  return {b.op("scatter", {zeros(b, xt.dtype, out), rid, prod},
               {{"axis", int64_t{0}}, {"reduce", std::string("add")}})};
}

ValueId dot(GraphBuilder& b, ValueId u, ValueId v) {
  return b.reduce(b.mul(u, v), {0}, ReduceKind::kSum);
}

ValueId scale(GraphBuilder& b, ValueId s, ValueId v) {
  return b.mul(b.broadcast_in_dim(s, b.type(v).shape, {}), v);
}

// A while node (GraphBuilder has no region form): carried values in, the same types out.
Ins while_loop(GraphBuilder& b, const Ins& carried, Graph cond, Graph body) {
  Graph& g = b.graph();
  std::vector<TensorType> types;
  for (ValueId v : carried) types.push_back(g.type(v));
  int32_t idx = g.add_node("while", carried, types);
  g.nodes[idx].regions = {std::make_shared<Graph>(std::move(cond)),
                          std::make_shared<Graph>(std::move(body))};
  infer_node(g, idx);  // checks the regions against the carried values
  return g.nodes[idx].outputs;
}

// Loop state, in this order, in the carried values and in both regions.
enum Slot { kPtr, kIdx, kVal, kDinv, kLimit, kX, kR, kP, kRz, kRr, kIter, kSlots };

Ins cg_mir(GraphBuilder& b, const Node& n, const Ins& in) {
  const DType d = b.type(in[2]).dtype;
  const TensorType vec = b.type(in[3]);
  const int64_t rows = static_len(b.type(in[0]), "indptr") - 1;
  const int64_t nnz = static_len(b.type(in[1]), "indices");
  const double tol = n.attr_float("tol", 1e-10);
  const int64_t max_iter = n.attr_int("max_iter", 1000);
  const bool jacobi = n.attr_string("preconditioner", "none") == "jacobi";

  ValueId rhs = in[3];
  ValueId dinv = b.full_like(rhs, 1);
  if (jacobi) {
    ValueId rid = csr_row_ids(b, in[0], rows, nnz);
    ValueId on_diag = b.binary("eq", in[1], rid);
    ValueId diag_vals = b.select(on_diag, in[2], b.full_like(in[2], 0));
    ValueId diag = b.op("scatter", {zeros(b, d, {rows}), rid, diag_vals},
                        {{"axis", int64_t{0}}, {"reduce", std::string("add")}});
    dinv = b.div(b.full_like(diag, 1), diag);
  }
  ValueId bb = dot(b, rhs, rhs);
  ValueId limit = b.mul(bb, b.scalar(d, tol * tol));  // stop once r.r <= tol^2 b.b
  ValueId z0 = b.mul(dinv, rhs);
  Ins init(kSlots);
  init[kPtr] = in[0], init[kIdx] = in[1], init[kVal] = in[2], init[kDinv] = dinv;
  init[kLimit] = limit, init[kX] = zeros(b, d, vec.shape), init[kR] = rhs, init[kP] = z0;
  init[kRz] = dot(b, rhs, z0), init[kRr] = bb, init[kIter] = b.scalar(DType::kI32, 0);

  auto region_inputs = [&](GraphBuilder& rb) {
    Ins s;
    for (int i = 0; i < kSlots; ++i) s.push_back(rb.input(fmt::format("s{}", i), b.type(init[i])));
    return s;
  };
  Graph cond;
  {
    GraphBuilder cb(cond);
    Ins s = region_inputs(cb);
    ValueId more = cb.binary("lt", s[kIter], cb.scalar(DType::kI32, static_cast<double>(max_iter)));
    cb.output(cb.binary("and", more, cb.binary("gt", s[kRr], s[kLimit])));
  }
  Graph body;
  {
    GraphBuilder g(body);
    Ins s = region_inputs(g);
    ValueId q = g.op("SpMV", {s[kPtr], s[kIdx], s[kVal], s[kP]});
    ValueId alpha = g.div(s[kRz], dot(g, s[kP], q));
    Ins next = s;
    next[kX] = g.add(s[kX], scale(g, alpha, s[kP]));
    next[kR] = g.sub(s[kR], scale(g, alpha, q));
    ValueId z = g.mul(s[kDinv], next[kR]);
    next[kRz] = dot(g, next[kR], z);
    next[kP] = g.add(z, scale(g, g.div(next[kRz], s[kRz]), s[kP]));
    next[kRr] = dot(g, next[kR], next[kR]);
    next[kIter] = g.add(s[kIter], g.scalar(DType::kI32, 1));
    for (ValueId v : next) g.output(v);
  }
  Ins out = while_loop(b, init, std::move(cond), std::move(body));
  // ||r|| / ||b||, and 0 for b = 0 (x = 0 solves it exactly).
  ValueId tiny = b.scalar(d, d == DType::kF32 ? 1e-38 : 1e-300);
  ValueId rel = b.unary("sqrt", b.div(out[kRr], b.binary("max", bb, tiny)));
  return {out[kX], out[kIter], rel};
}

std::vector<TensorType> infer_cg(const std::vector<TensorType>& in, const Node& n) {
  const TensorType &ptr = in[0], &idx = in[1], &val = in[2], &rhs = in[3];
  if ((ptr.dtype != DType::kI32 && ptr.dtype != DType::kI64) || ptr.rank() != 1 ||
      idx.dtype != ptr.dtype || idx.rank() != 1)
    fail("CG: indptr and indices must be i32 or i64 vectors of one dtype, got {} and {}", ptr.str(),
         idx.str());
  if ((val.dtype != DType::kF32 && val.dtype != DType::kF64) || val.rank() != 1 ||
      !(val.shape[0] == idx.shape[0]))
    fail("CG: values must be f32 or f64 [nnz] like indices, got {}", val.str());
  if (!ptr.shape[0].is_static() || ptr.shape[0].value < 1 || rhs.dtype != val.dtype ||
      rhs.rank() != 1 || !(rhs.shape[0] == Dim(ptr.shape[0].value - 1)))
    fail("CG: A is square with {} rows, so b must be {}[{}], got {}", ptr.shape[0].str(),
         dtype_name(val.dtype), ptr.shape[0].is_static() ? ptr.shape[0].value - 1 : -1, rhs.str());
  if (n.attr_float("tol", 1e-10) <= 0)
    fail("CG: tol must be positive, got {}", n.attr_float("tol", 1e-10));
  if (n.attr_int("max_iter", 1000) < 0) fail("CG: max_iter must be >= 0");
  const std::string pre = n.attr_string("preconditioner", "none");
  if (pre != "none" && pre != "jacobi")
    fail("CG: preconditioner must be \"none\" or \"jacobi\", got \"{}\"", pre);
  return {rhs, tt(DType::kI32, {}), tt(val.dtype, {})};
}

}  // namespace

void krylov_ops(OpFamily& f) {
  OpDef cg{"CG", OpLevel::kHir, OpClass::kOpaque, 4, 4, 3};
  cg.infer = infer_cg;
  cg.decompose = cg_mir;
  cg.sample = [](DType d) -> std::optional<OpSample> {
    if (d != DType::kF32 && d != DType::kF64) return std::nullopt;
    return sample_of({tt(DType::kI32, {3}), tt(DType::kI32, {2}), tt(d, {2}), tt(d, {2})});
  };
  cg.summary =
      "conjugate gradients on a CSR SPD matrix {tol, max_iter, preconditioner}: a while "
      "loop of SpMV, dot and axpy";
  f.add(std::move(cg));
}

DecomposeFn spmv_decomposition() {
  return spmv_mir;
}

}  // namespace rlx
