// Slice, Split and Pad: index lists computed at import time, lowered to strided slices, pads
// and (for reversed or wrapped order) gathers with constant indices.
#include <algorithm>
#include <climits>

#include "op_util.h"

namespace rlx::onnx {

namespace {

// Host version of take() for known integer tensors.
SymTensor sym_take(const SymTensor& s, int64_t axis, const std::vector<int64_t>& idx) {
  int64_t outer = 1, inner = 1, len = s.shape[axis];
  for (int64_t d = 0; d < axis; ++d) outer *= s.shape[d];
  for (size_t d = axis + 1; d < s.shape.size(); ++d) inner *= s.shape[d];
  SymTensor r;
  r.dtype = s.dtype;
  r.shape = s.shape;
  r.shape[axis] = static_cast<int64_t>(idx.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i : idx)
      for (int64_t k = 0; k < inner; ++k) r.v.push_back(s.v[(o * len + i) * inner + k]);
  return r;
}

// ONNX Slice clamping for one axis of static size d.
std::vector<int64_t> slice_indices(int64_t d, int64_t s, int64_t e, int64_t step) {
  if (s < 0) s += d;
  if (e < 0) e += d;
  if (step > 0) {
    s = std::clamp<int64_t>(s, 0, d);
    e = std::clamp<int64_t>(e, 0, d);
  } else {
    s = std::clamp<int64_t>(s, 0, d - 1);
    e = std::clamp<int64_t>(e, -1, d - 1);
  }
  std::vector<int64_t> out;
  if (step > 0)
    for (int64_t i = s; i < e; i += step) out.push_back(i);
  else
    for (int64_t i = s; i > e; i += step) out.push_back(i);
  return out;
}

constexpr int64_t kHuge = INT64_MAX / 4;  // "to the end" markers exporters write (INT_MAX, ...)

// Slicing along a symbolic dim, or with symbolic bounds: the forms decoders and encoders emit.
ValueId symbolic_slice(NodeCtx& n, ValueId x, int64_t axis, const SymInt& s, const SymInt& e,
                       int64_t step) {
  Dim d = n.b.type(x).shape[axis];
  SymInt dim = SymInt::from_dim(d);
  bool to_end = (e.is_static() && e.coef >= kHuge) || e == dim;
  if (step == 1 && s.is_static() && s.coef == 0 && to_end) return x;
  if (step == 1 && s.is_static() && s.coef < 0 && s.coef > -kHuge && to_end) {
    // The last k elements: indices (size - k) + iota(k), resolved at run time.
    int64_t k = -s.coef;
    ValueId base =
        n.b.sub(n.dim_size(x, axis), n.b.constant(Tensor::from<int64_t>(DType::kI64, {}, {k})));
    ValueId idx = n.b.add(iota(n.b, Shape{k}, 0), n.b.broadcast_in_dim(base, Shape{k}, {}));
    return n.b.op("gather", {x, idx}, {{"axis", axis}});
  }
  if (step == 1 && s.is_static() && s.coef >= 0) {
    // [s, e) with e an expression of the model's symbols, or a static bound on a symbolic dim:
    // the length is e - s, and gather checks the indices against the actual size at run time.
    auto len = sym_add(e, SymInt(-s.coef));
    if (len && len->nonneg() && !(e.is_static() && e.coef >= kHuge)) {
      auto ld = len->to_dim();
      if (ld) {
        ValueId idx = iota(n.b, Shape{*ld}, 0);
        if (s.coef) idx = n.b.add(idx, full_like(n.b, idx, static_cast<double>(s.coef)));
        return n.b.op("gather", {x, idx}, {{"axis", axis}});
      }
    }
  }
  n.failf("slice [{}:{}:{}] of dim {} ({}) is not expressible with symbolic sizes", s.str(),
          e.str(), step, axis, d.str());
}

void slice_op(NodeCtx& n) {
  int64_t r = n.rank(0);
  std::vector<SymInt> starts, ends;
  std::vector<int64_t> axes, steps;
  if (n.opset < 10) {
    for (int64_t v : n.attr_ints("starts")) starts.emplace_back(v);
    for (int64_t v : n.attr_ints("ends")) ends.emplace_back(v);
    axes = n.attr_ints("axes");
  } else {
    starts = n.need_syms(1, "starts");
    ends = n.need_syms(2, "ends");
    if (n.has(3)) axes = n.need_ints(3, "axes");
    if (n.has(4)) steps = n.need_ints(4, "steps");
  }
  if (starts.size() != ends.size()) n.fail("starts and ends have different lengths");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    n.fail("starts, ends, axes and steps must have the same length");
  auto data_sym = n.sym(0);
  ValueId x = kNoValue;
  std::vector<bool> seen(r, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = n.norm_axis(axes[i], r);
    if (seen[axis]) n.failf("axis {} is sliced twice", axis);
    seen[axis] = true;
    if (steps[i] == 0) n.fail("a step is 0");
    const Dim& d = n.shape(0)[axis];
    bool static_bounds = starts[i].is_static() && ends[i].is_static();
    if (d.is_static() && static_bounds) {
      n.check_count(d.value, "the slice's index list");
      auto idx = slice_indices(d.value, starts[i].coef, ends[i].coef, steps[i]);
      if (data_sym) {
        data_sym = sym_take(*data_sym, axis, idx);
        continue;
      }
      if (x == kNoValue) x = n.x(0);
      x = take(n.b, x, axis, idx);
      continue;
    }
    if (data_sym) {
      // Falls back to the graph for this and the remaining axes.
      Val tmp;
      tmp.type = TensorType{data_sym->dtype, Shape(data_sym->shape.begin(), data_sym->shape.end())};
      tmp.sym = data_sym;
      x = n.cv.materialize(tmp);
      data_sym.reset();
    }
    if (x == kNoValue) x = n.x(0);
    x = symbolic_slice(n, x, axis, starts[i], ends[i], steps[i]);
  }
  if (data_sym) return n.out_sym(0, *data_sym);
  if (x == kNoValue) return n.out_val(0, *n.in(0));
  n.out(0, x);
}

void split_op(NodeCtx& n) {
  int64_t r = n.rank(0);
  int64_t axis = n.axis_attr("axis", 0, r);
  const Dim& d = n.shape(0)[axis];
  if (!d.is_static()) n.failf("split along symbolic dim {} ({}) is not supported", axis, d.sym);
  std::vector<int64_t> sizes;
  if (n.opset >= 13 && n.has(1))
    sizes = n.need_ints(1, "split");
  else if (n.opset < 13)
    sizes = n.attr_ints("split");
  int outs = n.num_outputs();
  if (sizes.empty()) {
    int64_t parts = n.has_attr("num_outputs") ? n.attr_i("num_outputs", outs) : outs;
    if (parts <= 0) n.fail("needs at least one output");
    // Equal parts; opset 18's num_outputs lets the last part be smaller.
    int64_t each = (d.value + parts - 1) / parts;
    if (!n.has_attr("num_outputs") && d.value % parts)
      n.failf("dim {} of size {} does not split into {} equal parts", axis, d.value, parts);
    for (int64_t p = 0, left = d.value; p < parts; ++p, left -= each)
      sizes.push_back(std::min(each, left));
  }
  if (static_cast<int>(sizes.size()) != outs)
    n.failf("{} split sizes for {} outputs", sizes.size(), outs);
  n.check_count(d.value, "the split");
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  if (total != d.value) n.failf("split sizes sum to {}, the dim has {}", total, d.value);
  auto data_sym = n.sym(0);
  int64_t at = 0;
  for (int k = 0; k < outs; ++k) {
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < sizes[k]; ++i) idx.push_back(at + i);
    at += sizes[k];
    if (!n.wants(k)) continue;
    if (data_sym) {
      n.out_sym(k, sym_take(*data_sym, axis, idx));
      continue;
    }
    if (idx.empty()) {
      Shape s = n.shape(0);
      s[axis] = 0;
      n.out(k, n.b.broadcast_in_dim(n.b.scalar(n.dtype(0), 0), s, {}));
      continue;
    }
    n.out(k, take(n.b, n.x(0), axis, idx));
  }
}

// Index list for one axis of size d padded by lo / hi in a non-constant mode.
std::vector<int64_t> pad_indices(NodeCtx& n, const std::string& mode, int64_t d, int64_t lo,
                                 int64_t hi) {
  n.check_count(d + lo + hi, "the padded index list");
  std::vector<int64_t> idx;
  for (int64_t i = -lo; i < d + hi; ++i) {
    int64_t j = i;
    if (mode == "edge") {
      j = std::clamp<int64_t>(i, 0, d - 1);
    } else if (mode == "wrap") {
      j = ((i % d) + d) % d;
    } else {  // reflect: mirror without repeating the edge
      if (d == 1)
        j = 0;
      else {
        int64_t period = 2 * (d - 1);
        j = ((i % period) + period) % period;
        if (j >= d) j = period - j;
      }
    }
    idx.push_back(j);
  }
  if (d == 0 && !idx.empty()) n.failf("cannot pad an empty dim in {} mode", mode);
  return idx;
}

void pad_op(NodeCtx& n) {
  int64_t r = n.rank(0);
  std::string mode = n.attr_s("mode", "constant");
  std::vector<int64_t> pads;
  double value = 0;
  std::optional<int> value_input;
  if (n.opset < 11) {
    pads = n.opset < 2 ? n.attr_ints("paddings") : n.attr_ints("pads");
    value = n.attr_f("value", 0.0f);
  } else {
    pads = n.need_ints(1, "pads");
    if (n.has(2)) value_input = 2;
  }
  std::vector<int64_t> axes;
  if (n.opset >= 18 && n.has(3))
    axes = norm_axes(n, n.need_ints(3, "axes"), r);
  else
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  if (pads.size() != 2 * axes.size())
    n.failf("pads has {} entries for {} axes", pads.size(), axes.size());
  IntList lo(r, 0), hi(r, 0);
  for (size_t i = 0; i < axes.size(); ++i)
    lo[axes[i]] = pads[i], hi[axes[i]] = pads[i + axes.size()];
  ValueId x = n.x(0);
  // Negative pads crop first.
  for (int64_t a = 0; a < r; ++a) {
    if (lo[a] >= 0 && hi[a] >= 0) continue;
    Dim d = n.b.type(x).shape[a];
    if (!d.is_static()) n.fail("negative pads on a symbolic dim");
    n.check_count(d.value, "the cropped index list");
    int64_t s = std::max<int64_t>(-lo[a], 0), e = d.value - std::max<int64_t>(-hi[a], 0);
    std::vector<int64_t> idx;
    for (int64_t i = s; i < e; ++i) idx.push_back(i);
    x = take(n.b, x, a, idx);
    lo[a] = std::max<int64_t>(lo[a], 0), hi[a] = std::max<int64_t>(hi[a], 0);
  }
  if (mode == "constant") {
    if (std::all_of(lo.begin(), lo.end(), [](int64_t v) { return v == 0; }) &&
        std::all_of(hi.begin(), hi.end(), [](int64_t v) { return v == 0; }))
      return n.out(0, x);
    ValueId v =
        value_input ? n.b.reshape(n.x(*value_input), Shape{}) : n.b.scalar(n.dtype(0), value);
    return n.out(0, n.b.op("pad", {x, v}, {{"low", lo}, {"high", hi}}));
  }
  if (mode != "reflect" && mode != "edge" && mode != "wrap")
    n.failf("mode '{}' is not supported", mode);
  for (int64_t a = 0; a < r; ++a) {
    if (lo[a] == 0 && hi[a] == 0) continue;
    Dim d = n.b.type(x).shape[a];
    if (!d.is_static()) n.fail("padding a symbolic dim");
    x = take(n.b, x, a, pad_indices(n, mode, d.value, lo[a], hi[a]));
  }
  n.out(0, x);
}

}  // namespace

SymTensor sym_take_axis(const SymTensor& s, int64_t axis, const std::vector<int64_t>& idx) {
  return sym_take(s, axis, idx);
}

void register_slice_ops(OpTable& t) {
  t["Slice"] = slice_op;
  t["Split"] = split_op;
  t["Pad"] = pad_op;
}

}  // namespace rlx::onnx
