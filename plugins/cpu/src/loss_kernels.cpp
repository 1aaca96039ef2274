// Native kernels of SoftmaxCrossEntropy and SoftmaxCrossEntropyBackward
// (core/src/ops/ops_hir_loss.cpp has the formulas and the decompositions they implement), f32
// and f64, parallel over rows. A row is read twice while it is still in cache (its maximum, then
// exp(x - max) and their sum), instead of the max, subtract, exp, sum, log, one-hot select and
// sum kernels of the decomposition, each a trip through memory over [N, C]. The backward kernel
// writes exp(x - max) into dlogits and scales it in place, so exp is taken once per element.
// Sums run in f64 and the label's term is kept apart (RowStats), so a confident row's small loss
// and gradient keep their relative precision.
//
// f32 takes the row maximum and the exponentials from the transformer kernels' vector loops
// (nn_simd.h: AVX-512 where the host has it), as the forward Softmax kernel does; f64, the dtype
// of the gradient tests, takes plain loops.
//
// Labels are checked before any row is read: one outside [0, C) is an error naming the node, as
// an out-of-range gather index is (call_kernel.cpp), never a read outside the row. The
// decompositions give such a row a value instead (ops_hir_loss.cpp says which).
#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "nn_backward_kernels.h"
#include "nn_simd.h"
#include "rlx/core/error.h"

namespace rlx::cpu {

namespace {

// Rows per task: about 32K elements, as the other row kernels, so [128, 10] stays on the calling
// thread.
constexpr int64_t kTaskElems = int64_t{1} << 15;

int64_t label_at(const void* labels, DType d, int64_t i) {
  return d == DType::kI32 ? static_cast<const int32_t*>(labels)[i]
                          : static_cast<const int64_t*>(labels)[i];
}

void check_labels(const lir::CallKernel& k, const void* labels, DType d, int64_t rows,
                  int64_t classes) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t v = label_at(labels, d, r);
    if (v < 0 || v >= classes)
      throw_user_error(fmt::format(
          "{}: label {} (row {}) is out of range for {} classes; labels must be in [0, {})",
          k.loc.empty() ? k.callee : fmt::format("{} ('{}')", k.callee, k.loc), v, r, classes,
          classes));
  }
}

// The row's maximum (NaN when the row has one), and out[i] = exp(x[i] - m).
float row_max(const float* x, int64_t n) {
  bool saw_nan = false;
  const float m = nn_simd().row_max(x, n, &saw_nan);
  return saw_nan ? std::numeric_limits<float>::quiet_NaN() : m;
}
void exp_shifted(const float* x, int64_t n, float m, float* out) {
  nn_simd().exp_shifted(x, n, m, out);
}

// f64: the maximum in kLanes lanes (NaN propagates, as the decomposition's max does).
RLX_ROW_CLONES double row_max(const double* x, int64_t n) {
  constexpr int L = kLanes<double>;
  double a[L];
  std::fill(a, a + L, -std::numeric_limits<double>::infinity());
  bool nan = false;
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int l = 0; l < L; ++l) {
      nan |= std::isnan(x[i + l]);
      a[l] = std::max(a[l], x[i + l]);
    }
  for (; i < n; ++i) nan |= std::isnan(x[i]), a[0] = std::max(a[0], x[i]);
  return nan ? std::numeric_limits<double>::quiet_NaN() : *std::max_element(a, a + L);
}
void exp_shifted(const double* x, int64_t n, double m, double* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = std::exp(x[i] - m);
}

// Sum of a row in f64 lanes (the loop kernels' reductions accumulate in f64 too: decision 7 of
// docs/decisions.md), combined in a fixed order.
// Every index into `a` is a constant once the loops are unrolled, so the lanes stay in registers:
// a tail written lane by lane to memory and then read back as a vector for the combination
// stalled on store forwarding, a third of a 10-class cross-entropy's time.
template <typename T>
[[gnu::always_inline]] inline double wide_sum_row(const T* e, int64_t n) {
  constexpr int L = kLanes<double>;
  double a[L] = {};
  int64_t i = 0;
  for (; i + L <= n; i += L)
#pragma GCC unroll 16
    for (int l = 0; l < L; ++l) a[l] += static_cast<double>(e[i + l]);
#pragma GCC unroll 16
  for (int l = 0; l < L; ++l)
    if (i + l < n) a[l] += static_cast<double>(e[i + l]);
  // Halving widths L/2, L/4, ..., 1 counted by a plain index (a halving loop variable is not
  // unrolled), so that every index is a constant.
  constexpr int kHalvings = std::bit_width(static_cast<unsigned>(L)) - 1;
#pragma GCC unroll 8
  for (int h = 0; h < kHalvings; ++h) {
    const int w = (L / 2) >> h;
#pragma GCC unroll 16
    for (int l = 0; l < w; ++l) a[l] += a[l + w];
  }
  return a[0];
}
RLX_ROW_CLONES double wide_sum(const float* e, int64_t n) {
  return wide_sum_row(e, n);
}
RLX_ROW_CLONES double wide_sum(const double* e, int64_t n) {
  return wide_sum_row(e, n);
}

// dx[i] *= f over a row: the softmax's normalisation and dloss in one multiply.
template <typename T>
[[gnu::always_inline]] inline void scale_row(T* dx, int64_t n, T f) {
  for (int64_t i = 0; i < n; ++i) dx[i] *= f;
}
RLX_ROW_CLONES void scale(float* dx, int64_t n, float f) {
  scale_row(dx, n, f);
}
RLX_ROW_CLONES void scale(double* dx, int64_t n, double f) {
  scale_row(dx, n, f);
}

template <typename T>
struct CeArgs {
  const T* logits;
  const void* labels;
  DType label_dtype;
  const T* dloss;  // the backward op only
  T* out;          // loss [N] or dlogits [N, C]
  int64_t rows, classes;
};

template <typename F>
void for_row_blocks(int64_t rows, int64_t n, F&& f) {
  const int64_t grain = std::max<int64_t>(1, kTaskElems / std::max<int64_t>(1, n));
  // One task's worth (MNIST's [128, 10]): on this thread, without the scheduler's overhead,
  // which is a good part of so small a step.
  if (rows <= grain) return f(int64_t{0}, rows);
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, rows, grain),
                    [&](const tbb::blocked_range<int64_t>& r) { f(r.begin(), r.end()); });
}

// One row's softmax statistics, in f64: the label's exp(x[label] - m) and the sum of every other
// class's, `rest`, summed without the label's term. A well-trained row has rest << 1 = e_label,
// and its loss log(1 + rest) and gradient at the label -rest / s are then only as accurate as
// rest is: taken as s - e_label (or p - 1, as the decomposition does) they would keep f32's
// absolute error of ~6e-8 on a loss of 1e-5, where the f64 sums keep its relative one.
struct RowStats {
  double label_exp, rest;
};

// e[i] = exp(x[i] - m) with e[label] = 0; false (and m NaN) when the row has a NaN.
template <typename T>
bool row_stats(const T* x, int64_t n, int64_t label, T* e, T& m, RowStats& st) {
  m = row_max(x, n);
  if (std::isnan(m)) return false;
  exp_shifted(x, n, m, e);
  e[label] = T(0);
  st.label_exp = std::exp(static_cast<double>(x[label] - m));
  st.rest = wide_sum(e, n);
  return true;
}

// loss = log(s) - (x[label] - m) = log1p(rest / e_label), the second form where the label
// dominates (rest <= e_label: the loss is below log 2 and the first would cancel).
template <typename T>
void cross_entropy(const CeArgs<T>& a) {
  const int64_t n = a.classes;
  for_row_blocks(a.rows, n, [&](int64_t r0, int64_t r1) {
    std::vector<T> e(static_cast<size_t>(n));  // the exponentials: only their sum is kept
    for (int64_t r = r0; r < r1; ++r) {
      const T* x = a.logits + r * n;
      const int64_t label = label_at(a.labels, a.label_dtype, r);
      T m;
      RowStats st;
      if (!row_stats(x, n, label, e.data(), m, st)) {
        a.out[r] = m;
        continue;
      }
      // The logarithms in T: the sums keep their f64 precision, and an f32 loss needs no
      // double-precision log (a fifth of this kernel's time at 10 classes).
      a.out[r] = st.rest <= st.label_exp
                     ? std::log1p(static_cast<T>(st.rest / st.label_exp))
                     : std::log(static_cast<T>(st.label_exp + st.rest)) - (x[label] - m);
    }
  });
}

// dx = exp(x - m) * (dloss / s) off the label and -(rest / s) * dloss at it: (softmax - onehot) *
// dloss, the label's term without the cancellation of p - 1.
template <typename T>
void cross_entropy_backward(const CeArgs<T>& a) {
  const int64_t n = a.classes;
  for_row_blocks(a.rows, n, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* x = a.logits + r * n;
      T* dx = a.out + r * n;
      const int64_t label = label_at(a.labels, a.label_dtype, r);
      T m;
      RowStats st;
      if (!row_stats(x, n, label, dx, m, st)) {
        std::fill(dx, dx + n, m);
        continue;
      }
      const double s = st.label_exp + st.rest, dl = static_cast<double>(a.dloss[r]);
      scale(dx, n, static_cast<T>(dl / s));
      dx[label] = static_cast<T>(-(st.rest / s) * dl);
    }
  });
}

template <typename T>
void run_typed(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
               const std::vector<void*>& ptrs, bool backward) {
  CeArgs<T> a;
  a.rows = in[0].shape[0];
  a.classes = in[0].shape[1];
  a.logits = static_cast<const T*>(ptrs[k.inputs[0]]);
  a.labels = ptrs[k.inputs[1]];
  a.label_dtype = in[1].dtype;
  a.dloss = backward ? static_cast<const T*>(ptrs[k.inputs[2]]) : nullptr;
  a.out = static_cast<T*>(ptrs[k.outputs[0]]);
  check_labels(k, a.labels, a.label_dtype, a.rows, a.classes);
  if (backward)
    cross_entropy_backward(a);
  else
    cross_entropy(a);
}

Verdict refuse(const NodeSignature& s, const std::string& why) {
  return Verdict::no(fmt::format("cpu's native {} kernel {}", s.op, why));
}

}  // namespace

bool is_loss_op(const std::string& op) {
  return op == "SoftmaxCrossEntropy" || op == "SoftmaxCrossEntropyBackward";
}

Verdict claim_loss_op(const NodeSignature& s) {
  const bool backward = s.op == "SoftmaxCrossEntropyBackward";
  if (s.inputs.size() != (backward ? 3u : 2u) || s.outputs.size() != 1)
    return refuse(s, backward ? "needs logits, labels, dloss and one result"
                              : "needs logits, labels and one result");
  const TensorType &logits = s.inputs[0], &labels = s.inputs[1];
  const DType d = logits.dtype;
  if (d != DType::kF32 && d != DType::kF64) return refuse(s, "takes f32 or f64 logits only");
  if (logits.rank() != 2) return refuse(s, "needs logits [N, C]");
  if (labels.rank() != 1 || (labels.dtype != DType::kI32 && labels.dtype != DType::kI64))
    return refuse(s, "needs i32 or i64 labels [N]");
  if (backward && s.inputs[2].dtype != d) return refuse(s, "needs dloss of the logits' dtype");
  if (s.outputs[0].dtype != d) return refuse(s, "needs a result of the logits' dtype");
  return Verdict::yes();
}

void run_loss_kernel(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                     const std::vector<void*>& ptrs) {
  const bool backward = k.callee == "native:SoftmaxCrossEntropyBackward";
  if (in[0].dtype == DType::kF64) return run_typed<double>(k, in, ptrs, backward);
  run_typed<float>(k, in, ptrs, backward);
}

}  // namespace rlx::cpu
