#include "rlx/core/losses.h"

#include <fmt/format.h>

#include "rlx/core/error.h"

namespace rlx {

namespace {

IntList every_axis(GraphBuilder& b, ValueId x) {
  IntList axes;
  for (int64_t i = 0; i < b.type(x).rank(); ++i) axes.push_back(i);
  return axes;
}

// Sum of every element divided by their count: a scalar. A symbolic dim (the batch) counts
// through dim_size, which folds to a constant once the shape is bound.
ValueId mean_all(GraphBuilder& b, ValueId x) {
  TensorType t = b.type(x);
  ValueId sum = t.rank() == 0 ? x : b.reduce(x, every_axis(b, x), ReduceKind::kSum);
  double known = 1;
  ValueId count = kNoValue;
  for (int64_t d = 0; d < t.rank(); ++d) {
    if (t.shape[d].is_static()) {
      known *= static_cast<double>(t.shape[d].value);
      continue;
    }
    ValueId n = b.convert(b.op("dim_size", {x}, {{"dim", d}}), t.dtype);
    count = count == kNoValue ? n : b.mul(count, n);
  }
  ValueId mean = b.mul(sum, b.scalar(t.dtype, 1.0 / known));
  return count == kNoValue ? mean : b.div(mean, count);
}

void expect_same_type(GraphBuilder& b, ValueId x, ValueId y, const char* loss) {
  if (!(b.type(x) == b.type(y)))
    throw_user_error(fmt::format("{}: the prediction is {} but the target is {}; they must match",
                                 loss, b.type(x).str(), b.type(y).str()));
  if (!is_float(b.type(x).dtype))
    throw_user_error(fmt::format("{}: needs floating-point inputs, got {}", loss, b.type(x).str()));
}

}  // namespace

ValueId softmax_cross_entropy(GraphBuilder& b, ValueId logits, ValueId labels) {
  TensorType lt = b.type(logits), yt = b.type(labels);
  if (lt.rank() != 2 || !is_float(lt.dtype))
    throw_user_error(fmt::format("softmax_cross_entropy: logits must be a float [N, C], got {}", lt.str()));
  if (yt.rank() != 1 || !(yt.shape[0] == lt.shape[0]) || (yt.dtype != DType::kI32 && yt.dtype != DType::kI64))
    throw_user_error(fmt::format(
        "softmax_cross_entropy: labels must be i32 or i64 [N] with N = {}, got {}", lt.shape[0].str(), yt.str()));
  // One op per row (core/src/ops/ops_hir_loss.cpp), so the step's loss and its gradient
  // (SoftmaxCrossEntropyBackward, from the op's rule) each run as one fused pass where a target
  // has kernels for them; its decomposition is the stable logsumexp - picked logit.
  return mean_all(b, b.op("SoftmaxCrossEntropy", {logits, labels}));
}

ValueId mean_squared_error(GraphBuilder& b, ValueId prediction, ValueId target) {
  expect_same_type(b, prediction, target, "mean_squared_error");
  ValueId d = b.sub(prediction, target);
  return mean_all(b, b.mul(d, d));
}

ValueId binary_cross_entropy(GraphBuilder& b, ValueId input, ValueId target, bool from_logits) {
  expect_same_type(b, input, target, "binary_cross_entropy");
  ValueId one = b.full_like(input, 1.0);
  if (from_logits) {
    ValueId z = input;
    ValueId relu = b.binary("max", z, b.full_like(z, 0.0));
    ValueId soft = b.unary("log", b.add(one, b.unary("exp", b.unary("neg", b.unary("abs", z)))));
    return mean_all(b, b.add(b.sub(relu, b.mul(z, target)), soft));
  }
  ValueId pos = b.mul(target, b.unary("log", input));
  ValueId neg = b.mul(b.sub(one, target), b.unary("log", b.sub(one, input)));
  return mean_all(b, b.unary("neg", b.add(pos, neg)));
}

}  // namespace rlx
