#include "qconv.h"

#include <fmt/format.h>
#include <tbb/parallel_for.h>

#include <cstdint>

#include "rlx/core/quantize.h"

namespace rlx::cpu {

namespace {

IntList ints_or(const lir::CallKernel& k, const char* key, IntList fallback) {
  auto it = k.attrs.find(key);
  return it == k.attrs.end() ? fallback : std::get<IntList>(it->second);
}

}  // namespace

Verdict claim_qconv(const NodeSignature& s) {
  if (s.inputs.size() < 5 || s.inputs[0].dtype != DType::kF32 || s.inputs[1].dtype != DType::kI8)
    return Verdict::no("cpu's QConv takes f32 activations with a calibrated scale and i8 weights");
  // The claim's note is the dispatch report's record of the precision change.
  return Verdict{true,
                 "int8 direct convolution u8 x s8 -> i32, activations rounded to u8 with a "
                 "calibrated scale, dequantized to f32 per output channel"};
}

void run_qconv(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
               const std::vector<lir::Buffer>& out, const std::vector<void*>& ptrs) {
  const std::vector<int64_t>&xs = in[0].shape, &ws = in[1].shape, &ys = out[0].shape;
  const int64_t batch = xs[0], c = xs[1], h = xs[2], w = xs[3];
  const int64_t o = ws[0], cg = ws[1], kh = ws[2], kw = ws[3], oh = ys[2], ow = ys[3];
  const IntList st = ints_or(k, "strides", {1, 1}), pads = ints_or(k, "pads", {0, 0, 0, 0});
  auto g = k.attrs.find("group");
  const int64_t group = g == k.attrs.end() ? 1 : std::get<int64_t>(g->second);
  const int64_t og = o / group;
  const auto* x = static_cast<const float*>(ptrs[k.inputs[0]]);
  const auto* wq = static_cast<const int8_t*>(ptrs[k.inputs[1]]);
  const auto* wscale = static_cast<const float*>(ptrs[k.inputs[2]]);
  const float x_scale = *static_cast<const float*>(ptrs[k.inputs[3]]);
  const uint8_t x_zero = *static_cast<const uint8_t*>(ptrs[k.inputs[4]]);
  const auto* bias = k.inputs.size() >= 6 ? static_cast<const float*>(ptrs[k.inputs[5]]) : nullptr;
  auto* y = static_cast<float*>(ptrs[k.outputs[0]]);

  // The activations as u8 minus the zero point: padding is then 0 and adds nothing.
  std::vector<uint8_t> q(static_cast<size_t>(batch * c * h * w));
  quant::quantize_u8(x, static_cast<int64_t>(q.size()), {x_scale, x_zero}, q.data());
  std::vector<int16_t> a(q.size());
  for (size_t i = 0; i < q.size(); ++i) a[i] = static_cast<int16_t>(q[i] - x_zero);

  tbb::parallel_for(int64_t{0}, batch * o, [&](int64_t bo) {
    const int64_t b = bo / o, oc = bo % o, c0 = (oc / og) * cg;
    const float scale = x_scale * wscale[oc];
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        int32_t acc = 0;
        for (int64_t ci = 0; ci < cg; ++ci)
          for (int64_t ky = 0; ky < kh; ++ky) {
            const int64_t iy = oy * st[0] - pads[0] + ky;
            if (iy < 0 || iy >= h) continue;
            const int16_t* row = &a[static_cast<size_t>(((b * c + c0 + ci) * h + iy) * w)];
            const int8_t* wr = &wq[static_cast<size_t>(((oc * cg + ci) * kh + ky) * kw)];
            for (int64_t kx = 0; kx < kw; ++kx) {
              const int64_t ix = ox * st[1] - pads[1] + kx;
              if (ix >= 0 && ix < w) acc += static_cast<int32_t>(row[ix]) * wr[kx];
            }
          }
        y[((b * o + oc) * oh + oy) * ow + ox] =
            static_cast<float>(acc) * scale + (bias ? bias[oc] : 0.0f);
      }
  });
}

}  // namespace rlx::cpu
