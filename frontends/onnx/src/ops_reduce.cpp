// Reductions, arg-reductions, softmax family, cumulative sums and TopK.
#include <cmath>
#include <limits>

#include "op_util.h"

namespace rlx::onnx {

namespace {

// The reduced axes of a Reduce* node: attribute before `input_since`, then input 1. Empty means
// all axes unless noop_with_empty_axes, which returns nullopt (the op is the identity).
std::optional<std::vector<int64_t>> reduce_axes(NodeCtx& n, int input_since) {
  int64_t r = n.rank(0);
  std::vector<int64_t> axes;
  if (n.opset >= input_since) {
    if (n.has(1)) axes = n.need_ints(1, "axes");
  } else {
    axes = n.attr_ints("axes");
  }
  if (axes.empty()) {
    if (n.attr_i("noop_with_empty_axes", 0)) return std::nullopt;
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  }
  return norm_axes(n, axes, r);
}

ValueId keep_or_drop(NodeCtx& n, ValueId reduced, const Shape& in, const std::vector<int64_t>& axes,
                     bool keep) {
  if (!keep) return reduced;
  Shape s = in;
  for (int64_t a : axes) s[a] = 1;
  return n.b.reshape(reduced, s);
}

// The number of elements the axes span, as a scalar of dtype dt (symbolic dims read at run time).
ValueId count_of(NodeCtx& n, ValueId x, const std::vector<int64_t>& axes, DType dt) {
  ValueId c = n.b.constant(Tensor::from<int64_t>(DType::kI64, {}, {1}));
  for (int64_t a : axes) c = n.b.mul(c, n.dim_size(x, a));
  return n.b.convert(c, dt);
}

ValueId reduce_with(GraphBuilder& b, ValueId x, const std::vector<int64_t>& axes, ReduceKind k) {
  DType d = b.type(x).dtype;
  if (d != DType::kBool) return b.reduce(x, axes, k);
  // bool max/min (any/all) through u8.
  return b.convert(b.reduce(b.convert(x, DType::kU8), axes, k), DType::kBool);
}

// Host reduction of a known integer tensor (ReduceProd(Shape(x)) is the element count).
std::optional<SymTensor> fold_reduce(const SymTensor& s, const std::vector<int64_t>& axes,
                                     bool keep, const std::string& kind) {
  int64_t r = static_cast<int64_t>(s.shape.size());
  std::vector<int64_t> out_shape, kept;
  for (int64_t i = 0; i < r; ++i) {
    bool red = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!red) out_shape.push_back(s.shape[i]);
    kept.push_back(red ? 1 : s.shape[i]);
  }
  int64_t n_out = num_elements(out_shape);
  std::vector<std::optional<SymInt>> acc(n_out);
  std::vector<int64_t> idx(r, 0);
  for (int64_t k = 0; k < s.numel(); ++k) {
    int64_t o = 0;
    for (int64_t d = 0; d < r; ++d) o = o * kept[d] + (kept[d] == 1 ? 0 : idx[d]);
    const SymInt& v = s.v[k];
    if (!acc[o])
      acc[o] = v;
    else if (kind == "sum")
      acc[o] = sym_add(*acc[o], v);
    else if (kind == "prod")
      acc[o] = sym_mul(*acc[o], v);
    else if (kind == "max")
      acc[o] = sym_max(*acc[o], v);
    else
      acc[o] = sym_min(*acc[o], v);
    if (!acc[o]) return std::nullopt;
    for (int64_t d = r - 1; d >= 0; --d) {
      if (++idx[d] < s.shape[d]) break;
      idx[d] = 0;
    }
  }
  SymTensor out;
  out.dtype = s.dtype;
  out.shape = keep ? kept : out_shape;
  for (auto& a : acc) {
    if (!a) {
      if (kind == "sum")
        a = SymInt(0);
      else if (kind == "prod")
        a = SymInt(1);
      else
        return std::nullopt;
    }
    out.v.push_back(*a);
  }
  return out;
}

void reduce_op(OpTable& t, const char* name, int input_since,
               std::function<ValueId(NodeCtx&, ValueId, const std::vector<int64_t>&)> f) {
  std::string kind = name == std::string("ReduceSum")    ? "sum"
                     : name == std::string("ReduceProd") ? "prod"
                     : name == std::string("ReduceMax")  ? "max"
                     : name == std::string("ReduceMin")  ? "min"
                                                         : "";
  t[name] = [f, input_since, kind](NodeCtx& n) {
    auto axes = reduce_axes(n, input_since);
    if (!axes) return n.out_val(0, *n.in(0));
    if (auto s = n.sym(0); s && !kind.empty() && s->dtype != DType::kBool)
      if (auto r = fold_reduce(*s, *axes, n.attr_i("keepdims", 1) != 0, kind))
        return n.out_sym(0, *r);
    ValueId x = n.x(0);
    Shape in = n.shape(0);
    bool keep = n.attr_i("keepdims", 1) != 0;
    n.out(0, keep_or_drop(n, f(n, x, *axes), in, *axes, keep));
  };
}

ValueId bcast_back(GraphBuilder& b, ValueId reduced, const Shape& full,
                   const std::vector<int64_t>& axes) {
  IntList dims;
  for (int64_t i = 0; i < static_cast<int64_t>(full.size()); ++i)
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) dims.push_back(i);
  return b.broadcast_in_dim(reduced, full, dims);
}

// Axes a softmax-family op normalises over: opset < 13 flattens [axis, rank) into one.
std::vector<int64_t> softmax_axes(NodeCtx& n) {
  int64_t r = n.rank(0);
  if (r == 0) return {};
  if (n.opset >= 13) return {n.axis_attr("axis", -1, r)};
  int64_t axis = n.axis_attr("axis", 1, r);
  std::vector<int64_t> axes;
  for (int64_t i = axis; i < r; ++i) axes.push_back(i);
  return axes;
}

ValueId arg_reduce(NodeCtx& n, ValueId x, int64_t axis, bool is_max, bool last) {
  GraphBuilder& b = n.b;
  Shape s = b.type(x).shape;
  ValueId m = bcast_back(b, reduce_with(b, x, {axis}, is_max ? ReduceKind::kMax : ReduceKind::kMin),
                         s, {axis});
  ValueId hit = b.binary("eq", x, m);
  ValueId idx = iota(b, s, axis);
  ValueId len = b.broadcast_in_dim(n.dim_size(x, axis), s, {});
  ValueId none = last ? full_like(b, idx, -1.0) : len;
  ValueId cand = b.select(hit, idx, none);
  return b.reduce(cand, {axis}, last ? ReduceKind::kMax : ReduceKind::kMin);
}

// y[i] = sum of x over [0, i] along axis (or the exclusive / reversed variants), by log2(n)
// doubling steps of shifted adds: exact for integers, a different summation order for floats.
ValueId scan(NodeCtx& n, ValueId x, int64_t axis, bool exclusive, bool reverse, bool product) {
  GraphBuilder& b = n.b;
  Shape s = b.type(x).shape;
  if (!s[axis].is_static()) n.fail("scanning along a symbolic dim is not supported");
  int64_t len = s[axis].value;
  double fill = product ? 1.0 : 0.0;
  const char* op = product ? "mul" : "add";
  auto shifted = [&](ValueId v, int64_t by) {
    // v moved `by` places toward the scan direction, the vacated places filled with the identity.
    if (by >= len) return full_like(b, v, fill);
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < len - by; ++i) idx.push_back(reverse ? i + by : i);
    ValueId part = take(b, v, axis, idx);
    IntList lo(s.size(), 0), hi(s.size(), 0);
    (reverse ? hi : lo)[axis] = by;
    return b.op("pad", {part, b.scalar(b.type(v).dtype, fill)}, {{"low", lo}, {"high", hi}});
  };
  ValueId y = x;
  for (int64_t step = 1; step < len; step *= 2) y = b.binary(op, y, shifted(y, step));
  if (exclusive && len > 0) y = shifted(y, 1);
  return y;
}

// TopK by ranks: rank_i = #{j beating i}, ties to the lower index; O(n^2) per row.
void topk(NodeCtx& n) {
  int64_t r = n.rank(0);
  int64_t axis = n.axis_attr("axis", -1, r);
  int64_t k = n.opset >= 10 ? n.need_int(1, "k") : n.attr_i("k", 0);
  bool largest = n.attr_i("largest", 1) != 0;
  auto s = static_shape(n, n.type(0), "the input");
  int64_t len = s[axis];
  if (k < 0 || k > len) n.failf("k = {} is out of range for a dim of size {}", k, len);
  if (len > 4096) n.failf("TopK over {} elements is not supported (at most 4096)", len);
  GraphBuilder& b = n.b;
  IntList perm;
  for (int64_t i = 0; i < r; ++i)
    if (i != axis) perm.push_back(i);
  perm.push_back(axis);
  ValueId x = b.transpose(n.x(0), perm);
  Shape ts = b.type(x).shape;
  Shape pair = ts;
  pair.push_back(len);  // [..., i, j]
  IntList lead;
  for (int64_t i = 0; i < r - 1; ++i) lead.push_back(i);
  IntList di = lead, dj = lead;
  di.push_back(r - 1);
  dj.push_back(r);
  ValueId xi = b.broadcast_in_dim(x, pair, di), xj = b.broadcast_in_dim(x, pair, dj);
  ValueId ii = iota(b, pair, r - 1), jj = iota(b, pair, r);
  ValueId better = b.binary(largest ? "gt" : "lt", xj, xi);
  ValueId tie = b.binary("and", b.binary("eq", xj, xi), b.binary("lt", jj, ii));
  ValueId beats = b.convert(b.binary("or", better, tie), DType::kI64);
  ValueId rank = b.reduce(beats, {r}, ReduceKind::kSum);  // [..., i]
  Shape sel = ts;
  sel.back() = k;
  sel.push_back(len);  // [..., p, i]
  ValueId ri = b.broadcast_in_dim(rank, sel, dj);
  ValueId hit = b.binary("eq", ri, iota(b, sel, r - 1));
  ValueId idx =
      b.reduce(b.select(hit, iota(b, sel, r), full_like(b, ri, 0.0)), {r}, ReduceKind::kSum);
  // Values: gather each row's selected elements through flat offsets.
  Shape out = ts;
  out.back() = k;
  int64_t rows = 1;
  for (int64_t i = 0; i < r - 1; ++i) rows *= ts[i].value;
  ValueId row = b.reshape(iota(b, Shape{rows, k}, 0), out);
  ValueId flat = b.add(b.mul(row, full_like(b, row, static_cast<double>(len))), idx);
  ValueId vals = b.op("gather", {b.reshape(x, Shape{rows * len}), flat}, {{"axis", int64_t{0}}});
  IntList inv(r);
  for (int64_t i = 0; i < r; ++i) inv[perm[i]] = i;
  n.out(0, b.transpose(vals, inv));
  n.out(1, b.transpose(idx, inv));
}

}  // namespace

void register_reduce_ops(OpTable& t) {
  using Axes = std::vector<int64_t>;
  reduce_op(t, "ReduceSum", 13, [](NodeCtx& n, ValueId x, const Axes& a) {
    return n.b.reduce(x, a, ReduceKind::kSum);
  });
  reduce_op(t, "ReduceMax", 18, [](NodeCtx& n, ValueId x, const Axes& a) {
    return reduce_with(n.b, x, a, ReduceKind::kMax);
  });
  reduce_op(t, "ReduceMin", 18, [](NodeCtx& n, ValueId x, const Axes& a) {
    return reduce_with(n.b, x, a, ReduceKind::kMin);
  });
  reduce_op(t, "ReduceProd", 18, [](NodeCtx& n, ValueId x, const Axes& a) {
    return n.b.reduce(x, a, ReduceKind::kProd);
  });
  reduce_op(t, "ReduceMean", 18, [](NodeCtx& n, ValueId x, const Axes& a) {
    ValueId s = n.b.reduce(x, a, ReduceKind::kSum);
    return n.b.div(
        s, n.b.broadcast_in_dim(count_of(n, x, a, n.b.type(x).dtype), n.b.type(s).shape, {}));
  });
  reduce_op(t, "ReduceL1", 18, [](NodeCtx& n, ValueId x, const Axes& a) {
    return n.b.reduce(n.b.unary("abs", x), a, ReduceKind::kSum);
  });
  reduce_op(t, "ReduceL2", 18, [](NodeCtx& n, ValueId x, const Axes& a) {
    return n.b.unary("sqrt", n.b.reduce(n.b.mul(x, x), a, ReduceKind::kSum));
  });
  reduce_op(t, "ReduceSumSquare", 18, [](NodeCtx& n, ValueId x, const Axes& a) {
    return n.b.reduce(n.b.mul(x, x), a, ReduceKind::kSum);
  });
  reduce_op(t, "ReduceLogSum", 18, [](NodeCtx& n, ValueId x, const Axes& a) {
    return n.b.unary("log", n.b.reduce(x, a, ReduceKind::kSum));
  });
  reduce_op(t, "ReduceLogSumExp", 18, [](NodeCtx& n, ValueId x, const Axes& a) {
    GraphBuilder& b = n.b;
    Shape s = b.type(x).shape;
    ValueId m = b.reduce(x, a, ReduceKind::kMax);
    // An all -inf (or empty) slice keeps its max; others subtract it for stability.
    ValueId finite = b.binary("eq", b.binary("sub", m, m), full_like(b, m, 0.0));
    ValueId shift = b.select(finite, m, full_like(b, m, 0.0));
    ValueId e = b.unary("exp", b.sub(x, bcast_back(b, shift, s, a)));
    return b.add(b.unary("log", b.reduce(e, a, ReduceKind::kSum)), shift);
  });
  for (auto [name, is_max] : {std::pair{"ArgMax", true}, {"ArgMin", false}}) {
    bool mx = is_max;
    t[name] = [mx](NodeCtx& n) {
      int64_t r = n.rank(0);
      int64_t axis = n.axis_attr("axis", 0, r);
      ValueId y = arg_reduce(n, n.x(0), axis, mx, n.attr_i("select_last_index", 0) != 0);
      n.out(0, keep_or_drop(n, y, n.shape(0), {axis}, n.attr_i("keepdims", 1) != 0));
    };
  }
  t["Softmax"] = [](NodeCtx& n) {
    GraphBuilder& b = n.b;
    ValueId x = n.x(0);
    auto a = softmax_axes(n);
    Shape s = b.type(x).shape;
    ValueId e = b.unary("exp", b.sub(x, bcast_back(b, b.reduce(x, a, ReduceKind::kMax), s, a)));
    n.out(0, b.div(e, bcast_back(b, b.reduce(e, a, ReduceKind::kSum), s, a)));
  };
  t["LogSoftmax"] = [](NodeCtx& n) {
    GraphBuilder& b = n.b;
    ValueId x = n.x(0);
    auto a = softmax_axes(n);
    Shape s = b.type(x).shape;
    ValueId z = b.sub(x, bcast_back(b, b.reduce(x, a, ReduceKind::kMax), s, a));
    ValueId lse = b.unary("log", b.reduce(b.unary("exp", z), a, ReduceKind::kSum));
    n.out(0, b.sub(z, bcast_back(b, lse, s, a)));
  };
  t["Hardmax"] = [](NodeCtx& n) {
    GraphBuilder& b = n.b;
    auto a = softmax_axes(n);
    ValueId x = n.x(0);
    Shape s = b.type(x).shape;
    // Several axes (opset < 13) are flattened into one for the argmax.
    Shape flat(s.begin(), s.begin() + a.front());
    flat.push_back(dim_product(Shape(s.begin() + a.front(), s.begin() + a.back() + 1)));
    flat.insert(flat.end(), s.begin() + a.back() + 1, s.end());
    ValueId xf = b.reshape(x, flat);
    int64_t axis = a.front();
    ValueId am = arg_reduce(n, xf, axis, true, false);
    ValueId hit = b.binary("eq", iota(b, flat, axis), bcast_back(b, am, flat, {axis}));
    n.out(0, b.reshape(b.convert(hit, n.dtype(0)), s));
  };
  auto cumulative = [](bool product) {
    return [product](NodeCtx& n) {
      int64_t axis = n.norm_axis(n.need_int(1, "axis"), n.rank(0));
      n.out(0, scan(n, n.x(0), axis, n.attr_i("exclusive", 0) != 0, n.attr_i("reverse", 0) != 0,
                    product));
    };
  };
  t["CumSum"] = cumulative(false);
  t["CumProd"] = cumulative(true);
  t["TopK"] = topk;
}

}  // namespace rlx::onnx
