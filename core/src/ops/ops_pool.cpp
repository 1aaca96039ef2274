// 2-D pooling over NCHW:
//   MaxPool(x [N, C, H, W]) {kernel_shape = [KH, KW], strides = [SH, SW] (default 1),
//                            pads = [top, left, bottom, right] (default 0)} -> [N, C, OH, OW]
//   AveragePool(x) {the same}: every window's sum divided by KH * KW, so padding counts as zeros
//                              (ONNX's count_include_pad = 1)
// Each decomposes into pad + a gather of the windows through a constant index table (im2col) +
// one reduction, so every target with those primitives runs them; the int8 targets claim them
// natively on int8 activations (sdk/int8). MaxPool pads with -infinity: padding never wins.
#include <cmath>
#include <limits>

#include "ops/op_family.h"
#include "ops/op_helpers.h"
#include "rlx/core/builder.h"

namespace rlx {
using namespace ops;

namespace {

struct PoolWindow {
  int64_t kh = 0, kw = 0, sh = 1, sw = 1, pt = 0, pl = 0, pb = 0, pr = 0;
  int64_t hp = 0, wp = 0, oh = 0, ow = 0;  // padded input, output
};

PoolWindow pool_window(const TensorType& x, const Node& n) {
  if (x.rank() != 4 || !is_float(x.dtype))
    fail("{} needs a float x [N, C, H, W], got {}", n.op, x.str());
  for (int i = 1; i < 4; ++i)
    if (!x.shape[i].is_static()) fail("{}: channel and spatial dims must be static", n.op);
  if (!n.has_attr("kernel_shape")) fail("{} needs kernel_shape = [KH, KW]", n.op);
  IntList k = n.attr_ints("kernel_shape");
  IntList s = n.has_attr("strides") ? n.attr_ints("strides") : IntList{1, 1};
  IntList p = n.has_attr("pads") ? n.attr_ints("pads") : IntList{0, 0, 0, 0};
  if (k.size() != 2 || s.size() != 2 || p.size() != 4)
    fail("{}: kernel_shape and strides need 2 entries, pads 4 (top, left, bottom, right)", n.op);
  PoolWindow w{k[0], k[1], s[0], s[1], p[0], p[1], p[2], p[3]};
  if (w.kh < 1 || w.kw < 1 || w.sh < 1 || w.sw < 1 || w.pt < 0 || w.pl < 0 || w.pb < 0 || w.pr < 0)
    fail("{}: kernel sizes and strides must be positive and pads not negative", n.op);
  if (w.pt >= w.kh || w.pb >= w.kh || w.pl >= w.kw || w.pr >= w.kw)
    fail("{}: a pad as large as the kernel makes windows of padding only", n.op);
  w.hp = x.shape[2].value + w.pt + w.pb;
  w.wp = x.shape[3].value + w.pl + w.pr;
  if (w.hp < w.kh || w.wp < w.kw) fail("{}: the kernel is larger than the padded input", n.op);
  w.oh = (w.hp - w.kh) / w.sh + 1;
  w.ow = (w.wp - w.kw) / w.sw + 1;
  return w;
}

DecomposeFn pool(ReduceKind kind) {
  return [kind](GraphBuilder& b, const Node& n, const std::vector<ValueId>& in) {
    const TensorType t = b.type(in[0]);
    const PoolWindow w = pool_window(t, n);
    const Dim nb = t.shape[0];
    const int64_t c = t.shape[1].value;
    ValueId x = in[0];
    if (w.pt || w.pl || w.pb || w.pr) {
      const double fill = kind == ReduceKind::kMax ? -std::numeric_limits<double>::infinity() : 0;
      x = b.op("pad", {x, b.scalar(t.dtype, fill)},
               {{"low", IntList{0, 0, w.pt, w.pl}}, {"high", IntList{0, 0, w.pb, w.pr}}});
    }
    x = b.reshape(x, Shape{nb, c, w.hp * w.wp});
    Tensor idx(DType::kI64, {w.oh * w.ow, w.kh * w.kw});
    int64_t* p = idx.as<int64_t>();
    for (int64_t y = 0; y < w.oh; ++y)
      for (int64_t xx = 0; xx < w.ow; ++xx)
        for (int64_t i = 0; i < w.kh; ++i)
          for (int64_t j = 0; j < w.kw; ++j) *p++ = (y * w.sh + i) * w.wp + (xx * w.sw + j);
    ValueId win = b.op("gather", {x, b.constant(idx)}, {{"axis", int64_t{2}}});  // [N,C,P,K]
    ValueId r = b.reduce(win, {3}, kind);
    if (kind == ReduceKind::kSum)
      r = b.mul(r, b.full_like(r, 1.0 / static_cast<double>(w.kh * w.kw)));
    return std::vector<ValueId>{b.reshape(r, Shape{nb, c, w.oh, w.ow})};
  };
}

}  // namespace

void pool_ops(OpFamily& f) {
  auto add = [&](const char* name, ReduceKind kind, const char* summary) {
    OpDef d{name, OpLevel::kHir, OpClass::kOpaque, 1, 1, 1};
    d.decompose = pool(kind);
    d.infer = infer_by_decomposition(d.decompose);
    d.sample = [](DType dt) -> std::optional<OpSample> {
      if (!is_float(dt)) return std::nullopt;
      return sample_of({tt(dt, {1, 2, 5, 5})}, {{"kernel_shape", IntList{2, 2}},
                                                {"strides", IntList{2, 2}},
                                                {"pads", IntList{0, 0, 1, 1}}});
    };
    d.summary = summary;
    f.add(std::move(d));
  };
  add("MaxPool", ReduceKind::kMax,
      "2-D max pooling, NCHW {kernel_shape, strides, pads}; padding never wins");
  add("AveragePool", ReduceKind::kSum,
      "2-D average pooling, NCHW {kernel_shape, strides, pads}; windows divided by KH * KW");
}

}  // namespace rlx
