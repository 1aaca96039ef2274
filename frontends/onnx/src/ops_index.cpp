// Indexing ops. Element-wise gathers and scatters (GatherElements, GatherND, ScatterElements,
// ScatterND) become one MIR gather or scatter on the flattened tensor with computed flat indices.
#include <algorithm>
#include <cmath>

#include "op_util.h"

namespace rlx::onnx {

namespace {

ValueId as_index(GraphBuilder& b, ValueId v) {
  DType d = b.type(v).dtype;
  return d == DType::kI32 || d == DType::kI64 ? v : b.convert(v, DType::kI64);
}

// idx < 0 ? idx + len : idx, in i64.
ValueId wrap_negative(GraphBuilder& b, ValueId idx, int64_t len) {
  idx = b.convert(idx, DType::kI64);
  ValueId zero = full_like(b, idx, 0.0);
  return b.select(b.binary("lt", idx, zero),
                  b.add(idx, full_like(b, idx, static_cast<double>(len))), idx);
}

std::vector<int64_t> strides_of(const std::vector<int64_t>& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int64_t d = static_cast<int64_t>(s.size()) - 2; d >= 0; --d) st[d] = st[d + 1] * s[d + 1];
  return st;
}

// Flat offsets into a tensor of shape `data` for GatherElements/ScatterElements: the index
// tensor replaces the coordinate along `axis`, the others are the element's own coordinates.
ValueId element_offsets(NodeCtx& n, ValueId idx, const std::vector<int64_t>& data, int64_t axis) {
  Shape is = n.b.type(idx).shape;
  auto st = strides_of(data);
  ValueId w = wrap_negative(n.b, idx, data[axis]);
  ValueId flat = n.b.mul(w, full_like(n.b, w, static_cast<double>(st[axis])));
  for (int64_t d = 0; d < static_cast<int64_t>(data.size()); ++d) {
    if (d == axis || st[d] == 0) continue;
    ValueId io = iota(n.b, is, d);
    flat = n.b.add(flat, n.b.mul(io, full_like(n.b, io, static_cast<double>(st[d]))));
  }
  return flat;
}

void gather_op(NodeCtx& n) {
  int64_t r = n.rank(0);
  int64_t axis = n.axis_attr("axis", 0, r);
  auto data = n.sym(0);
  auto idx = n.konst(1);
  if (data && idx && is_static(n.shape(0))) {
    int64_t len = data->shape[axis];
    std::vector<int64_t> ids;
    bool ok = true;
    for (int64_t i = 0; i < idx->numel(); ++i) {
      auto v = static_cast<int64_t>(idx->scalar_at(i));
      if (v < -len || v >= len) ok = false;
      ids.push_back(v < 0 ? v + len : v);
    }
    if (ok) {
      SymTensor g = sym_take_axis(*data, axis, ids);
      std::vector<int64_t> shape(data->shape.begin(), data->shape.begin() + axis);
      shape.insert(shape.end(), idx->shape().begin(), idx->shape().end());
      shape.insert(shape.end(), data->shape.begin() + axis + 1, data->shape.end());
      g.shape = shape;
      return n.out_sym(0, g);
    }
  }
  n.out(0, n.b.op("gather", {n.x(0), as_index(n.b, n.x(1))}, {{"axis", axis}}));
}

void gather_elements(NodeCtx& n) {
  if (n.rank(1) != n.rank(0)) n.fail("data and indices must have the same rank");
  int64_t axis = n.axis_attr("axis", 0, n.rank(0));
  n.out(0, gather_along(n, n.x(0), n.x(1), axis));
}

std::string scatter_reduction(NodeCtx& n) {
  std::string red = n.attr_s("reduction", "none");
  if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min")
    n.failf("reduction '{}' is not supported", red);
  return red;
}

// data [N, rest...] updated at rows idx [M] by upd [M, rest...]. MIR scatter writes or adds;
// mul/max/min combine every update of a row through a one-hot [M, N] selection instead.
ValueId scatter_rows(NodeCtx& n, ValueId data, ValueId idx, ValueId upd, const std::string& red) {
  GraphBuilder& b = n.b;
  if (red == "none" || red == "add")
    return b.op("scatter", {data, idx, upd}, {{"axis", int64_t{0}}, {"reduce", red}});
  Shape ds = b.type(data).shape, us = b.type(upd).shape;
  int64_t N = ds[0].value, M = us[0].value;
  if (N * M > (int64_t{1} << 24))
    n.failf("reduction '{}' over {} x {} rows is too large", red, M, N);
  Shape mn{M, N}, full = mn;
  full.insert(full.end(), ds.begin() + 1, ds.end());
  ValueId hit =
      b.binary("eq", iota(b, mn, 1), b.broadcast_in_dim(b.convert(idx, DType::kI64), mn, {0}));
  IntList rest{0};
  for (size_t i = 2; i < full.size(); ++i) rest.push_back(static_cast<int64_t>(i));
  IntList hd{0, 1};
  ValueId hitf = b.broadcast_in_dim(hit, full, hd);
  ValueId uf = b.broadcast_in_dim(upd, full, rest);
  DType dt = b.type(data).dtype;
  double ident = red == "mul"   ? 1.0
                 : red == "max" ? (is_float(dt) ? -INFINITY : -9.2e18)
                                : (is_float(dt) ? INFINITY : 9.2e18);
  if (!is_float(dt) && red != "mul")
    ident = red == "max" ? (dt == DType::kU8 ? 0.0 : -2147483648.0) : 2147483647.0;
  ValueId sel = b.select(hitf, uf, full_like(b, uf, ident));
  ReduceKind k = red == "mul"   ? ReduceKind::kProd
                 : red == "max" ? ReduceKind::kMax
                                : ReduceKind::kMin;
  ValueId comb = b.reduce(sel, {0}, k);
  ValueId any = b.broadcast_in_dim(
      b.convert(b.reduce(b.convert(hit, DType::kI32), {0}, ReduceKind::kMax), DType::kBool), ds,
      {0});
  ValueId merged = b.binary(red == "mul" ? "mul" : red, data, comb);
  return b.select(any, merged, data);
}

void scatter_elements(NodeCtx& n) {
  auto ds = static_shape(n, n.type(0), "the data");
  auto is = static_shape(n, n.type(1), "the indices");
  if (n.rank(1) != n.rank(0) || !(n.shape(2) == n.shape(1)))
    n.fail("indices and updates must match the data's rank");
  int64_t axis = n.axis_attr("axis", 0, n.rank(0));
  std::string red = scatter_reduction(n);
  int64_t m = num_elements(is);
  ValueId flat = n.b.reshape(element_offsets(n, n.x(1), ds, axis), Shape{m});
  ValueId data = n.b.reshape(n.x(0), Shape{num_elements(ds)});
  ValueId upd = n.b.reshape(n.x(2), Shape{m});
  ValueId out = scatter_rows(n, data, flat, upd, red);
  n.out(0, n.b.reshape(out, n.shape(0)));
}

// Flat offsets of the index tuples in idx[..., k] over data's first batch + k dims.
ValueId tuple_offsets(NodeCtx& n, ValueId idx, const std::vector<int64_t>& ds, int64_t batch) {
  auto is = static_shape(n, n.b.type(idx), "the indices");
  int64_t k = is.back();
  std::vector<int64_t> lead(ds.begin(), ds.begin() + batch + k);
  auto st = strides_of(lead);
  Shape out(is.begin(), is.end() - 1);
  ValueId flat =
      n.b.broadcast_in_dim(n.b.constant(Tensor::from<int64_t>(DType::kI64, {}, {0})), out, {});
  for (int64_t j = 0; j < batch; ++j) {
    ValueId io = iota(n.b, out, j);
    flat = n.b.add(flat, n.b.mul(io, full_like(n.b, io, static_cast<double>(st[j]))));
  }
  int64_t rk = static_cast<int64_t>(is.size());
  for (int64_t j = 0; j < k; ++j) {
    IntList start(rk, 0), limit(is.begin(), is.end());
    start[rk - 1] = j;
    limit[rk - 1] = j + 1;
    ValueId c = n.b.reshape(n.b.slice(idx, start, limit), out);
    c = wrap_negative(n.b, c, ds[batch + j]);
    flat = n.b.add(flat, n.b.mul(c, full_like(n.b, c, static_cast<double>(st[batch + j]))));
  }
  return flat;
}

void gather_nd(NodeCtx& n) {
  auto ds = static_shape(n, n.type(0), "the data");
  auto is = static_shape(n, n.type(1), "the indices");
  int64_t batch = n.attr_i("batch_dims", 0);
  if (is.empty()) n.fail("indices must have rank >= 1");
  int64_t k = is.back();
  if (batch < 0 || batch + k > static_cast<int64_t>(ds.size()))
    n.fail("indices address more dims than the data has");
  ValueId flat = tuple_offsets(n, n.x(1), ds, batch);
  Shape rows{num_elements(std::vector<int64_t>(ds.begin(), ds.begin() + batch + k))};
  rows.insert(rows.end(), ds.begin() + batch + k, ds.end());
  ValueId data = n.b.reshape(n.x(0), rows);
  n.out(0, n.b.op("gather", {data, flat}, {{"axis", int64_t{0}}}));
}

void scatter_nd(NodeCtx& n) {
  auto ds = static_shape(n, n.type(0), "the data");
  auto is = static_shape(n, n.type(1), "the indices");
  std::string red = scatter_reduction(n);
  int64_t k = is.back();
  if (k > static_cast<int64_t>(ds.size())) n.fail("index tuples are longer than the data's rank");
  ValueId flat = tuple_offsets(n, n.x(1), ds, 0);
  int64_t m = num_elements(std::vector<int64_t>(is.begin(), is.end() - 1));
  Shape rows{num_elements(std::vector<int64_t>(ds.begin(), ds.begin() + k))}, upd_rows{m};
  rows.insert(rows.end(), ds.begin() + k, ds.end());
  upd_rows.insert(upd_rows.end(), ds.begin() + k, ds.end());
  ValueId data = n.b.reshape(n.x(0), rows);
  ValueId upd = n.b.reshape(n.x(2), upd_rows);
  ValueId out = scatter_rows(n, data, n.b.reshape(flat, Shape{m}), upd, red);
  n.out(0, n.b.reshape(out, n.shape(0)));
}

void one_hot(NodeCtx& n) {
  int64_t depth = n.need_int(1, "depth");
  if (depth < 0) n.fail("depth is negative");
  int64_t r = n.rank(0) + 1;
  int64_t axis = n.axis_attr("axis", -1, r);
  ValueId idx = n.b.convert(n.x(0), DType::kI64);
  idx = wrap_negative(n.b, idx, depth);
  Shape out = n.shape(0);
  out.insert(out.begin() + axis, Dim(depth));
  IntList dims;
  for (int64_t d = 0; d < r; ++d)
    if (d != axis) dims.push_back(d);
  ValueId hit = n.b.binary("eq", iota(n.b, out, axis), n.b.broadcast_in_dim(idx, out, dims));
  ValueId vals = n.x(2);
  auto pick = [&](int64_t i) {
    ValueId v = n.b.reshape(n.b.slice(vals, {i}, {i + 1}), Shape{});
    return n.b.broadcast_in_dim(v, out, {});
  };
  n.out(0, n.b.select(hit, pick(1), pick(0)));
}

void trilu(NodeCtx& n) {
  int64_t r = n.rank(0);
  if (r < 2) n.fail("needs rank >= 2");
  int64_t k = n.has(1) ? n.need_int(1, "k") : 0;
  bool upper = n.attr_i("upper", 1) != 0;
  const Shape& s = n.shape(0);
  Shape mat{s[r - 2], s[r - 1]};
  ValueId diff = n.b.sub(iota(n.b, mat, 1), iota(n.b, mat, 0));
  ValueId kk = full_like(n.b, diff, static_cast<double>(k));
  ValueId keep = n.b.binary(upper ? "ge" : "le", diff, kk);
  keep = n.b.broadcast_in_dim(keep, s, {r - 2, r - 1});
  ValueId x = n.x(0);
  n.out(0, n.b.select(keep, x, full_like(n.b, x, 0.0)));
}

void compress(NodeCtx& n) {
  Tensor cond = n.need_const(1, "the condition");
  ValueId x = n.x(0);
  int64_t axis = 0;
  if (n.has_attr("axis")) {
    axis = n.axis_attr("axis", 0, n.rank(0));
  } else {
    x = n.b.reshape(x, Shape{dim_product(n.shape(0))});
  }
  Dim d = n.b.type(x).shape[axis];
  if (!d.is_static()) n.fail("compress along a symbolic dim");
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < std::min<int64_t>(cond.numel(), d.value); ++i)
    if (cond.scalar_at(i) != 0) idx.push_back(i);
  if (idx.empty()) {
    Shape s = n.b.type(x).shape;
    s[axis] = 0;
    return n.out(0, n.b.broadcast_in_dim(n.b.scalar(n.dtype(0), 0), s, {}));
  }
  n.out(0, take(n.b, x, axis, idx));
}

void nonzero(NodeCtx& n) {
  auto t = n.konst(0);
  if (!t)
    n.fail(
        "the result's shape depends on the input's values; rlx supports NonZero of constants only");
  auto shape = t->shape();
  auto st = strides_of(shape);
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < t->numel(); ++i)
    if (t->scalar_at(i) != 0) hits.push_back(i);
  int64_t r = static_cast<int64_t>(shape.size()), m = static_cast<int64_t>(hits.size());
  Tensor out(DType::kI64, {r, m});
  for (int64_t j = 0; j < m; ++j)
    for (int64_t d = 0; d < r; ++d) out.as<int64_t>()[d * m + j] = (hits[j] / st[d]) % shape[d];
  n.out_const(0, out);
}

}  // namespace

ValueId gather_along(NodeCtx& n, ValueId data, ValueId idx, int64_t axis) {
  auto ds = static_shape(n, n.b.type(data), "the data");
  static_shape(n, n.b.type(idx), "the indices");
  ValueId flat = element_offsets(n, idx, ds, axis);
  ValueId d = n.b.reshape(data, Shape{num_elements(ds)});
  return n.b.op("gather", {d, flat}, {{"axis", int64_t{0}}});
}

void register_index_ops(OpTable& t) {
  t["Gather"] = gather_op;
  t["GatherElements"] = gather_elements;
  t["GatherND"] = gather_nd;
  t["ScatterElements"] = scatter_elements;
  t["Scatter"] = scatter_elements;
  t["ScatterND"] = scatter_nd;
  t["OneHot"] = one_hot;
  t["Trilu"] = trilu;
  t["Compress"] = compress;
  t["NonZero"] = nonzero;
}

}  // namespace rlx::onnx
