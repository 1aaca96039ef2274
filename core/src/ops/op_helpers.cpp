#include "ops/op_helpers.h"

#include "rlx/core/builder.h"

namespace rlx::ops {

int64_t norm_axis(int64_t axis, int64_t rank, const char* what) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) fail("{} {} is out of range for rank {}", what, axis, rank);
  return a;
}

void expect_same_dtype(const std::vector<TensorType>& in, const char* op) {
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i].dtype != in[0].dtype)
      fail("{} needs operands of one dtype, got {} and {}", op, dtype_name(in[0].dtype),
           dtype_name(in[i].dtype));
}

std::vector<TensorType> one(TensorType t) { return {std::move(t)}; }

std::optional<OpSample> sample_of(std::vector<TensorType> in, Attrs attrs) {
  return OpSample{std::move(in), std::move(attrs)};
}

TensorType tt(DType d, Shape s) { return TensorType{d, std::move(s)}; }

bool float_like(DType d) { return is_float(d) || is_complex(d); }

InferFn infer_by_decomposition(DecomposeFn dec) {
  return [dec](const std::vector<TensorType>& in, const Node& n) {
    Graph scratch;
    GraphBuilder b(scratch);
    std::vector<ValueId> args;
    for (size_t i = 0; i < in.size(); ++i) args.push_back(b.input("a" + std::to_string(i), in[i]));
    std::vector<TensorType> out;
    for (ValueId v : dec(b, n, args)) out.push_back(scratch.type(v));
    return out;
  };
}

}  // namespace rlx::ops
