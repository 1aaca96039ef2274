// Native kernels of LayerNormBackward, RMSNormBackward and SoftmaxBackward. Each row of x (or y)
// is a few KB, so it stays in L1 while the kernel recomputes the row's statistics and writes dx:
// one trip through memory instead of the dozen reductions and elementwise kernels of the
// decompositions they implement (core/src/ops/ops_hir_nn_backward.cpp has the formulas).
//
// dscale and dbias are sums over every row. Rows are split into blocks fixed by the shape alone
// (never by the thread count or TBB's scheduling); each block sums into its own partial row and
// the partials are added in block order, so the result is the same bits on every run.
#include "nn_backward_kernels.h"

#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "rlx/core/error.h"

namespace rlx::cpu {

namespace {

// Two sums over i < n at once, of f(i) into s0 and s1.
template <typename T, typename F>
[[gnu::always_inline]] inline void lane_sums(int64_t n, F f, T& s0, T& s1) {
  constexpr int L = kLanes<T>;
  T a[L] = {}, c[L] = {};
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int l = 0; l < L; ++l) {
      T u, v;
      f(i + l, u, v);
      a[l] += u;
      c[l] += v;
    }
  for (int l = 0; i < n; ++i, ++l) {
    T u, v;
    f(i, u, v);
    a[l] += u;
    c[l] += v;
  }
  for (int w = L / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) a[l] += a[l + w], c[l] += c[l + w];
  s0 = a[0], s1 = c[0];
}

template <typename T, typename F>
[[gnu::always_inline]] inline T lane_sum(int64_t n, F f) {
  T s, unused;
  lane_sums<T>(
      n, [&](int64_t i, T& u, T& v) { u = f(i), v = T(0); }, s, unused);
  return s;
}

template <typename T>
struct NormRows {
  const T* x;
  const T* g;  // the scale [n], ones when the forward op had none
  const T* dy;
  T* dx;
  int64_t n;
  T eps;
  bool rms;
};

// Rows [r0, r1): dx, and the block's partial dscale (sum of dy * xhat) and dbias (sum of dy).
template <typename T>
[[gnu::always_inline]] inline void norm_rows(const NormRows<T>& a, int64_t r0, int64_t r1,
                                             T* pscale, T* pbias) {
  const int64_t n = a.n;
  const T fn = static_cast<T>(n);
  const T* g = a.g;
  for (int64_t r = r0; r < r1; ++r) {
    const T* x = a.x + r * n;
    const T* dy = a.dy + r * n;
    T* dx = a.dx + r * n;
    const T mean = a.rms ? T(0) : lane_sum<T>(n, [&](int64_t i) { return x[i]; }) / fn;
    const T var = lane_sum<T>(n,
                              [&](int64_t i) {
                                const T c = x[i] - mean;
                                return c * c;
                              }) /
                  fn;
    const T rstd = T(1) / std::sqrt(var + a.eps);
    T sum_g, sum_gx;
    lane_sums<T>(
        n,
        [&](int64_t i, T& u, T& v) {
          const T gi = dy[i] * g[i];
          u = gi, v = gi * ((x[i] - mean) * rstd);
        },
        sum_g, sum_gx);
    // RMSNorm's mean is a constant 0: no mean(g) term.
    const T mean_g = a.rms ? T(0) : sum_g / fn, mean_gx = sum_gx / fn;
    for (int64_t i = 0; i < n; ++i) {
      const T xhat = (x[i] - mean) * rstd, d = dy[i];
      pscale[i] += d * xhat;
      pbias[i] += d;
      dx[i] = rstd * (d * g[i] - xhat * mean_gx - mean_g);
    }
  }
}

RLX_ROW_CLONES void norm_rows_f32(const NormRows<float>& a, int64_t r0, int64_t r1, float* ps,
                                  float* pb) {
  norm_rows(a, r0, r1, ps, pb);
}
RLX_ROW_CLONES void norm_rows_f64(const NormRows<double>& a, int64_t r0, int64_t r1, double* ps,
                                  double* pb) {
  norm_rows(a, r0, r1, ps, pb);
}
void rows_of(const NormRows<float>& a, int64_t r0, int64_t r1, float* ps, float* pb) {
  norm_rows_f32(a, r0, r1, ps, pb);
}
void rows_of(const NormRows<double>& a, int64_t r0, int64_t r1, double* ps, double* pb) {
  norm_rows_f64(a, r0, r1, ps, pb);
}

// About 32K elements per block, as the forward kernels' tasks, and at most kMaxBlocks partial
// rows to add up.
constexpr int64_t kBlockElems = int64_t{1} << 15;
constexpr int64_t kMaxBlocks = 64;

template <typename T>
void norm_backward(NormRows<T> a, int64_t rows, T* dscale, T* dbias) {
  const int64_t n = a.n;
  std::vector<T> ones;
  if (!a.g) {
    ones.assign(static_cast<size_t>(n), T(1));
    a.g = ones.data();
  }
  const int64_t per_block = std::max<int64_t>(1, kBlockElems / std::max<int64_t>(1, n));
  const int64_t blocks = std::clamp<int64_t>((rows + per_block - 1) / per_block, 1, kMaxBlocks);
  const int64_t rows_per = (rows + blocks - 1) / blocks;
  std::vector<T> partial(static_cast<size_t>(blocks * 2 * n), T(0));
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, blocks, 1), [&](const auto& range) {
    for (int64_t blk = range.begin(); blk < range.end(); ++blk) {
      T* p = partial.data() + blk * 2 * n;
      rows_of(a, std::min(rows, blk * rows_per), std::min(rows, (blk + 1) * rows_per), p, p + n);
    }
  });
  std::copy(partial.begin(), partial.begin() + n, dscale);
  if (dbias) std::copy(partial.begin() + n, partial.begin() + 2 * n, dbias);
  for (int64_t blk = 1; blk < blocks; ++blk) {
    const T* p = partial.data() + blk * 2 * n;
    for (int64_t i = 0; i < n; ++i) dscale[i] += p[i];
    if (dbias)
      for (int64_t i = 0; i < n; ++i) dbias[i] += p[n + i];
  }
}

// dx = y * (dy - sum(dy * y)) over n contiguous values.
template <typename T>
[[gnu::always_inline]] inline void softmax_row(const T* y, const T* dy, int64_t n, T* dx) {
  const T s = lane_sum<T>(n, [&](int64_t i) { return dy[i] * y[i]; });
  for (int64_t i = 0; i < n; ++i) dx[i] = y[i] * (dy[i] - s);
}

template <typename T>
[[gnu::always_inline]] inline void softmax_rows(const T* y, const T* dy, int64_t n, int64_t r0,
                                                int64_t r1, T* dx) {
  for (int64_t r = r0; r < r1; ++r) softmax_row(y + r * n, dy + r * n, n, dx + r * n);
}
RLX_ROW_CLONES void softmax_rows_f32(const float* y, const float* dy, int64_t n, int64_t r0,
                                     int64_t r1, float* dx) {
  softmax_rows(y, dy, n, r0, r1, dx);
}
RLX_ROW_CLONES void softmax_rows_f64(const double* y, const double* dy, int64_t n, int64_t r0,
                                     int64_t r1, double* dx) {
  softmax_rows(y, dy, n, r0, r1, dx);
}
void rows_of(const float* y, const float* dy, int64_t n, int64_t r0, int64_t r1, float* dx) {
  softmax_rows_f32(y, dy, n, r0, r1, dx);
}
void rows_of(const double* y, const double* dy, int64_t n, int64_t r0, int64_t r1, double* dx) {
  softmax_rows_f64(y, dy, n, r0, r1, dx);
}

// y, dy, dx viewed as [outer, n, inner], the softmax axis in the middle.
template <typename T>
void softmax_backward(const T* y, const T* dy, int64_t outer, int64_t n, int64_t inner, T* dx) {
  const int64_t grain = std::max<int64_t>(1, kBlockElems / std::max<int64_t>(1, n));
  if (inner == 1) {
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, outer, grain),
                      [&](const auto& r) { rows_of(y, dy, n, r.begin(), r.end(), dx); });
    return;
  }
  // A strided axis: each column gathered into contiguous rows and scattered back, as the
  // forward kernel does.
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, outer * inner, grain), [&](const auto& r) {
    std::vector<T> col(static_cast<size_t>(3 * n));
    for (int64_t c = r.begin(); c < r.end(); ++c) {
      const int64_t base = (c / inner) * n * inner + c % inner;
      for (int64_t i = 0; i < n; ++i)
        col[i] = y[base + i * inner], col[n + i] = dy[base + i * inner];
      rows_of(col.data(), col.data() + n, n, 0, 1, col.data() + 2 * n);
      for (int64_t i = 0; i < n; ++i) dx[base + i * inner] = col[2 * n + i];
    }
  });
}

Verdict refuse(const NodeSignature& s, const std::string& why) {
  return Verdict::no(fmt::format("cpu's native {} kernel {}", s.op, why));
}

bool numeric_attr(const Attrs& a, const char* key) {
  auto it = a.find(key);
  return it == a.end() || std::holds_alternative<double>(it->second) ||
         std::holds_alternative<int64_t>(it->second);
}

// Every input and output of one dtype, f32 or f64 (the dtypes of the forward kernels and of
// training in f64).
bool one_float_dtype(const NodeSignature& s) {
  const DType d = s.inputs[0].dtype;
  if (d != DType::kF32 && d != DType::kF64) return false;
  for (const auto* list : {&s.inputs, &s.outputs})
    for (const TensorType& t : *list)
      if (t.dtype != d) return false;
  return true;
}

Verdict claim_norm_backward(const NodeSignature& s) {
  const size_t results = s.op == "LayerNormBackward" ? 3 : 2;
  if (s.inputs.size() < 2 || s.inputs.size() > 3 || s.outputs.size() != results)
    return refuse(s, fmt::format("needs x, an optional scale and dy, and {} results", results));
  if (!one_float_dtype(s)) return refuse(s, "takes f32 or f64 only, one dtype throughout");
  const TensorType& x = s.inputs[0];
  if (x.rank() < 1 || !x.shape.back().is_static()) return refuse(s, "needs a static last dim");
  if (!(s.inputs.back() == x)) return refuse(s, "needs dy of x's type");
  if (s.inputs.size() == 3 && !(s.inputs[1].shape == Shape{x.shape.back()}))
    return refuse(s, "takes a scale of the normalised dim's size only");
  if (!numeric_attr(s.attrs, "epsilon")) return refuse(s, "needs a numeric epsilon");
  return Verdict::yes();
}

Verdict claim_softmax_backward(const NodeSignature& s) {
  if (s.inputs.size() != 2 || s.outputs.size() != 1) return refuse(s, "needs y, dy and one result");
  if (!one_float_dtype(s)) return refuse(s, "takes f32 or f64 only, one dtype throughout");
  if (!(s.inputs[0] == s.inputs[1])) return refuse(s, "needs y and dy of one type");
  auto it = s.attrs.find("axis");
  const int64_t rank = s.inputs[0].rank();
  const int64_t* axis = it == s.attrs.end() ? nullptr : std::get_if<int64_t>(&it->second);
  if (it != s.attrs.end() && (!axis || *axis < -rank || *axis >= rank))
    return refuse(s, "needs an integer axis within the rank");
  if (rank < 1) return refuse(s, "needs a rank >= 1");
  return Verdict::yes();
}

int64_t product(const std::vector<int64_t>& v, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= v[i];
  return p;
}

template <typename T>
void run_norm(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
              const std::vector<void*>& ptrs, bool rms) {
  const auto& xs = in[0].shape;
  NormRows<T> a;
  a.n = xs.back();
  a.x = static_cast<const T*>(ptrs[k.inputs[0]]);
  a.g = in.size() == 3 ? static_cast<const T*>(ptrs[k.inputs[1]]) : nullptr;
  a.dy = static_cast<const T*>(ptrs[k.inputs.back()]);
  a.dx = static_cast<T*>(ptrs[k.outputs[0]]);
  a.eps = static_cast<T>(number_attr(k.attrs, "epsilon", rms ? 1e-6 : 1e-5));
  a.rms = rms;
  norm_backward(a, product(xs, 0, xs.size() - 1), static_cast<T*>(ptrs[k.outputs[1]]),
                rms ? nullptr : static_cast<T*>(ptrs[k.outputs[2]]));
}

template <typename T>
void run_softmax(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                 const std::vector<void*>& ptrs) {
  const auto& ys = in[0].shape;
  const auto rank = static_cast<int64_t>(ys.size());
  int64_t axis = static_cast<int64_t>(number_attr(k.attrs, "axis", -1));
  if (axis < 0) axis += rank;
  softmax_backward(static_cast<const T*>(ptrs[k.inputs[0]]),
                   static_cast<const T*>(ptrs[k.inputs[1]]), product(ys, 0, axis), ys[axis],
                   product(ys, axis + 1, ys.size()), static_cast<T*>(ptrs[k.outputs[0]]));
}

template <typename T>
void run_typed(const std::string& op, const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
               const std::vector<void*>& ptrs) {
  if (op == "SoftmaxBackward") return run_softmax<T>(k, in, ptrs);
  run_norm<T>(k, in, ptrs, op == "RMSNormBackward");
}

}  // namespace

std::optional<Verdict> claim_nn_backward_op(const NodeSignature& s) {
  if (s.op == "LayerNormBackward" || s.op == "RMSNormBackward") return claim_norm_backward(s);
  if (s.op == "SoftmaxBackward") return claim_softmax_backward(s);
  if (is_loss_op(s.op)) return claim_loss_op(s);
  return std::nullopt;
}

bool is_nn_backward_op(const std::string& op) {
  return op == "LayerNormBackward" || op == "RMSNormBackward" || op == "SoftmaxBackward" ||
         is_loss_op(op);
}

void run_nn_backward_kernel(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                            const std::vector<void*>& ptrs) {
  const std::string op = k.callee.substr(std::string("native:").size());
  if (is_loss_op(op)) return run_loss_kernel(k, in, ptrs);
  if (in[0].dtype == DType::kF64) return run_typed<double>(op, k, in, ptrs);
  run_typed<float>(op, k, in, ptrs);
}

}  // namespace rlx::cpu
