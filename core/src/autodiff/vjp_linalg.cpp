// Vector-Jacobian rules of the dense solvers (Solve, TriangularSolve, Cholesky). They are HIR ops
// with no decomposition, so autodiff keeps them whole and these rules write the backward pass in
// the same ops: a solve's cotangent is a solve with the transposed matrix, and the matrix's is
// an outer product of that and the solution. A target that runs the forward op natively runs the
// backward one too; one that refuses it refuses both, by name.
//
// Cholesky follows PyTorch's convention: a is taken as symmetric (only its lower triangle is
// read), and its cotangent is the symmetric matrix whose inner product with any symmetric
// perturbation gives the derivative (Murray, "Differentiation of the Cholesky decomposition",
// 2016: a_bar = sym(l^-T phi(l^T l_bar) l^-1), phi = lower triangle with the diagonal halved).
#include <fmt/format.h>

#include "autodiff/vjp_util.h"
#include "rlx/core/error.h"

namespace rlx::autodiff {

namespace {

using Ins = std::vector<ValueId>;

int64_t rank_of(GraphBuilder& b, ValueId x) {
  return b.type(x).rank();
}

// The batched matrix product op(x) op(y) of [..., m, k] stacks; result [..., m, n].
ValueId matmul(GraphBuilder& b, ValueId x, ValueId y, bool trans_x, bool trans_y) {
  const int64_t r = rank_of(b, x);
  IntList batch;
  for (int64_t d = 0; d < r - 2; ++d) batch.push_back(d);
  return b.dot_general(x, y, batch, batch, {trans_x ? r - 2 : r - 1}, {trans_y ? r - 1 : r - 2});
}

ValueId transpose_matrices(GraphBuilder& b, ValueId x) {
  const int64_t r = rank_of(b, x);
  IntList perm;
  for (int64_t d = 0; d < r; ++d) perm.push_back(d);
  std::swap(perm[r - 2], perm[r - 1]);
  return b.transpose(x, perm);
}

// x times a constant [n, n] weight per (row, column) of each matrix: w(i, j) from `weight`.
template <typename Weight>
ValueId weigh_entries(GraphBuilder& b, const Node& n, ValueId x, Weight weight) {
  const TensorType t = b.type(x);
  const Dim& dim = t.shape.back();
  if (!dim.is_static())
    throw_user_error(fmt::format(
        "autodiff: {} has a matrix of dynamic size {}; its gradient needs the size (bind the "
        "dim first)",
        n.op, dim.str()));
  const int64_t size = dim.value;
  Tensor w(t.dtype, {size, size});
  for (int64_t i = 0; i < size; ++i)
    for (int64_t j = 0; j < size; ++j) {
      const double v = weight(i, j);
      if (t.dtype == DType::kF64)
        w.as<double>()[i * size + j] = v;
      else
        w.as<float>()[i * size + j] = static_cast<float>(v);
    }
  return b.mul(x, b.broadcast_to(b.constant(w), t.shape));
}

// b [n] with a single matrix is a one-column system: the rules work on [n, 1].
ValueId as_columns(GraphBuilder& b, ValueId v) {
  const TensorType t = b.type(v);
  if (t.rank() != 1) return v;
  return b.reshape(v, {t.shape[0], Dim(1)});
}

ValueId like(GraphBuilder& b, ValueId v, ValueId original) {
  return b.type(v).shape == b.type(original).shape ? v : b.reshape(v, b.type(original).shape);
}

// x = a^-1 rhs:  rhs_bar = a^-T x_bar,  a_bar = -rhs_bar x^T.
Ins solve_rule(GraphBuilder& b, const Node& n, const Ins& in, const Ins& ct) {
  const ValueId x = as_columns(b, n.outputs[0]);
  const ValueId rhs_bar = b.op("Solve", {transpose_matrices(b, in[0]), as_columns(b, ct[0])});
  const ValueId a_bar = b.unary("neg", matmul(b, rhs_bar, x, false, true));
  return {a_bar, like(b, rhs_bar, in[1])};
}

// x = op(a)^-1 rhs with op(a) = a or a^T: rhs_bar = op(a)^-T x_bar; op(a)_bar = -rhs_bar x^T,
// kept on the triangle the op reads (without the diagonal when it is taken as ones).
Ins triangular_solve_rule(GraphBuilder& b, const Node& n, const Ins& in, const Ins& ct) {
  const bool lower = n.attr_int("lower", 1) != 0;
  const bool transpose = n.attr_int("transpose", 0) != 0;
  const bool unit = n.attr_int("unit_diagonal", 0) != 0;
  const ValueId x = as_columns(b, n.outputs[0]);
  const ValueId rhs_bar = b.op("TriangularSolve", {in[0], as_columns(b, ct[0])},
                               {{"lower", int64_t{lower}},
                                {"transpose", int64_t{!transpose}},
                                {"unit_diagonal", int64_t{unit}}});
  const ValueId outer =
      transpose ? matmul(b, x, rhs_bar, false, true) : matmul(b, rhs_bar, x, false, true);
  const ValueId a_bar = weigh_entries(b, n, outer, [&](int64_t i, int64_t j) {
    if (i == j) return unit ? 0.0 : -1.0;
    return (lower ? i > j : i < j) ? -1.0 : 0.0;
  });
  return {a_bar, like(b, rhs_bar, in[1])};
}

Ins cholesky_rule(GraphBuilder& b, const Node& n, const Ins&, const Ins& ct) {
  const ValueId l = n.outputs[0];
  const ValueId phi =
      weigh_entries(b, n, matmul(b, l, ct[0], true, false), [](int64_t i, int64_t j) {
        return i > j ? 1.0 : i == j ? 0.5 : 0.0;
      });
  const Attrs lower_t = {{"lower", int64_t{1}}, {"transpose", int64_t{1}}};
  // l^-T phi, then (l^-T (l^-T phi)^T)^T = l^-T phi l^-1.
  const ValueId left = b.op("TriangularSolve", {l, phi}, lower_t);
  const ValueId both =
      transpose_matrices(b, b.op("TriangularSolve", {l, transpose_matrices(b, left)}, lower_t));
  const ValueId sym = b.add(both, transpose_matrices(b, both));
  return {b.mul(sym, b.full_like(sym, 0.5))};
}

}  // namespace

void linalg_rules(Rules& r) {
  r["Solve"] = solve_rule;
  r["TriangularSolve"] = triangular_solve_rule;
  r["Cholesky"] = cholesky_rule;
}

}  // namespace rlx::autodiff
