// Softmax cross-entropy as one HIR op and its backward op, which softmax_cross_entropy
// (core/src/train/losses.cpp) and the op's gradient rule (core/src/autodiff/vjp_nn.cpp) emit, so
// that a target can run a training step's loss and its gradient each as one fused pass per row
// instead of the max, exp, sum, log, one-hot select and sum kernels of the decomposition:
//   SoftmaxCrossEntropy(logits [N, C], labels [N])             -> loss [N]
//   SoftmaxCrossEntropyBackward(logits, labels, dloss [N])     -> dlogits [N, C]
// with loss_i = logsumexp(logits_i) - logits_i[label_i] and
// dlogits_i = (softmax(logits_i) - onehot(label_i)) * dloss_i. logits are float, labels i32 or
// i64. The per-row loss (not its mean) is the result so that the op composes with any reduction
// and weighting; losses.cpp takes the mean.
//
// A label outside [0, C) matches no class of the one-hot mask, so the decompositions give that row
// logsumexp(logits_i) - max(logits_i) as its loss and softmax(logits_i) * dloss_i as its gradient,
// with no error: a graph of primitives has no way to raise one (losses.h documents it; rlx train
// checks labels as it reads them). Native kernels, which index the row by the label, report it
// as an error naming the node instead of reading out of bounds (the cpu: loss_kernels.cpp).
#include "ops/op_family.h"
#include "ops/op_helpers.h"
#include "rlx/core/builder.h"

namespace rlx {
using namespace ops;

namespace {

using Ins = std::vector<ValueId>;
using Types = std::vector<TensorType>;

// logits [N, C] float and labels [N] i32 or i64, as both ops take them.
void check_logits_and_labels(const Types& in, const char* op) {
  const TensorType &logits = in[0], &labels = in[1];
  if (!is_float(logits.dtype) || logits.rank() != 2)
    fail("{} needs float logits [N, C], got {}", op, logits.str());
  if (labels.rank() != 1 || (labels.dtype != DType::kI32 && labels.dtype != DType::kI64))
    fail("{} needs i32 or i64 labels [N], got {}", op, labels.str());
  if (!(labels.shape[0] == logits.shape[0]))
    fail("{}: labels {} must have one entry per row of logits {}", op, labels.str(), logits.str());
}

Types infer_softmax_cross_entropy(const Types& in, const Node&) {
  check_logits_and_labels(in, "SoftmaxCrossEntropy");
  return {TensorType{in[0].dtype, {in[0].shape[0]}}};
}

Types infer_softmax_cross_entropy_backward(const Types& in, const Node&) {
  const char* op = "SoftmaxCrossEntropyBackward";
  check_logits_and_labels(in, op);
  const TensorType want{in[0].dtype, {in[0].shape[0]}};
  if (!(in[2] == want))
    fail("{}: dloss must be {} (SoftmaxCrossEntropy's result), got {}", op, want.str(),
         in[2].str());
  return {in[0]};
}

// What both decompositions share: the logits with each row's maximum taken out (so exp never
// overflows, whatever the logits' magnitude), and the one-hot mask of the labels as an
// elementwise comparison with an iota, which fuses (a gather would not, and would need the
// labels in range).
struct Rows {
  ValueId shifted;
  ValueId hot;
};

Rows shifted_rows(GraphBuilder& b, ValueId logits, ValueId labels) {
  const TensorType lt = b.type(logits);
  const DType label_dtype = b.type(labels).dtype;
  const ValueId shifted = b.sub(logits, b.reduce_keep(logits, {1}, ReduceKind::kMax));
  const ValueId classes =
      b.op("iota", {}, {{"shape", lt.shape}, {"dim", int64_t{1}}, {"dtype", label_dtype}});
  const ValueId hot = b.binary("eq", classes, b.broadcast_in_dim(labels, lt.shape, {0}));
  return {shifted, hot};
}

// loss = log(sum(exp(shifted))) - shifted[label]: the maximum cancels.
Ins softmax_cross_entropy(GraphBuilder& b, const Node&, const Ins& in) {
  const Rows r = shifted_rows(b, in[0], in[1]);
  const ValueId lse = b.unary("log", b.reduce(b.unary("exp", r.shifted), {1}, ReduceKind::kSum));
  const ValueId picked =
      b.reduce(b.select(r.hot, r.shifted, b.full_like(r.shifted, 0.0)), {1}, ReduceKind::kSum);
  return {b.sub(lse, picked)};
}

// dlogits = (softmax - onehot) * dloss, the softmax from the shifted rows.
Ins softmax_cross_entropy_backward(GraphBuilder& b, const Node&, const Ins& in) {
  const Rows r = shifted_rows(b, in[0], in[1]);
  const ValueId e = b.unary("exp", r.shifted);
  const ValueId p = b.div(e, b.reduce_keep(e, {1}, ReduceKind::kSum));
  const ValueId diff = b.select(r.hot, b.sub(p, b.full_like(p, 1.0)), p);
  return {b.mul(diff, b.broadcast_in_dim(in[2], b.type(p).shape, {0}))};
}

}  // namespace

void loss_ops(OpFamily& f) {
  OpDef ce{"SoftmaxCrossEntropy", OpLevel::kHir, OpClass::kOpaque, 2, 2, 1};
  ce.infer = infer_softmax_cross_entropy;
  ce.decompose = softmax_cross_entropy;
  ce.sample = [](DType d) -> std::optional<OpSample> {
    if (!is_float(d)) return std::nullopt;
    return sample_of({tt(d, {2, 3}), tt(DType::kI64, {2})});
  };
  ce.summary =
      "per-row softmax cross-entropy: (logits [N,C], labels [N] i32|i64) -> "
      "logsumexp(logits_i) - logits_i[label_i] [N]";

  OpDef bw{"SoftmaxCrossEntropyBackward", OpLevel::kHir, OpClass::kOpaque, 3, 3, 1};
  bw.infer = infer_softmax_cross_entropy_backward;
  bw.decompose = softmax_cross_entropy_backward;
  bw.sample = [](DType d) -> std::optional<OpSample> {
    if (!is_float(d)) return std::nullopt;
    return sample_of({tt(d, {2, 3}), tt(DType::kI64, {2}), tt(d, {2})});
  };
  bw.summary =
      "SoftmaxCrossEntropy's gradient: (logits, labels, dloss [N]) -> "
      "(softmax(logits) - onehot(labels)) * dloss";

  f.add(std::move(ce));
  f.add(std::move(bw));
}

}  // namespace rlx
