// Signal processing: DFT and STFT as products with constant cos/sin matrices, window functions
// and MelWeightMatrix as constants computed at import time (as onnx.reference computes them).
#include <cmath>

#include "op_util.h"
#include "proto_io.h"

namespace rlx::onnx {

namespace {

DType out_dtype(NodeCtx& n, const char* attr, DType fallback) {
  if (!n.has_attr(attr)) return fallback;
  auto d = dtype_from_onnx(static_cast<int>(n.attr_i(attr, 1)));
  if (!d) n.failf("{} {} is not supported", attr, n.attr_i(attr, 1));
  return *d;
}

Tensor as_dtype(const std::vector<double>& v, std::vector<int64_t> shape, DType dt, GraphBuilder& b,
                ValueId* out) {
  Tensor t = Tensor::from<double>(DType::kF64, std::move(shape), v);
  *out = b.convert(b.constant(t), dt);
  return t;
}

// Real and imaginary parts of [..., N, c] signals along `axis` transformed to [..., M]:
// forward X_k = sum_j x_j e^{-2 pi i jk/n}, inverse with +i and 1/n.
std::pair<ValueId, ValueId> dft_parts(NodeCtx& n, ValueId re, std::optional<ValueId> im,
                                      int64_t len, int64_t out_len, bool inverse) {
  GraphBuilder& b = n.b;
  DType dt = b.type(re).dtype;
  std::vector<double> c(len * out_len), s(len * out_len);
  for (int64_t j = 0; j < len; ++j)
    for (int64_t k = 0; k < out_len; ++k) {
      // jk mod len keeps the angle small, so the tables are accurate for long transforms.
      double ang = 2 * M_PI * static_cast<double>((j * k) % len) / static_cast<double>(len);
      double scale = inverse ? 1.0 / len : 1.0;
      c[j * out_len + k] = std::cos(ang) * scale;
      s[j * out_len + k] = std::sin(ang) * scale * (inverse ? 1 : -1);
    }
  ValueId C, S;
  as_dtype(c, {len, out_len}, dt, b, &C);
  as_dtype(s, {len, out_len}, dt, b, &S);
  int64_t last = b.type(re).rank() - 1;
  auto mm = [&](ValueId x, ValueId m) { return b.dot_general(x, m, {}, {}, {last}, {0}); };
  // (re + i im)(C + i S) = (re C - im S) + i (re S + im C)
  ValueId yr = mm(re, C), yi = mm(re, S);
  if (im) {
    yr = b.sub(yr, mm(*im, S));
    yi = b.add(yi, mm(*im, C));
  }
  return {yr, yi};
}

// Moves `axis` of x to the last place and returns the permutation's inverse.
ValueId to_last(GraphBuilder& b, ValueId x, int64_t axis, IntList* inverse) {
  int64_t r = b.type(x).rank();
  IntList perm;
  for (int64_t i = 0; i < r; ++i)
    if (i != axis) perm.push_back(i);
  perm.push_back(axis);
  inverse->assign(r, 0);
  for (int64_t i = 0; i < r; ++i) (*inverse)[perm[i]] = i;
  return axis == r - 1 ? x : b.transpose(x, perm);
}

void dft(NodeCtx& n) {
  GraphBuilder& b = n.b;
  int64_t r = n.rank(0);
  auto s = static_shape(n, n.type(0), "the input");
  int64_t c = s.back();
  if (c != 1 && c != 2) n.fail("the last dim must be 1 (real) or 2 (complex)");
  int64_t axis;
  std::optional<int64_t> length;
  if (n.opset >= 20) {
    axis = n.has(2) ? n.need_int(2, "axis") : -2;
    if (n.has(1)) length = n.need_int(1, "dft_length");
  } else {
    axis = n.attr_i("axis", 1);
    if (n.has(1)) length = n.need_int(1, "dft_length");
  }
  axis = n.norm_axis(axis, r);
  if (axis == r - 1) n.fail("axis cannot be the real/imaginary dim");
  bool inverse = n.attr_i("inverse", 0) != 0, onesided = n.attr_i("onesided", 0) != 0;
  int64_t len = length.value_or(s[axis]);
  if (len <= 0) n.fail("dft_length must be positive");
  ValueId x = n.x(0);
  auto part = [&](int64_t k) {
    Shape ps(s.begin(), s.end() - 1);
    IntList start(r, 0), limit(s.begin(), s.end());
    start[r - 1] = k;
    limit[r - 1] = k + 1;
    return b.reshape(b.slice(x, start, limit), ps);
  };
  IntList inv;
  ValueId re = to_last(b, part(0), axis, &inv);
  std::optional<ValueId> im;
  if (c == 2) im = to_last(b, part(1), axis, &inv);
  auto fit = [&](ValueId v) {  // zero-pad or truncate the signal to len
    Shape vs = b.type(v).shape;
    int64_t have = vs.back().value, last = static_cast<int64_t>(vs.size()) - 1;
    if (have == len) return v;
    if (have > len) {
      std::vector<int64_t> idx;
      for (int64_t i = 0; i < len; ++i) idx.push_back(i);
      return take(b, v, last, idx);
    }
    IntList lo(vs.size(), 0), hi(vs.size(), 0);
    hi[last] = len - have;
    return b.op("pad", {v, b.scalar(b.type(v).dtype, 0)}, {{"low", lo}, {"high", hi}});
  };
  if (inverse && onesided) {
    // A half spectrum to a real signal (irfft): the missing half is the conjugate mirror, so
    // bins 1 .. n/2-1 count twice. dft_length (or 2 (m - 1)) is the output length.
    int64_t m = b.type(re).shape.back().value;
    int64_t out_n = length.value_or(2 * (m - 1));
    if (out_n <= 0) n.fail("the output length must be positive");
    DType dt = b.type(re).dtype;
    int64_t used = std::min<int64_t>(m, out_n / 2 + 1);
    n.check_count(m * out_n, "the inverse DFT matrix");
    std::vector<double> c(m * out_n, 0.0), sn(m * out_n, 0.0);
    for (int64_t k = 0; k < used; ++k) {
      double w = (k == 0 || (out_n % 2 == 0 && k == out_n / 2)) ? 1.0 : 2.0;
      for (int64_t j = 0; j < out_n; ++j) {
        double ang = 2 * M_PI * static_cast<double>((j * k) % out_n) / out_n;
        c[k * out_n + j] = w * std::cos(ang) / out_n;
        sn[k * out_n + j] = -w * std::sin(ang) / out_n;
      }
    }
    ValueId C, S;
    as_dtype(c, {m, out_n}, dt, b, &C);
    as_dtype(sn, {m, out_n}, dt, b, &S);
    int64_t last = b.type(re).rank() - 1;
    ValueId y = b.dot_general(re, C, {}, {}, {last}, {0});
    if (im) y = b.add(y, b.dot_general(*im, S, {}, {}, {last}, {0}));
    Shape ys = b.type(y).shape;
    ys.push_back(1);
    IntList perm = inv;
    perm.push_back(r - 1);
    n.out(0, b.transpose(b.reshape(y, ys), perm));
    return;
  }
  re = fit(re);
  if (im) im = fit(*im);
  int64_t out_len = onesided ? len / 2 + 1 : len;
  n.check_count(len * out_len, "the DFT matrix");
  auto [yr, yi] = dft_parts(n, re, im, len, out_len, inverse);
  Shape ys = b.type(yr).shape;
  ys.push_back(1);
  ValueId y = b.concat({b.reshape(yr, ys), b.reshape(yi, ys)}, static_cast<int64_t>(ys.size()) - 1);
  IntList perm = inv;
  perm.push_back(r - 1);
  n.out(0, b.transpose(y, perm));
}

void stft(NodeCtx& n) {
  GraphBuilder& b = n.b;
  auto s = static_shape(n, n.type(0), "the signal");
  if (s.size() != 3) n.fail("the signal must be [batch, length, 1 or 2]");
  int64_t step = n.need_int(1, "frame_step");
  std::optional<ValueId> window = n.has(2) ? std::optional<ValueId>(n.x(2)) : std::nullopt;
  int64_t L = n.has(3) ? n.need_int(3, "frame_length")
              : window ? static_shape(n, n.type(2), "the window").at(0)
                       : 0;
  if (L <= 0 || step <= 0) n.fail("frame_length and frame_step must be positive");
  bool onesided = n.attr_i("onesided", 1) != 0;
  int64_t frames = (s[1] - L) / step + 1;
  if (frames <= 0) n.fail("the signal is shorter than one frame");
  n.check_count(frames * L + L * L, "the frame tables");
  std::vector<int64_t> idx;
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t i = 0; i < L; ++i) idx.push_back(f * step + i);
  ValueId x = n.x(0);
  ValueId g = b.op("gather", {x, b.constant(Tensor::from<int64_t>(DType::kI64, {frames * L}, idx))},
                   {{"axis", int64_t{1}}});
  g = b.reshape(g, Shape{s[0], frames, L, s[2]});
  auto part = [&](int64_t k) {
    ValueId p =
        b.reshape(b.slice(g, {0, 0, 0, k}, {s[0], frames, L, k + 1}), Shape{s[0], frames, L});
    if (window) p = b.mul(p, b.broadcast_in_dim(*window, Shape{s[0], frames, L}, {2}));
    return p;
  };
  ValueId re = part(0);
  std::optional<ValueId> im;
  if (s[2] == 2) im = part(1);
  int64_t out_len = onesided ? L / 2 + 1 : L;
  auto [yr, yi] = dft_parts(n, re, im, L, out_len, false);
  Shape ys{s[0], frames, out_len, 1};
  n.out(0, b.concat({b.reshape(yr, ys), b.reshape(yi, ys)}, 3));
}

void window(NodeCtx& n, const std::string& kind) {
  int64_t size = n.need_int(0, "size");
  if (size < 0) n.fail("size is negative");
  n.check_count(size, "the window");
  bool periodic = n.attr_i("periodic", 1) != 0;
  double N = periodic ? size : size - 1;
  std::vector<double> w(size);
  for (int64_t i = 0; i < size; ++i) {
    if (kind == "hann") w[i] = std::pow(std::sin(i * M_PI / N), 2);
    // The ONNX spec's alpha = 25/46, beta = 21/46 with pi itself. (onnx.reference writes pi as
    // 3.1415, so the node suite's expected windows are off by up to 1e-4 from the spec.)
    else if (kind == "hamming")
      w[i] = 25.0 / 46.0 - std::cos(i * M_PI * 2 / N) * (21.0 / 46.0);
    else
      w[i] = 0.42 - 0.5 * std::cos(i * M_PI * 2 / N) + 0.08 * std::cos(i * M_PI * 4 / N);
  }
  ValueId out;
  as_dtype(w, {size}, out_dtype(n, "output_datatype", DType::kF32), n.b, &out);
  n.out(0, out);
}

void mel_weight_matrix(NodeCtx& n) {
  int64_t bins = n.need_int(0, "num_mel_bins");
  int64_t dft_len = n.need_int(1, "dft_length");
  double rate = n.need_scalar(2, "sample_rate"), lo = n.need_scalar(3, "lower_edge_hertz"),
         hi = n.need_scalar(4, "upper_edge_hertz");
  if (!(rate > 0) || !std::isfinite(lo) || !std::isfinite(hi) || lo < 0 || hi < lo || hi > 1e9)
    n.fail("sample_rate must be positive and the edges finite, ordered and non-negative");
  int64_t spec = dft_len / 2 + 1;
  if (bins <= 0 || spec <= 0) n.fail("num_mel_bins and dft_length must be positive");
  n.check_count(spec * bins, "the mel matrix");
  double lo_mel = 2595 * std::log10(1 + lo / 700), hi_mel = 2595 * std::log10(1 + hi / 700);
  double step = (hi_mel - lo_mel) / (bins + 2);
  std::vector<int64_t> f(bins + 2);
  for (int64_t i = 0; i < bins + 2; ++i) {
    double hz = 700 * (std::pow(10, (i * step + lo_mel) / 2595) - 1);
    double fb = std::floor((dft_len + 1) * hz / rate);
    if (!(fb >= 0 && fb < 1e12)) n.fail("a mel bin edge is out of range");
    f[i] = static_cast<int64_t>(fb);
  }
  std::vector<double> w(spec * bins, 0.0);
  auto at = [&](int64_t j, int64_t i) -> double& {
    if (j < 0 || j >= spec) n.fail("mel bin edges fall outside the spectrum");
    return w[j * bins + i];
  };
  for (int64_t i = 0; i < bins; ++i) {
    int64_t l = f[i], c = f[i + 1], h = f[i + 2];
    if (c == l)
      at(c, i) = 1;
    else
      for (int64_t j = l; j <= c; ++j) at(j, i) = static_cast<double>(j - l) / (c - l);
    if (h > c)
      for (int64_t j = c; j < h; ++j) at(j, i) = static_cast<double>(h - j) / (h - c);
  }
  ValueId out;
  as_dtype(w, {spec, bins}, out_dtype(n, "output_datatype", DType::kF32), n.b, &out);
  n.out(0, out);
}

}  // namespace

void register_signal_ops(OpTable& t) {
  t["DFT"] = dft;
  t["STFT"] = stft;
  t["HannWindow"] = [](NodeCtx& n) { window(n, "hann"); };
  t["HammingWindow"] = [](NodeCtx& n) { window(n, "hamming"); };
  t["BlackmanWindow"] = [](NodeCtx& n) { window(n, "blackman"); };
  t["MelWeightMatrix"] = mel_weight_matrix;
}

}  // namespace rlx::onnx
