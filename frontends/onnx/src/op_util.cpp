#include "op_util.h"

#include <algorithm>

namespace rlx::onnx {

std::pair<ValueId, ValueId> broadcast2(GraphBuilder& b, ValueId x, ValueId y) {
  Shape s = broadcast_shapes(b.type(x).shape, b.type(y).shape);
  return {b.broadcast_to(x, s), b.broadcast_to(y, s)};
}

ValueId broadcast_binary(GraphBuilder& b, const std::string& prim, ValueId x, ValueId y) {
  auto [bx, by] = broadcast2(b, x, y);
  return b.binary(prim, bx, by);
}

ValueId iota(GraphBuilder& b, const Shape& s, int64_t dim, DType dt) {
  return b.op("iota", {}, {{"shape", s}, {"dim", dim}, {"dtype", dt}});
}

std::vector<int64_t> static_shape(const NodeCtx& n, const TensorType& t, const char* what) {
  std::vector<int64_t> out;
  for (const Dim& d : t.shape) {
    if (!d.is_static())
      n.failf("{} has symbolic dim '{}' ({}); rlx's {} importer needs it static", what, d.sym,
              t.str(), n.node.op_type());
    out.push_back(d.value);
  }
  return out;
}

Shape shape_from_syms(const NodeCtx& n, const std::vector<SymInt>& v, const char* what) {
  Shape s;
  int64_t total = 1;
  for (const SymInt& e : v) {
    auto d = e.to_dim();
    if (!d) n.failf("{} has a negative size ({})", what, e.str());
    // Sizes beyond 2^40 elements are a malformed model, and would overflow shape arithmetic.
    int64_t c = std::max<int64_t>(std::llabs(e.coef), 1);
    if (c > (int64_t{1} << 40) || __builtin_mul_overflow(total, c, &total) ||
        total > (int64_t{1} << 40))
      n.failf("{} holds more than 2^40 elements", what);
    s.push_back(*d);
  }
  return s;
}

int64_t wrap_int(DType d, int64_t v) {
  switch (d) {
    case DType::kBool:
      return v != 0;
    case DType::kI8:
      return static_cast<int8_t>(v);
    case DType::kU8:
      return static_cast<uint8_t>(v);
    case DType::kI16:
      return static_cast<int16_t>(v);
    case DType::kI32:
      return static_cast<int32_t>(v);
    default:
      return v;
  }
}

void set_int(Tensor& t, int64_t i, int64_t v) {
  switch (t.dtype()) {
    case DType::kI64:
      t.as<int64_t>()[i] = v;
      break;
    case DType::kI32:
      t.as<int32_t>()[i] = static_cast<int32_t>(v);
      break;
    case DType::kI16:
      t.as<int16_t>()[i] = static_cast<int16_t>(v);
      break;
    case DType::kI8:
      t.as<int8_t>()[i] = static_cast<int8_t>(v);
      break;
    case DType::kBool:
      t.as<uint8_t>()[i] = v != 0;
      break;
    default:
      t.as<uint8_t>()[i] = static_cast<uint8_t>(v);
      break;
  }
}

std::optional<SymTensor> fold_binary(const SymTensor& a, const SymTensor& b, DType out,
                                     const SymBinary& f) {
  size_t rank = std::max(a.shape.size(), b.shape.size());
  std::vector<int64_t> sa(rank, 1), sb(rank, 1), so(rank, 1);
  std::copy(a.shape.begin(), a.shape.end(), sa.begin() + (rank - a.shape.size()));
  std::copy(b.shape.begin(), b.shape.end(), sb.begin() + (rank - b.shape.size()));
  int64_t n = 1;
  for (size_t i = 0; i < rank; ++i) {
    if (sa[i] != sb[i] && sa[i] != 1 && sb[i] != 1) return std::nullopt;
    so[i] = sa[i] == 1 ? sb[i] : sa[i];
    n *= so[i];
  }
  if (n > kMaxSymElements) return std::nullopt;
  SymTensor r;
  r.dtype = out;
  r.shape = so;
  r.v.reserve(n);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t ia = 0, ib = 0;
    for (size_t d = 0; d < rank; ++d) {
      ia = ia * sa[d] + (sa[d] == 1 ? 0 : idx[d]);
      ib = ib * sb[d] + (sb[d] == 1 ? 0 : idx[d]);
    }
    auto e = f(a.v[ia], b.v[ib]);
    if (!e) return std::nullopt;
    if (e->is_static()) e = SymInt(wrap_int(out, e->coef));
    r.v.push_back(*e);
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++idx[d] < so[d]) break;
      idx[d] = 0;
    }
  }
  return r;
}

ValueId take(GraphBuilder& b, ValueId x, int64_t axis, const std::vector<int64_t>& indices) {
  TensorType t = b.type(x);
  // An arithmetic progression with a positive step is a strided slice.
  bool progression = !indices.empty();
  int64_t step = indices.size() > 1 ? indices[1] - indices[0] : 1;
  for (size_t i = 1; i < indices.size() && progression; ++i)
    progression = indices[i] - indices[i - 1] == step;
  if (progression && step > 0) {
    IntList start(t.rank(), 0), limit(t.rank(), -1), strides(t.rank(), 1);
    for (int64_t d = 0; d < t.rank(); ++d)
      if (t.shape[d].is_static()) limit[d] = t.shape[d].value;
    start[axis] = indices.front();
    limit[axis] = indices.back() + 1;
    strides[axis] = step;
    bool whole = start[axis] == 0 && step == 1 && t.shape[axis].is_static() &&
                 limit[axis] == t.shape[axis].value;
    if (whole) return x;
    return b.slice(x, start, limit, strides);
  }
  Tensor idx = Tensor::from<int64_t>(DType::kI64, {static_cast<int64_t>(indices.size())}, indices);
  return b.op("gather", {x, b.constant(idx)}, {{"axis", axis}});
}

std::vector<int64_t> norm_axes(const NodeCtx& n, std::vector<int64_t> axes, int64_t rank) {
  for (int64_t& a : axes) a = n.norm_axis(a, rank);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) n.fail("an axis is listed twice");
  return axes;
}

ValueId full_like(GraphBuilder& b, ValueId v, double value) {
  return b.full_like(v, value);
}

ValueId to_rank(GraphBuilder& b, ValueId v, int64_t r) {
  Shape s = b.type(v).shape;
  if (static_cast<int64_t>(s.size()) >= r) return v;
  Shape t(r - s.size(), Dim(1));
  t.insert(t.end(), s.begin(), s.end());
  return b.reshape(v, t);
}

}  // namespace rlx::onnx
