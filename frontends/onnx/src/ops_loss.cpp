// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: the class score of each target picked
// with a one-hot mask over the class axis, weighted, masked by ignore_index and reduced.
#include "op_util.h"

namespace rlx::onnx {

namespace {

// loss over input [N, C, d...] (log-probabilities) and target [N, d...].
ValueId nll(NodeCtx& n, ValueId input, ValueId target, std::optional<ValueId> weight) {
  GraphBuilder& b = n.b;
  std::string red = n.attr_s("reduction", "mean");
  if (red != "none" && red != "sum" && red != "mean")
    n.failf("reduction '{}' is not supported", red);
  Shape ts = b.type(target).shape;
  target = b.convert(target, DType::kI64);
  ValueId valid = full_like(b, b.binary("eq", target, target), 1.0);
  if (n.has_attr("ignore_index")) {
    ValueId ii = full_like(b, target, static_cast<double>(n.attr_i("ignore_index", 0)));
    valid = b.binary("ne", target, ii);
  }
  // Ignored targets may be out of range: read class 0 for them and zero their weight.
  ValueId safe = b.select(valid, target, full_like(b, target, 0.0));
  // Each target's class picked by a one-hot mask over the class axis (not a gather, so the batch
  // and spatial dims may be symbolic); a select, so another class's -inf never meets a zero.
  const Shape xs = b.type(input).shape;
  IntList along = {0};
  for (size_t k = 2; k < xs.size(); ++k) along.push_back(static_cast<int64_t>(k));
  ValueId hot = b.binary("eq", iota(b, xs, 1, DType::kI64), b.broadcast_in_dim(safe, xs, along));
  ValueId picked = b.reduce(b.select(hot, input, full_like(b, input, 0.0)), {1}, ReduceKind::kSum);
  DType dt = b.type(input).dtype;
  ValueId w =
      weight ? b.op("gather", {*weight, safe}, {{"axis", int64_t{0}}}) : full_like(b, picked, 1.0);
  w = b.select(valid, w, full_like(b, w, 0.0));
  ValueId loss = b.mul(b.unary("neg", picked), w);
  if (red == "none") return loss;
  std::vector<int64_t> all;
  for (size_t i = 0; i < ts.size(); ++i) all.push_back(static_cast<int64_t>(i));
  ValueId sum = b.reduce(loss, all, ReduceKind::kSum);
  if (red == "sum") return sum;
  ValueId wsum = b.reduce(w, all, ReduceKind::kSum);
  (void)dt;
  return b.div(sum, wsum);
}

}  // namespace

void register_loss_ops(OpTable& t) {
  t["NegativeLogLikelihoodLoss"] = [](NodeCtx& n) {
    n.out(0, nll(n, n.x(0), n.x(1), n.has(2) ? std::optional<ValueId>(n.x(2)) : std::nullopt));
  };
  t["SoftmaxCrossEntropyLoss"] = [](NodeCtx& n) {
    GraphBuilder& b = n.b;
    ValueId x = n.x(0);
    Shape s = b.type(x).shape;
    if (s.size() < 2) n.fail("scores must be [N, C, ...]");
    // log_softmax over the class axis.
    ValueId m = b.reduce_keep(x, {1}, ReduceKind::kMax);
    ValueId z = b.sub(x, m);
    ValueId lse = b.unary("log", b.reduce_keep(b.unary("exp", z), {1}, ReduceKind::kSum));
    ValueId logp = b.sub(z, lse);
    n.out(0, nll(n, logp, n.x(1), n.has(2) ? std::optional<ValueId>(n.x(2)) : std::nullopt));
    if (n.wants(1)) n.out(1, logp);
  };
}

}  // namespace rlx::onnx
