// Matrix products: MatMul (numpy semantics, 1-D operands promoted), Gemm, MatMulInteger.
#include "op_util.h"

namespace rlx::onnx {

namespace {

// numpy.matmul through the HIR MatMul (claimed natively where a target has a GEMM).
ValueId matmul(NodeCtx& n, ValueId a, ValueId c) {
  GraphBuilder& b = n.b;
  Shape sa = b.type(a).shape, sc = b.type(c).shape;
  if (sa.empty() || sc.empty()) n.fail("MatMul operands must have rank >= 1");
  bool a1 = sa.size() == 1, c1 = sc.size() == 1;
  if (a1) a = b.reshape(a, Shape{1, sa[0]});
  if (c1) c = b.reshape(c, Shape{sc[0], 1});
  ValueId y = b.op("MatMul", {a, c});
  if (a1 || c1) {
    Shape s = b.type(y).shape;
    if (c1) s.erase(s.end() - 1);
    if (a1) s.erase(s.end() - 1 - (c1 ? 0 : 1));
    y = b.reshape(y, s);
  }
  return y;
}

void gemm(NodeCtx& n) {
  GraphBuilder& b = n.b;
  if (n.rank(0) != 2 || n.rank(1) != 2) n.fail("A and B must be rank 2");
  bool ta = n.attr_i("transA", 0) != 0, tb = n.attr_i("transB", 0) != 0;
  double alpha = n.attr_f("alpha", 1.0f), beta = n.attr_f("beta", 1.0f);
  ValueId y = b.dot_general(n.x(0), n.x(1), {}, {}, {ta ? 0 : 1}, {tb ? 1 : 0});
  if (alpha != 1.0) y = b.mul(y, full_like(b, y, alpha));
  if (n.has(2) && beta != 0.0) {
    ValueId c = b.broadcast_to(n.x(2), b.type(y).shape);
    if (beta != 1.0) c = b.mul(c, full_like(b, c, beta));
    y = b.add(y, c);
  }
  n.out(0, y);
}

// (A - a_zero) (B - b_zero) accumulated in i32; a zero point is a scalar or per row of A,
// per column of B.
void matmul_integer(NodeCtx& n) {
  GraphBuilder& b = n.b;
  ValueId a = b.convert(n.x(0), DType::kI32), c = b.convert(n.x(1), DType::kI32);
  if (n.has(2)) {
    ValueId z = b.convert(n.x(2), DType::kI32);
    Shape zs = b.type(z).shape;
    if (zs.size() == 1 && !(zs[0] == Dim(1))) z = b.reshape(z, Shape{zs[0], 1});
    a = b.sub(a, b.broadcast_to(z, b.type(a).shape));
  }
  if (n.has(3)) c = b.sub(c, b.broadcast_to(b.convert(n.x(3), DType::kI32), b.type(c).shape));
  n.out(0, matmul(n, a, c));
}

}  // namespace

ValueId onnx_matmul(NodeCtx& n, ValueId a, ValueId c) {
  return matmul(n, a, c);
}

void register_nn_ops(OpTable& t) {
  t["MatMul"] = [](NodeCtx& n) {
    if (n.dtype(0) != n.dtype(1)) n.fail("operands have different dtypes");
    n.out(0, matmul(n, n.x(0), n.x(1)));
  };
  t["Gemm"] = gemm;
  t["MatMulInteger"] = matmul_integer;
}

}  // namespace rlx::onnx
