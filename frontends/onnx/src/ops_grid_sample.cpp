// GridSample (2-D and 3-D) as onnx.reference computes it: denormalised grid coordinates,
// border/reflection handling, then a weighted sum of gathered taps (1 for nearest, 2 per dim for
// linear, 4 per dim for cubic). Coordinates are run-time values, so taps are gathered with
// computed flat indices from X laid out as [N * spatial, C].
#include <cmath>

#include "op_util.h"

namespace rlx::onnx {

namespace {

struct Gs {
  NodeCtx& n;
  GraphBuilder& b;
  ValueId c(ValueId like, double v) { return full_like(b, like, v); }

  // Reflects v into [lo, hi] by repeated mirroring at the nearer border.
  ValueId reflect(ValueId v, double lo, double hi) {
    double rng = hi - lo;
    if (rng <= 0) return c(v, lo);
    auto side = [&](ValueId dx, bool below) {
      ValueId k = b.unary("floor", b.div(dx, c(dx, rng)));
      ValueId r = b.sub(dx, b.mul(k, c(dx, rng)));
      ValueId even = b.binary("eq", b.binary("rem", k, c(k, 2.0)), c(k, 0.0));
      ValueId near = below ? b.add(c(r, lo), r) : b.sub(c(r, hi), r);
      ValueId far = below ? b.sub(c(r, hi), r) : b.add(c(r, lo), r);
      return b.select(even, near, far);
    };
    ValueId under = b.binary("lt", v, c(v, lo)), over = b.binary("gt", v, c(v, hi));
    ValueId fix_lo = side(b.sub(c(v, lo), v), true), fix_hi = side(b.sub(v, c(v, hi)), false);
    return b.select(under, fix_lo, b.select(over, fix_hi, v));
  }
};

void grid_sample(NodeCtx& n) {
  GraphBuilder& b = n.b;
  Gs g{n, b};
  auto xs = static_shape(n, n.type(0), "X");
  auto gs = static_shape(n, n.type(1), "grid");
  int64_t sp = static_cast<int64_t>(xs.size()) - 2;
  if (sp < 1 || static_cast<int64_t>(gs.size()) != sp + 2 || gs.back() != sp)
    n.fail("grid must be [N, out..., spatial rank]");
  std::string mode = n.attr_s("mode", n.opset >= 20 ? "linear" : "bilinear");
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  std::string pad = n.attr_s("padding_mode", "zeros");
  bool align = n.attr_i("align_corners", 0) != 0;
  int64_t N = xs[0], C = xs[1];
  std::vector<int64_t> dims(xs.begin() + 2, xs.end());
  int64_t P = num_elements(dims);
  Shape os(gs.begin(), gs.end() - 1);  // [N, out...]
  DType dt = n.dtype(0);
  DType ct = is_float(dt) ? (dt == DType::kF64 ? DType::kF64 : DType::kF32) : DType::kF32;
  ValueId grid = b.convert(n.x(1), ct);
  // Denormalised coordinate per spatial dim d (the grid lists them innermost first).
  std::vector<ValueId> coord(sp);
  std::vector<double> lo(sp), hi(sp);
  for (int64_t d = 0; d < sp; ++d) {
    int64_t k = sp - 1 - d;
    IntList start(gs.size(), 0), limit(gs.begin(), gs.end());
    start.back() = k;
    limit.back() = k + 1;
    ValueId v = b.reshape(b.slice(grid, start, limit), os);
    double len = static_cast<double>(dims[d]);
    v = align ? b.mul(b.div(b.add(v, g.c(v, 1)), g.c(v, 2)), g.c(v, len - 1))
              : b.div(b.sub(b.mul(b.add(v, g.c(v, 1)), g.c(v, len)), g.c(v, 1)), g.c(v, 2));
    lo[d] = align ? 0.0 : -0.5;
    hi[d] = align ? len - 1 : len - 0.5;
    // Nearest rounds half to even in every rank (the v1.22 test data does so for 3-D too).
    if (mode == "nearest") v = b.unary("round", v);
    ValueId out_of =
        b.binary("or", b.binary("lt", v, g.c(v, lo[d])), b.binary("gt", v, g.c(v, hi[d])));
    if (pad == "border")
      v = b.select(out_of, b.binary("min", b.binary("max", v, g.c(v, 0)), g.c(v, len - 1)), v);
    else if (pad == "reflection")
      v = b.select(out_of, g.reflect(v, lo[d], hi[d]), v);
    else if (pad != "zeros")
      n.failf("padding_mode '{}' is not supported", pad);
    coord[d] = v;
  }
  // Taps per dim: (integer index, weight).
  int taps = mode == "nearest" ? 1 : mode == "linear" ? 2 : 4;
  std::vector<std::vector<std::pair<ValueId, ValueId>>> per_dim(sp);
  for (int64_t d = 0; d < sp; ++d) {
    ValueId v = coord[d];
    if (mode == "nearest") {
      per_dim[d].push_back({b.convert(v, DType::kI64), g.c(v, 1.0)});
      continue;
    }
    ValueId x0 = b.unary("floor", v), fr = b.sub(v, x0);
    ValueId i0 = b.convert(x0, DType::kI64);
    if (mode == "linear") {
      per_dim[d].push_back({i0, b.sub(g.c(fr, 1), fr)});
      per_dim[d].push_back({b.add(i0, full_like(b, i0, 1)), fr});
      continue;
    }
    // Keys cubic weights of the fraction, as polynomials in fr.
    double a = -0.75;
    ValueId t1 = b.add(fr, g.c(fr, 1)), t2 = b.sub(g.c(fr, 1), fr), t3 = b.sub(g.c(fr, 2), fr);
    auto far = [&](ValueId x) {  // a x^3 - 5a x^2 + 8a x - 4a for 1 <= x < 2
      return b.sub(
          b.mul(b.add(b.mul(b.sub(b.mul(g.c(x, a), x), g.c(x, 5 * a)), x), g.c(x, 8 * a)), x),
          g.c(x, 4 * a));
    };
    auto nearw = [&](ValueId x) {  // (a+2) x^3 - (a+3) x^2 + 1 for x <= 1
      return b.add(b.mul(b.mul(b.sub(b.mul(g.c(x, a + 2), x), g.c(x, a + 3)), x), x), g.c(x, 1));
    };
    std::vector<ValueId> w{far(t1), nearw(fr), nearw(t2), far(t3)};
    for (int k = 0; k < 4; ++k)
      per_dim[d].push_back({b.add(i0, full_like(b, i0, static_cast<double>(k - 1))), w[k]});
  }
  // X as rows [N * P, C]; each tap combination gathers one row per output position.
  IntList perm{0};
  for (int64_t d = 0; d < sp; ++d) perm.push_back(2 + d);
  perm.push_back(1);
  ValueId rows = b.reshape(b.convert(b.transpose(n.x(0), perm), ct), Shape{N * P, C});
  ValueId base = b.mul(iota(b, os, 0), full_like(b, iota(b, os, 0), static_cast<double>(P)));
  Shape oc = os;
  oc.push_back(C);
  IntList keep_dims;
  for (size_t i = 0; i < os.size(); ++i) keep_dims.push_back(static_cast<int64_t>(i));
  ValueId acc = kNoValue;
  int64_t combos = 1;
  for (int64_t d = 0; d < sp; ++d) combos *= taps;
  for (int64_t combo = 0; combo < combos; ++combo) {
    ValueId flat = base, weight = kNoValue, valid = kNoValue;
    int64_t rem = combo, stride = 1;
    std::vector<int> pick(sp);
    for (int64_t d = sp - 1; d >= 0; --d) pick[d] = static_cast<int>(rem % taps), rem /= taps;
    for (int64_t d = sp - 1; d >= 0; --d) {
      auto [idx, w] = per_dim[d][pick[d]];
      ValueId len = full_like(b, idx, static_cast<double>(dims[d]));
      ValueId inside =
          b.binary("and", b.binary("ge", idx, full_like(b, idx, 0)), b.binary("lt", idx, len));
      if (pad == "border") {
        idx = b.binary("min", b.binary("max", idx, full_like(b, idx, 0)),
                       b.sub(len, full_like(b, idx, 1)));
      } else if (pad == "reflection") {
        ValueId r = g.reflect(b.convert(idx, ct), lo[d], hi[d]);
        idx = b.select(inside, idx, b.convert(r, DType::kI64));
      } else {
        valid = valid == kNoValue ? inside : b.binary("and", valid, inside);
        idx = b.select(inside, idx, full_like(b, idx, 0));
      }
      flat = b.add(flat, b.mul(idx, full_like(b, idx, static_cast<double>(stride))));
      weight = weight == kNoValue ? w : b.mul(weight, w);
      stride *= dims[d];
    }
    if (valid != kNoValue) weight = b.select(valid, weight, g.c(weight, 0));
    ValueId picked = b.op("gather", {rows, flat}, {{"axis", int64_t{0}}});  // [N, out..., C]
    ValueId term = b.mul(picked, b.broadcast_in_dim(weight, oc, keep_dims));
    acc = acc == kNoValue ? term : b.add(acc, term);
  }
  IntList back{0, static_cast<int64_t>(oc.size()) - 1};
  for (int64_t d = 0; d < sp; ++d) back.push_back(1 + d);
  n.out(0, b.convert(b.transpose(acc, back), dt));
}

}  // namespace

void register_grid_sample_ops(OpTable& t) {
  t["GridSample"] = grid_sample;
}

}  // namespace rlx::onnx
