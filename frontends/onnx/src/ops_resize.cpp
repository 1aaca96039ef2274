// Resize (opset 10..19) and Upsample: interpolation is separable, so each resized axis becomes a
// gather of its taps (a constant [out, taps] index table) and a weighted sum over the taps.
// Tap positions and weights follow onnx.reference's 1-D interpolation exactly, computed in f64
// at import time.
#include <algorithm>
#include <cmath>

#include "op_util.h"

namespace rlx::onnx {

namespace {

struct Params {
  std::string mode = "nearest", coord = "half_pixel", nearest = "round_prefer_floor";
  double cubic_a = -0.75, extrapolation = 0;
  bool exclude_outside = false, antialias = false;
};

std::vector<double> coeffs(const Params& p, double ratio, double scale) {
  if (p.mode == "nearest") {
    if (ratio == 1.0 || ratio == 0.0) return {0, 1};
    if (p.nearest == "round_prefer_floor") return {double(ratio <= 0.5), double(ratio > 0.5)};
    if (p.nearest == "round_prefer_ceil") return {double(ratio < 0.5), double(ratio >= 0.5)};
    if (p.nearest == "floor") return {1, 0};
    return {0, 1};
  }
  if (p.mode == "linear") {
    if (!p.antialias) return {1 - ratio, ratio};
    double s = std::min(scale, 1.0);
    int64_t start = static_cast<int64_t>(std::floor(-1 / s) + 1), footprint = 2 - 2 * start;
    std::vector<double> c;
    double sum = 0;
    for (int64_t i = start; i < start + footprint; ++i) {
      double v = std::clamp(1 - std::fabs((i - ratio) * s), 0.0, 1.0);
      c.push_back(v);
      sum += v;
    }
    for (double& v : c) v /= sum;
    return c;
  }
  double A = p.cubic_a;
  if (!p.antialias) {
    double r1 = ratio + 1, q = 1 - ratio, q1 = q + 1;
    return {((A * r1 - 5 * A) * r1 + 8 * A) * r1 - 4 * A,
            ((A + 2) * ratio - (A + 3)) * ratio * ratio + 1, ((A + 2) * q - (A + 3)) * q * q + 1,
            ((A * q1 - 5 * A) * q1 + 8 * A) * q1 - 4 * A};
  }
  double s = std::min(scale, 1.0);
  auto k = [A](double x) {
    x = std::fabs(x);
    if (x <= 1) return (A + 2) * x * x * x - (A + 3) * x * x + 1;
    if (x < 2) return A * x * x * x - 5 * A * x * x + 8 * A * x - 4 * A;
    return 0.0;
  };
  int64_t start = static_cast<int64_t>(std::floor(-2 / s) + 1), end = 2 - start;
  std::vector<double> c;
  double sum = 0;
  for (int64_t i = start; i < end; ++i) {
    c.push_back(k(s * (i - ratio)));
    sum += c.back();
  }
  for (double& v : c) v /= sum;
  return c;
}

// The n indexes nearest to x (ties to the smaller), as onnx.reference's _get_neighbor_idxes
// over the edge-padded axis; returned unpadded (may be out of [0, len)).
std::vector<int64_t> neighbours(double x, int64_t n, int64_t len) {
  int64_t pad = (n + 1) / 2;
  double xp = x + pad;
  std::vector<int64_t> idx(len + 2 * pad);
  for (int64_t i = 0; i < static_cast<int64_t>(idx.size()); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
    double da = std::fabs(xp - a), db = std::fabs(xp - b);
    return da != db ? da < db : a < b;
  });
  idx.resize(std::min<int64_t>(n, static_cast<int64_t>(idx.size())));
  std::sort(idx.begin(), idx.end());
  for (int64_t& i : idx) i -= pad;
  return idx;
}

struct AxisPlan {
  std::vector<int64_t> idx;  // [out * taps], clamped
  std::vector<double> w;     // [out * taps]
  std::vector<bool> extrapolate;
  int64_t taps = 0;
};

AxisPlan plan_axis(const Params& p, int64_t in, int64_t out, double scale, double roi_lo,
                   double roi_hi) {
  AxisPlan plan;
  double out_w = scale * in;
  for (int64_t x = 0; x < out; ++x) {
    double xo;
    const std::string& m = p.coord;
    if (m == "align_corners")
      xo = out_w == 1 ? 0 : x * (in - 1) / (out_w - 1);
    else if (m == "asymmetric")
      xo = x / scale;
    else if (m == "tf_crop_and_resize")
      xo = (out_w == 1 ? (roi_hi - roi_lo) * (in - 1) / 2
                       : x * (roi_hi - roi_lo) * (in - 1) / (out_w - 1)) +
           roi_lo * (in - 1);
    else if (m == "pytorch_half_pixel")
      xo = out_w == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
    else if (m == "half_pixel_symmetric") {
      double adj = out / out_w, center = in / 2.0;
      xo = center * (1 - adj) + (x + 0.5) / scale - 0.5;
    } else
      xo = (x + 0.5) / scale - 0.5;
    bool extra = m == "tf_crop_and_resize" && (xo < 0 || xo > in - 1);
    plan.extrapolate.push_back(extra);
    double fl = std::floor(xo);
    double ratio = xo == fl ? 1.0 : xo - fl;
    std::vector<double> c = coeffs(p, ratio, scale);
    auto nb = neighbours(xo, static_cast<int64_t>(c.size()), in);
    if (p.exclude_outside) {
      double sum = 0;
      for (size_t i = 0; i < nb.size(); ++i) {
        if (nb[i] < 0 || nb[i] >= in) c[i] = 0;
        sum += c[i];
      }
      if (sum != 0)
        for (double& v : c) v /= sum;
    }
    plan.taps = static_cast<int64_t>(c.size());
    for (size_t i = 0; i < c.size(); ++i) {
      plan.idx.push_back(std::clamp<int64_t>(nb[i], 0, in - 1));
      plan.w.push_back(c[i]);
    }
  }
  return plan;
}

ValueId apply_axis(NodeCtx& n, ValueId x, int64_t axis, const AxisPlan& plan, int64_t out,
                   const Params& p) {
  GraphBuilder& b = n.b;
  TensorType t = b.type(x);
  int64_t taps = plan.taps;
  // Nearest (one-hot weights): a single gather of the chosen tap.
  bool one_hot =
      std::all_of(plan.w.begin(), plan.w.end(), [](double v) { return v == 0 || v == 1; });
  ValueId y;
  if (one_hot) {
    std::vector<int64_t> pick;
    for (int64_t o = 0; o < out; ++o) {
      int64_t chosen = plan.idx[o * taps];
      for (int64_t k = 0; k < taps; ++k)
        if (plan.w[o * taps + k] == 1) chosen = plan.idx[o * taps + k];
      pick.push_back(chosen);
    }
    y = take(b, x, axis, pick);
  } else {
    Tensor idx = Tensor::from<int64_t>(DType::kI64, {out * taps}, plan.idx);
    ValueId g = b.op("gather", {x, b.constant(idx)}, {{"axis", axis}});
    Shape gs = t.shape;
    gs[axis] = out;
    gs.insert(gs.begin() + axis + 1, Dim(taps));
    g = b.reshape(g, gs);
    DType ct = is_float(t.dtype) ? t.dtype : DType::kF32;
    if (ct != t.dtype) g = b.convert(g, ct);
    Tensor w = Tensor::from<double>(DType::kF64, {out, taps}, plan.w);
    ValueId wv = b.broadcast_in_dim(b.convert(b.constant(w), ct), gs, {axis, axis + 1});
    y = b.reduce(b.mul(g, wv), {axis + 1}, ReduceKind::kSum);
    if (ct != t.dtype) y = b.convert(y, t.dtype);  // truncates, as numpy astype
  }
  if (std::find(plan.extrapolate.begin(), plan.extrapolate.end(), true) != plan.extrapolate.end()) {
    Tensor m(DType::kBool, {out});
    for (int64_t o = 0; o < out; ++o) m.as<uint8_t>()[o] = plan.extrapolate[o];
    Shape ys = b.type(y).shape;
    ValueId mask = b.broadcast_in_dim(b.constant(m), ys, {axis});
    y = b.select(mask, full_like(b, y, p.extrapolation), y);
  }
  return y;
}

void resize(NodeCtx& n, bool upsample) {
  auto in = static_shape(n, n.type(0), "the input");
  int64_t r = static_cast<int64_t>(in.size());
  Params p;
  p.mode = n.attr_s("mode", "nearest");
  if (p.mode == "bilinear" || p.mode == "trilinear") p.mode = "linear";
  if (p.mode != "nearest" && p.mode != "linear" && p.mode != "cubic")
    n.failf("mode '{}' is not supported", p.mode);
  if (upsample || n.opset < 11) {
    p.coord = "asymmetric";
    p.nearest = "floor";
  } else {
    p.coord = n.attr_s("coordinate_transformation_mode", "half_pixel");
    p.nearest = n.attr_s("nearest_mode", "round_prefer_floor");
  }
  p.cubic_a = n.attr_f("cubic_coeff_a", -0.75f);
  p.exclude_outside = n.attr_i("exclude_outside", 0) != 0;
  p.extrapolation = n.attr_f("extrapolation_value", 0.0f);
  p.antialias = n.attr_i("antialias", 0) != 0;
  if (p.antialias && p.mode == "nearest") n.fail("antialias does not apply to nearest mode");
  // Axes keep their given order: scales, sizes and roi follow it.
  std::vector<int64_t> axes = n.attr_ints("axes");
  for (int64_t& a : axes) a = n.norm_axis(a, r);
  if (axes.empty())
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  std::vector<double> scales(r, 1.0), roi_lo(r, 0.0), roi_hi(r, 1.0);
  std::vector<int64_t> out = in;
  auto read_doubles = [&](int i, const char* what) {
    Tensor t = n.need_const(i, what);
    std::vector<double> v;
    for (int64_t k = 0; k < t.numel(); ++k) v.push_back(t.scalar_at(k));
    return v;
  };
  std::vector<double> sc;
  std::vector<int64_t> sizes;
  if (upsample) {
    if (n.opset < 9) {
      for (float f : n.attr_floats("scales")) sc.push_back(f);
    } else {
      sc = read_doubles(1, "scales");
    }
  } else if (n.opset < 11) {
    sc = read_doubles(1, "scales");
  } else {
    if (n.has(1) && p.coord == "tf_crop_and_resize") {
      auto roi = read_doubles(1, "roi");
      size_t k = axes.size();
      if (roi.size() != 2 * k) n.fail("roi must hold a start and an end per axis");
      for (size_t i = 0; i < k; ++i) roi_lo[axes[i]] = roi[i], roi_hi[axes[i]] = roi[k + i];
    }
    if (n.has(2)) sc = read_doubles(2, "scales");
    if (n.has(3)) sizes = n.need_ints(3, "sizes");
  }
  if (!sizes.empty()) {
    if (sizes.size() != axes.size()) n.fail("sizes must have one entry per resized axis");
    for (size_t i = 0; i < axes.size(); ++i)
      if (sizes[i] <= 0 || in[axes[i]] <= 0) n.fail("sizes and resized dims must be positive");
    std::vector<double> f(r, 1.0);
    for (size_t i = 0; i < axes.size(); ++i)
      f[axes[i]] = static_cast<double>(sizes[i]) / in[axes[i]];
    std::string policy = n.attr_s("keep_aspect_ratio_policy", "stretch");
    if (policy == "stretch") {
      scales = f;
      for (size_t i = 0; i < axes.size(); ++i) out[axes[i]] = sizes[i];
    } else {
      double s = policy == "not_larger" ? 1e300 : -1e300;
      for (int64_t a : axes) s = policy == "not_larger" ? std::min(s, f[a]) : std::max(s, f[a]);
      for (int64_t a : axes) {
        scales[a] = s;
        double o = s * in[a] + 0.5;
        if (!(o >= 0 && o < 1e12)) n.fail("the output size is out of range");
        out[a] = static_cast<int64_t>(o);
      }
    }
  } else {
    if (sc.size() != axes.size())
      n.failf("scales has {} entries for {} axes", sc.size(), axes.size());
    for (size_t i = 0; i < axes.size(); ++i) {
      if (!(sc[i] > 0 && sc[i] * in[axes[i]] < 1e12)) n.fail("scales must be positive and finite");
      scales[axes[i]] = sc[i];
      out[axes[i]] = static_cast<int64_t>(sc[i] * in[axes[i]]);
    }
  }
  ValueId x = n.x(0);
  for (int64_t a = r - 1; a >= 0; --a) {
    bool identity = out[a] == in[a] && scales[a] == 1.0 && p.coord != "tf_crop_and_resize";
    if (identity) continue;
    if (out[a] <= 0) n.fail("the output would be empty");
    if (p.antialias && scales[a] < 1e-4)
      n.fail("antialiasing a downscale beyond 1/10000 is not supported");
    n.check_count(out[a] * 8 + in[a], "the resize taps");
    AxisPlan plan = plan_axis(p, in[a], out[a], scales[a], roi_lo[a], roi_hi[a]);
    x = apply_axis(n, x, a, plan, out[a], p);
  }
  n.out(0, x);
}

}  // namespace

void register_resize_ops(OpTable& t) {
  t["Resize"] = [](NodeCtx& n) { resize(n, false); };
  t["Upsample"] = [](NodeCtx& n) { resize(n, true); };
}

}  // namespace rlx::onnx
