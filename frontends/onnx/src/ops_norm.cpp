// Normalisations: BatchNormalization, InstanceNormalization, LayerNormalization,
// GroupNormalization, RMSNormalization, MeanVarianceNormalization, LpNormalization, LRN.
#include <cmath>

#include "op_util.h"

namespace rlx::onnx {

namespace {

ValueId bcast_back(GraphBuilder& b, ValueId reduced, const Shape& full,
                   const std::vector<int64_t>& axes) {
  IntList dims;
  for (int64_t i = 0; i < static_cast<int64_t>(full.size()); ++i)
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) dims.push_back(i);
  return b.broadcast_in_dim(reduced, full, dims);
}

// Mean over axes, kept broadcast to x's shape; counts of symbolic dims are read at run time.
ValueId mean_over(NodeCtx& n, ValueId x, const std::vector<int64_t>& axes) {
  GraphBuilder& b = n.b;
  ValueId s = b.reduce(x, axes, ReduceKind::kSum);
  ValueId c = n.b.constant(Tensor::from<int64_t>(DType::kI64, {}, {1}));
  for (int64_t a : axes) c = b.mul(c, n.dim_size(x, a));
  ValueId m = b.div(s, b.broadcast_in_dim(b.convert(c, b.type(x).dtype), b.type(s).shape, {}));
  return bcast_back(b, m, b.type(x).shape, axes);
}

// A per-channel vector [C] broadcast along dim 1 of `like`.
ValueId per_channel(GraphBuilder& b, ValueId v, ValueId like) {
  Shape s = b.type(v).shape;
  if (s.size() != 1) v = b.reshape(v, Shape{dim_product(s)});
  return b.broadcast_in_dim(v, b.type(like).shape, {1});
}

// 16-bit floats are normalised in f32 (ONNX's stash_type) and rounded once at the end.
DType compute_type(DType d) {
  return d == DType::kF16 || d == DType::kBF16 ? DType::kF32 : d;
}

void batch_norm(NodeCtx& n) {
  GraphBuilder& b = n.b;
  if (n.opset < 9 && n.has_attr("spatial") && n.attr_i("spatial", 1) == 0)
    n.fail("spatial = 0 is not supported");
  DType dt = n.dtype(0), ct = compute_type(dt);
  double eps = n.attr_f("epsilon", 1e-5f);
  ValueId x = b.convert(n.x(0), ct);
  auto chan = [&](int i) { return per_channel(b, b.convert(n.x(i), ct), x); };
  bool training = n.opset >= 14 && n.attr_i("training_mode", 0) != 0;
  ValueId mean, var;
  if (training) {
    std::vector<int64_t> axes;
    for (int64_t i = 0; i < n.rank(0); ++i)
      if (i != 1) axes.push_back(i);
    mean = mean_over(n, x, axes);
    ValueId d = b.sub(x, mean);
    var = mean_over(n, b.mul(d, d), axes);
    double mom = n.attr_f("momentum", 0.9f);
    auto running = [&](int input, ValueId batch_stat, int out) {
      if (!n.wants(out)) return;
      // Per-channel batch statistic: reduce the broadcast value back to [C].
      std::vector<int64_t> axes2;
      for (int64_t i = 0; i < n.rank(0); ++i)
        if (i != 1) axes2.push_back(i);
      ValueId stat_c = b.reduce(batch_stat, axes2, ReduceKind::kMax);
      ValueId r = b.add(b.mul(b.convert(n.x(input), ct), full_like(b, stat_c, mom)),
                        b.mul(stat_c, full_like(b, stat_c, 1.0 - mom)));
      n.out(out, b.convert(r, n.dtype(input)));
    };
    running(3, mean, 1);
    running(4, var, 2);
  } else {
    mean = chan(3);
    var = chan(4);
  }
  ValueId y = b.div(b.sub(x, mean), b.unary("sqrt", b.add(var, full_like(b, var, eps))));
  y = b.add(b.mul(y, chan(1)), chan(2));
  n.out(0, b.convert(y, dt));
}

void instance_norm(NodeCtx& n) {
  GraphBuilder& b = n.b;
  DType dt = n.dtype(0), ct = compute_type(dt);
  double eps = n.attr_f("epsilon", 1e-5f);
  ValueId x = b.convert(n.x(0), ct);
  std::vector<int64_t> axes;
  for (int64_t i = 2; i < n.rank(0); ++i) axes.push_back(i);
  ValueId d = b.sub(x, mean_over(n, x, axes));
  ValueId var = mean_over(n, b.mul(d, d), axes);
  ValueId y = b.div(d, b.unary("sqrt", b.add(var, full_like(b, var, eps))));
  y = b.add(b.mul(y, per_channel(b, b.convert(n.x(1), ct), y)),
            per_channel(b, b.convert(n.x(2), ct), y));
  n.out(0, b.convert(y, dt));
}

void layer_norm(NodeCtx& n) {
  GraphBuilder& b = n.b;
  int64_t r = n.rank(0);
  int64_t axis = n.axis_attr("axis", -1, r);
  double eps = n.attr_f("epsilon", 1e-5f);
  DType dt = n.dtype(0), ct = compute_type(dt);
  std::vector<int64_t> axes;
  for (int64_t i = axis; i < r; ++i) axes.push_back(i);
  Shape s = n.shape(0);
  ValueId x = b.convert(n.x(0), ct);
  ValueId mean = mean_over(n, x, axes);
  ValueId d = b.sub(x, mean);
  ValueId var = mean_over(n, b.mul(d, d), axes);
  ValueId inv = b.div(full_like(b, var, 1.0), b.unary("sqrt", b.add(var, full_like(b, var, eps))));
  ValueId y = b.mul(d, inv);
  y = b.mul(y, b.broadcast_to(b.convert(n.x(1), ct), s));
  if (n.has(2)) y = b.add(y, b.broadcast_to(b.convert(n.x(2), ct), s));
  n.out(0, b.convert(y, dt));
  Shape kept = s;
  for (int64_t a : axes) kept[a] = 1;
  auto stat = [&](ValueId v) {
    // Statistics keep the reduced dims as 1, in the stash type (f32 unless the input is f64).
    ValueId m = b.reduce(v, axes, ReduceKind::kMax);
    DType st = dt == DType::kF64 && n.attr_i("stash_type", 1) != 1 ? DType::kF64 : DType::kF32;
    return b.convert(b.reshape(m, kept), st);
  };
  if (n.wants(1)) n.out(1, stat(mean));
  if (n.wants(2)) n.out(2, stat(inv));
}

void group_norm(NodeCtx& n) {
  GraphBuilder& b = n.b;
  auto s = static_shape(n, n.type(0), "the input");
  int64_t g = n.attr_i("num_groups", 0), C = s.at(1);
  if (g <= 0 || C % g) n.failf("num_groups {} does not divide {} channels", g, C);
  double eps = n.attr_f("epsilon", 1e-5f);
  DType dt = n.dtype(0), ct = compute_type(dt);
  int64_t rest = num_elements(s) / (s[0] * g);
  ValueId x = b.reshape(b.convert(n.x(0), ct), Shape{s[0], g, rest});
  ValueId d = b.sub(x, mean_over(n, x, {2}));
  ValueId var = mean_over(n, b.mul(d, d), {2});
  ValueId y = b.reshape(b.div(d, b.unary("sqrt", b.add(var, full_like(b, var, eps)))),
                        Shape(s.begin(), s.end()));
  auto vec = [&](int i) {
    ValueId v = b.convert(n.x(i), ct);
    int64_t len = static_shape(n, n.type(i), "scale and bias").at(0);
    // Opset 18 scales per group, opset 21 per channel.
    if (len == g && g != C) v = b.reshape(b.broadcast_in_dim(v, Shape{g, C / g}, {0}), Shape{C});
    return per_channel(b, v, y);
  };
  y = b.add(b.mul(y, vec(1)), vec(2));
  n.out(0, b.convert(y, dt));
}

void rms_norm(NodeCtx& n) {
  GraphBuilder& b = n.b;
  int64_t r = n.rank(0);
  int64_t axis = n.axis_attr("axis", -1, r);
  double eps = n.attr_f("epsilon", 1e-5f);
  DType dt = n.dtype(0), ct = compute_type(dt);
  std::vector<int64_t> axes;
  for (int64_t i = axis; i < r; ++i) axes.push_back(i);
  ValueId x = b.convert(n.x(0), ct);
  ValueId ms = mean_over(n, b.mul(x, x), axes);
  ValueId y = b.div(x, b.unary("sqrt", b.add(ms, full_like(b, ms, eps))));
  y = b.mul(y, b.broadcast_to(b.convert(n.x(1), ct), n.shape(0)));
  n.out(0, b.convert(y, dt));
}

void mvn(NodeCtx& n) {
  GraphBuilder& b = n.b;
  std::vector<int64_t> axes =
      n.has_attr("axes") ? n.attr_ints("axes") : std::vector<int64_t>{0, 2, 3};
  axes = norm_axes(n, axes, n.rank(0));
  ValueId x = n.x(0);
  ValueId mean = mean_over(n, x, axes);
  ValueId var = b.sub(mean_over(n, b.mul(x, x), axes), b.mul(mean, mean));
  // As ONNX's function body: (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9).
  ValueId sd = b.add(b.unary("sqrt", var), full_like(b, var, 1e-9));
  n.out(0, b.div(b.sub(x, mean), sd));
}

void lp_norm(NodeCtx& n) {
  GraphBuilder& b = n.b;
  int64_t axis = n.axis_attr("axis", -1, n.rank(0));
  int64_t p = n.attr_i("p", 2);
  ValueId x = n.x(0);
  ValueId norm;
  Shape s = n.shape(0);
  if (p == 1)
    norm = b.reduce(b.unary("abs", x), {axis}, ReduceKind::kSum);
  else if (p == 2)
    norm = b.unary("sqrt", b.reduce(b.mul(x, x), {axis}, ReduceKind::kSum));
  else
    n.failf("p = {} is not supported (1 or 2)", p);
  // A zero norm gives 0, as onnx.reference does, rather than 0/0.
  ValueId nb = bcast_back(b, norm, s, {axis});
  ValueId zero = full_like(b, nb, 0.0);
  ValueId is_zero = b.binary("eq", nb, zero);
  n.out(0, b.select(is_zero, zero, b.div(x, b.select(is_zero, full_like(b, nb, 1.0), nb))));
}

void lrn(NodeCtx& n) {
  GraphBuilder& b = n.b;
  auto s = static_shape(n, n.type(0), "the input");
  int64_t size = n.attr_i("size", 0), C = s.at(1);
  if (size <= 0) n.fail("size must be positive");
  double alpha = n.attr_f("alpha", 1e-4f), beta = n.attr_f("beta", 0.75f),
         bias = n.attr_f("bias", 1.0f);
  ValueId x = n.x(0);
  ValueId sq = b.mul(x, x);
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  IntList plo(s.size(), 0), phi(s.size(), 0);
  plo[1] = lo;
  phi[1] = hi;
  ValueId padded = b.op("pad", {sq, b.scalar(n.dtype(0), 0)}, {{"low", plo}, {"high", phi}});
  ValueId sum = kNoValue;
  for (int64_t k = 0; k < size; ++k) {
    IntList start(s.size(), 0), limit(s.begin(), s.end());
    start[1] = k;
    limit[1] = k + C;
    ValueId part = b.slice(padded, start, limit);
    sum = sum == kNoValue ? part : b.add(sum, part);
  }
  ValueId den = b.add(full_like(b, sum, bias), b.mul(sum, full_like(b, sum, alpha / size)));
  n.out(0, b.div(x, b.binary("pow", den, full_like(b, den, beta))));
}

}  // namespace

void register_norm_ops(OpTable& t) {
  t["BatchNormalization"] = batch_norm;
  t["InstanceNormalization"] = instance_norm;
  t["LayerNormalization"] = layer_norm;
  t["GroupNormalization"] = group_norm;
  t["RMSNormalization"] = rms_norm;
  t["MeanVarianceNormalization"] = mvn;
  t["LpNormalization"] = lp_norm;
  t["LRN"] = lrn;
}

}  // namespace rlx::onnx
