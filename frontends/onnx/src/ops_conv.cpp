// Convolutions and pools of any spatial rank. Windows are gathered with a constant index table
// (im2col) from the padded, spatially flattened input: [N, C, P] -> [N, C, out positions, K];
// a convolution is then one dot_general, a pool one reduction. Geometry (pads, auto_pad,
// strides, dilations, ceil_mode) is resolved into the table at import time.
#include <cmath>
#include <limits>

#include "op_util.h"

namespace rlx::onnx {

namespace {

struct Window {
  std::vector<int64_t> in, k, stride, dil, lo, hi, out;
  int64_t spatial() const { return static_cast<int64_t>(in.size()); }
  int64_t out_count() const { return num_elements(out); }
  int64_t k_count() const { return num_elements(k); }
};

std::vector<int64_t> attr_or(const NodeCtx& n, const char* name, size_t count, int64_t fallback) {
  auto v = n.attr_ints(name);
  if (v.empty()) v.assign(count, fallback);
  if (v.size() != count) n.failf("attribute '{}' has {} entries, {} needed", name, v.size(), count);
  return v;
}

Window window(const NodeCtx& n, std::vector<int64_t> in, std::vector<int64_t> k, bool ceil_mode) {
  Window w;
  size_t sp = in.size();
  w.in = std::move(in);
  w.k = std::move(k);
  w.stride = attr_or(n, "strides", sp, 1);
  w.dil = attr_or(n, "dilations", sp, 1);
  auto pads = attr_or(n, "pads", 2 * sp, 0);
  std::string auto_pad = n.attr_s("auto_pad", "NOTSET");
  for (size_t i = 0; i < sp; ++i) {
    if (w.stride[i] < 1 || w.dil[i] < 1 || w.k[i] < 1)
      n.fail("strides, dilations and kernel sizes must be positive");
    int64_t dk = (w.k[i] - 1) * w.dil[i] + 1;
    int64_t lo = pads[i], hi = pads[i + sp];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t out = (w.in[i] + w.stride[i] - 1) / w.stride[i];
      int64_t total = std::max<int64_t>((out - 1) * w.stride[i] + dk - w.in[i], 0);
      lo = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      hi = total - lo;
    } else if (auto_pad == "VALID") {
      lo = hi = 0;
    } else if (auto_pad != "NOTSET") {
      n.failf("auto_pad '{}' is not supported", auto_pad);
    }
    if (lo < 0 || hi < 0) n.fail("negative pads are not supported");
    int64_t span = w.in[i] + lo + hi - dk;
    if (span < 0) n.fail("the kernel is larger than the padded input");
    int64_t out = span / w.stride[i] + 1;
    if (ceil_mode && span % w.stride[i]) {
      ++out;
      // The last window must start inside the input or its leading pad (PyTorch's rule).
      if ((out - 1) * w.stride[i] >= w.in[i] + lo) --out;
    }
    w.lo.push_back(lo);
    w.hi.push_back(hi);
    w.out.push_back(out);
  }
  return w;
}

// Padded extent along spatial dim i, large enough for every window (ceil_mode may reach past
// the declared pads).
int64_t padded_extent(const Window& w, size_t i) {
  int64_t need = (w.out[i] - 1) * w.stride[i] + (w.k[i] - 1) * w.dil[i] + 1;
  return std::max(w.in[i] + w.lo[i] + w.hi[i], need);
}

// Calls f(out_index, k_index, coords) for every window element; coords are input coordinates
// (may lie in the padding: < 0 or >= in).
template <typename F>
void for_each_tap(const Window& w, F&& f) {
  size_t sp = w.in.size();
  std::vector<int64_t> o(sp, 0), k(sp, 0), c(sp);
  for (int64_t oi = 0; oi < w.out_count(); ++oi) {
    std::fill(k.begin(), k.end(), 0);
    for (int64_t ki = 0; ki < w.k_count(); ++ki) {
      for (size_t d = 0; d < sp; ++d) c[d] = o[d] * w.stride[d] + k[d] * w.dil[d] - w.lo[d];
      f(oi, ki, c);
      for (int64_t d = static_cast<int64_t>(sp) - 1; d >= 0; --d) {
        if (++k[d] < w.k[d]) break;
        k[d] = 0;
      }
    }
    for (int64_t d = static_cast<int64_t>(sp) - 1; d >= 0; --d) {
      if (++o[d] < w.out[d]) break;
      o[d] = 0;
    }
  }
}

// [N, C, spatial...] -> [N, C, OP, K] windows, padding filled with `fill`.
ValueId windows(NodeCtx& n, ValueId x, const Window& w, double fill) {
  GraphBuilder& b = n.b;
  TensorType t = b.type(x);
  size_t sp = w.in.size();
  IntList lo(t.rank(), 0), hi(t.rank(), 0);
  std::vector<int64_t> ext(sp);
  bool padded = false;
  for (size_t i = 0; i < sp; ++i) {
    ext[i] = padded_extent(w, i);
    lo[2 + i] = w.lo[i];
    hi[2 + i] = ext[i] - w.in[i] - w.lo[i];
    padded = padded || lo[2 + i] || hi[2 + i];
  }
  if (padded) x = b.op("pad", {x, b.scalar(t.dtype, fill)}, {{"low", lo}, {"high", hi}});
  int64_t P = num_elements(ext);
  n.check_count(w.out_count() * w.k_count(), "the window table");
  x = b.reshape(x, Shape{t.shape[0], t.shape[1], P});
  Tensor table(DType::kI64, {w.out_count(), w.k_count()});
  int64_t* p = table.as<int64_t>();
  for_each_tap(w, [&](int64_t oi, int64_t ki, const std::vector<int64_t>& c) {
    int64_t flat = 0;
    for (size_t d = 0; d < sp; ++d) flat = flat * ext[d] + (c[d] + w.lo[d]);
    p[oi * w.k_count() + ki] = flat;
  });
  return b.op("gather", {x, b.constant(table)}, {{"axis", int64_t{2}}});
}

std::vector<int64_t> spatial_of(const NodeCtx& n, const TensorType& t, const char* what) {
  if (t.rank() < 3) n.failf("{} must be [N, C, spatial...], got {}", what, t.str());
  for (int64_t i = 1; i < t.rank(); ++i)
    if (!t.shape[i].is_static())
      n.failf("{} must have static channel and spatial dims, got {}", what, t.str());
  std::vector<int64_t> s;
  for (int64_t i = 2; i < t.rank(); ++i) s.push_back(t.shape[i].value);
  return s;
}

Shape out_shape(const Dim& nb, int64_t c, const Window& w) {
  Shape s{nb, c};
  for (int64_t o : w.out) s.push_back(o);
  return s;
}

// cols [N, C, OP, K] x weights [G, O/G, C/G, K] -> [N, O, out...].
ValueId contract(NodeCtx& n, ValueId cols, ValueId wk, const Dim& nb, int64_t C, int64_t O,
                 int64_t g, const Window& w) {
  GraphBuilder& b = n.b;
  int64_t OP = w.out_count(), K = w.k_count();
  cols = b.reshape(cols, Shape{nb, g, C / g, OP, K});
  ValueId y = b.dot_general(cols, wk, {1}, {0}, {2, 4}, {2, 3});  // [G, N, OP, O/G]
  y = b.transpose(y, {1, 0, 3, 2});
  return b.reshape(y, out_shape(nb, O, w));
}

ValueId add_bias(GraphBuilder& b, ValueId y, ValueId bias) {
  return b.add(y, b.broadcast_in_dim(bias, b.type(y).shape, {1}));
}

void conv_impl(NodeCtx& n, ValueId x, ValueId wt, std::optional<ValueId> bias) {
  GraphBuilder& b = n.b;
  TensorType tx = b.type(x), tw = b.type(wt);
  auto in = spatial_of(n, tx, "X");
  auto ks = spatial_of(n, tw, "W");
  if (!tw.shape[0].is_static()) n.fail("W must be static");
  if (in.size() != ks.size()) n.fail("X and W have different spatial ranks");
  int64_t g = n.attr_i("group", 1), C = tx.shape[1].value, O = tw.shape[0].value;
  if (g < 1 || C % g || O % g || tw.shape[1].value != C / g)
    n.failf("group {} does not fit {} input and {} output channels (W is {})", g, C, O, tw.str());
  if (n.has_attr("kernel_shape") && n.attr_ints("kernel_shape") != ks)
    n.fail("kernel_shape differs from W's shape");
  Window w = window(n, in, ks, false);
  bool plain2d =
      in.size() == 2 && g == 1 && w.dil == std::vector<int64_t>{1, 1} && is_float(tx.dtype);
  if (plain2d) {
    // The HIR Conv, so a target with a native convolution can claim it.
    Attrs a{{"strides", IntList(w.stride)}, {"pads", IntList{w.lo[0], w.lo[1], w.hi[0], w.hi[1]}}};
    std::vector<ValueId> ins{x, wt};
    if (bias) ins.push_back(*bias);
    return n.out(0, b.op("Conv", ins, a));
  }
  ValueId cols = windows(n, x, w, 0.0);
  ValueId wk = b.reshape(wt, Shape{g, O / g, C / g, w.k_count()});
  ValueId y = contract(n, cols, wk, tx.shape[0], C, O, g, w);
  if (bias) y = add_bias(b, y, *bias);
  n.out(0, y);
}

void conv_transpose(NodeCtx& n) {
  GraphBuilder& b = n.b;
  TensorType tx = n.type(0), tw = n.type(1);
  auto in = spatial_of(n, tx, "X");
  auto ks = spatial_of(n, tw, "W");
  size_t sp = in.size();
  if (ks.size() != sp) n.fail("X and W have different spatial ranks");
  int64_t g = n.attr_i("group", 1), C = tx.shape[1].value;
  if (!tw.shape[0].is_static() || tw.shape[0].value != C || g < 1 || C % g)
    n.failf("W {} does not fit {} input channels in {} groups", tw.str(), C, g);
  int64_t O = tw.shape[1].value * g;
  auto stride = attr_or(n, "strides", sp, 1), dil = attr_or(n, "dilations", sp, 1);
  auto outpad = attr_or(n, "output_padding", sp, 0);
  auto pads = attr_or(n, "pads", 2 * sp, 0);
  std::string auto_pad = n.attr_s("auto_pad", "NOTSET");
  auto out_shape_attr = n.attr_ints("output_shape");
  if (!out_shape_attr.empty() && out_shape_attr.size() < sp)
    n.fail("output_shape has too few entries");
  std::vector<int64_t> out(sp), lo(sp);
  for (size_t i = 0; i < sp; ++i) {
    if (stride[i] < 1 || dil[i] < 1) n.fail("strides and dilations must be positive");
    int64_t full = stride[i] * (in[i] - 1) + outpad[i] + (ks[i] - 1) * dil[i] + 1;
    if (!out_shape_attr.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t target = !out_shape_attr.empty() ? out_shape_attr.at(out_shape_attr.size() - sp + i)
                                               : in[i] * stride[i];
      int64_t total = std::max<int64_t>(full - target, 0);
      // ONNX: SAME_UPPER (and output_shape) put the extra padding at the end.
      lo[i] = auto_pad == "SAME_LOWER" ? total - total / 2 : total / 2;
      out[i] = target;
    } else {
      lo[i] = pads[i];
      out[i] = full - pads[i] - pads[i + sp];
    }
    if (out[i] <= 0) n.fail("the output would be empty");
  }
  // y[o] = sum over taps k with (o + lo - k*d) divisible by the stride of x[(o + lo - k*d) / s]
  // W[k]; taps that hit no input read the zero appended after the flattened input.
  int64_t P = num_elements(in), OP = num_elements(out), K = num_elements(ks);
  n.check_count(OP * K, "the transposed convolution's tap table");
  Tensor table(DType::kI64, {OP, K});
  int64_t* p = table.as<int64_t>();
  std::vector<int64_t> o(sp, 0), k(sp, 0);
  for (int64_t oi = 0; oi < OP; ++oi) {
    std::fill(k.begin(), k.end(), 0);
    for (int64_t ki = 0; ki < K; ++ki) {
      int64_t flat = 0;
      bool hit = true;
      for (size_t d = 0; d < sp && hit; ++d) {
        int64_t num = o[d] + lo[d] - k[d] * dil[d];
        hit = num >= 0 && num % stride[d] == 0 && num / stride[d] < in[d];
        flat = flat * in[d] + (hit ? num / stride[d] : 0);
      }
      p[oi * K + ki] = hit ? flat : P;
      for (int64_t d = static_cast<int64_t>(sp) - 1; d >= 0; --d) {
        if (++k[d] < ks[d]) break;
        k[d] = 0;
      }
    }
    for (int64_t d = static_cast<int64_t>(sp) - 1; d >= 0; --d) {
      if (++o[d] < out[d]) break;
      o[d] = 0;
    }
  }
  ValueId x = b.reshape(n.x(0), Shape{tx.shape[0], C, P});
  x = b.op("pad", {x, b.scalar(tx.dtype, 0)},
           {{"low", IntList{0, 0, 0}}, {"high", IntList{0, 0, 1}}});
  ValueId cols = b.op("gather", {x, b.constant(table)}, {{"axis", int64_t{2}}});
  // W [C, O/G, k...] -> [G, O/G, C/G, K].
  ValueId wk = b.reshape(n.x(1), Shape{g, C / g, O / g, K});
  wk = b.transpose(wk, {0, 2, 1, 3});
  Window w;
  w.out = out;
  w.k = ks;
  ValueId y = contract(n, cols, wk, tx.shape[0], C, O, g, w);
  if (n.has(2)) y = add_bias(b, y, n.x(2));
  n.out(0, y);
}

// Per output position: how many taps an average divides by.
Tensor tap_counts(const Window& w, bool include_pad, DType dt) {
  std::vector<double> cnt(w.out_count(), 0);
  for_each_tap(w, [&](int64_t oi, int64_t, const std::vector<int64_t>& c) {
    bool inside = true;
    for (size_t d = 0; d < c.size(); ++d) {
      int64_t lo = include_pad ? -w.lo[d] : 0, hi = include_pad ? w.in[d] + w.hi[d] : w.in[d];
      inside = inside && c[d] >= lo && c[d] < hi;
    }
    cnt[oi] += inside;
  });
  Tensor t(DType::kF64, {w.out_count()});
  for (int64_t i = 0; i < w.out_count(); ++i) t.as<double>()[i] = cnt[i];
  (void)dt;
  return t;
}

void pool(NodeCtx& n, const std::string& kind) {
  GraphBuilder& b = n.b;
  TensorType tx = n.type(0);
  auto in = spatial_of(n, tx, "X");
  auto ks = n.attr_ints("kernel_shape");
  if (ks.size() != in.size()) n.fail("kernel_shape must have one entry per spatial dim");
  Window w = window(n, in, ks, n.attr_i("ceil_mode", 0) != 0);
  int64_t C = tx.shape[1].value;
  Shape os = out_shape(tx.shape[0], C, w);
  ValueId x = n.x(0);
  if (kind == "max") {
    double lowest = is_float(tx.dtype)       ? -INFINITY
                    : tx.dtype == DType::kU8 ? 0.0
                    : tx.dtype == DType::kI8 ? -128.0
                                             : -2147483648.0;
    ValueId cols = windows(n, x, w, lowest);
    ValueId y = b.reduce(cols, {3}, ReduceKind::kMax);
    n.out(0, b.reshape(y, os));
    if (n.wants(1)) {
      // Indices: first maximum in each window, as a flat index into the (unpadded) input.
      Shape cs = b.type(cols).shape;
      ValueId hit = b.binary("eq", cols, b.broadcast_in_dim(y, cs, {0, 1, 2}));
      int64_t K = w.k_count();
      ValueId kidx = b.reduce(
          b.select(hit, iota(b, cs, 3), full_like(b, iota(b, cs, 3), static_cast<double>(K))), {3},
          ReduceKind::kMin);
      bool col_major = n.attr_i("storage_order", 0) != 0;
      n.check_count(w.out_count() * K, "the index table");
      Tensor table(DType::kI64, {w.out_count() * K});
      for_each_tap(w, [&](int64_t oi, int64_t ki, const std::vector<int64_t>& c) {
        int64_t flat = 0;
        if (col_major)
          for (int64_t d = static_cast<int64_t>(c.size()) - 1; d >= 0; --d)
            flat = flat * w.in[d] + c[d];
        else
          for (size_t d = 0; d < c.size(); ++d) flat = flat * w.in[d] + c[d];
        table.as<int64_t>()[oi * K + ki] = flat;
      });
      Shape ks3 = b.type(kidx).shape;
      ValueId pos = b.add(b.mul(iota(b, ks3, 2), full_like(b, kidx, static_cast<double>(K))), kidx);
      ValueId sp_idx = b.op("gather", {b.constant(table), pos}, {{"axis", int64_t{0}}});
      int64_t P = num_elements(in);
      ValueId nc = b.add(b.mul(iota(b, ks3, 0), full_like(b, kidx, static_cast<double>(C))),
                         iota(b, ks3, 1));
      ValueId idx = b.add(b.mul(nc, full_like(b, nc, static_cast<double>(P))), sp_idx);
      n.out(1, b.reshape(idx, os));
    }
    return;
  }
  if (kind == "lp") {
    int64_t p = n.attr_i("p", 2);
    ValueId cols = windows(n, b.unary("abs", x), w, 0.0);
    ValueId pw = b.binary("pow", cols, full_like(b, cols, static_cast<double>(p)));
    ValueId s = b.reduce(pw, {3}, ReduceKind::kSum);
    return n.out(0, b.reshape(b.binary("pow", s, full_like(b, s, 1.0 / p)), os));
  }
  ValueId cols = windows(n, x, w, 0.0);
  ValueId s = b.reduce(cols, {3}, ReduceKind::kSum);
  Tensor cnt = tap_counts(w, n.attr_i("count_include_pad", 0) != 0, tx.dtype);
  ValueId c = b.convert(b.constant(cnt), tx.dtype);
  n.out(0, b.reshape(b.div(s, b.broadcast_in_dim(c, b.type(s).shape, {2})), os));
}

void global_pool(NodeCtx& n, ReduceKind k, bool mean, int64_t p) {
  GraphBuilder& b = n.b;
  int64_t r = n.rank(0);
  if (r < 3) n.fail("X must be [N, C, spatial...]");
  std::vector<int64_t> axes;
  for (int64_t i = 2; i < r; ++i) axes.push_back(i);
  ValueId x = n.x(0);
  if (p) x = b.binary("pow", b.unary("abs", x), full_like(b, x, static_cast<double>(p)));
  ValueId y = b.reduce(x, axes, k);
  if (mean) {
    ValueId c = n.b.constant(Tensor::from<int64_t>(DType::kI64, {}, {1}));
    for (int64_t a : axes) c = b.mul(c, n.dim_size(n.x(0), a));
    y = b.div(y, b.broadcast_in_dim(b.convert(c, n.dtype(0)), b.type(y).shape, {}));
  }
  if (p) y = b.binary("pow", y, full_like(b, y, 1.0 / p));
  Shape s = n.shape(0);
  for (int64_t a : axes) s[a] = 1;
  n.out(0, b.reshape(y, s));
}

}  // namespace

void register_conv_ops(OpTable& t) {
  t["Conv"] = [](NodeCtx& n) {
    if (n.dtype(0) != n.dtype(1)) n.fail("X and W have different dtypes");
    conv_impl(n, n.x(0), n.x(1), n.has(2) ? std::optional<ValueId>(n.x(2)) : std::nullopt);
  };
  t["ConvInteger"] = [](NodeCtx& n) {
    GraphBuilder& b = n.b;
    ValueId x = b.convert(n.x(0), DType::kI32), w = b.convert(n.x(1), DType::kI32);
    if (n.has(2)) x = b.sub(x, b.broadcast_to(b.convert(n.x(2), DType::kI32), b.type(x).shape));
    n.expect_rank(1, 3, 8);
    if (n.has(3)) {
      ValueId z = b.convert(n.x(3), DType::kI32);
      w = b.sub(w, b.type(z).rank() == 1 && n.shape(3)[0] == n.shape(1)[0]
                       ? b.broadcast_in_dim(z, b.type(w).shape, {0})
                       : b.broadcast_to(z, b.type(w).shape));
    }
    conv_impl(n, x, w, std::nullopt);
  };
  t["ConvTranspose"] = conv_transpose;
  t["MaxPool"] = [](NodeCtx& n) { pool(n, "max"); };
  t["AveragePool"] = [](NodeCtx& n) { pool(n, "avg"); };
  t["LpPool"] = [](NodeCtx& n) { pool(n, "lp"); };
  t["GlobalAveragePool"] = [](NodeCtx& n) { global_pool(n, ReduceKind::kSum, true, 0); };
  t["GlobalMaxPool"] = [](NodeCtx& n) { global_pool(n, ReduceKind::kMax, false, 0); };
  t["GlobalLpPool"] = [](NodeCtx& n) { global_pool(n, ReduceKind::kSum, false, n.attr_i("p", 2)); };
}

}  // namespace rlx::onnx
