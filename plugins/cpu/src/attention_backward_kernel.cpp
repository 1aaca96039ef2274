// The native kernel of AttentionBackward (core/src/ops/ops_hir_nn_backward.cpp has the
// formulas), f32 and f64. One task per (batch, kv head): the task owns that kv head's rows of dk
// and dv, so the query heads of its group add into them without atomics, in a fixed order, and
// the result is the same bits whatever the thread count. Query rows go in blocks of four: the
// block's softmax rows are recomputed from q and k (scores and dO V^T held for those rows only,
// never a [Sq, Sk] matrix), then the block adds its share of dq, dk and dv, each row of K, V, dK
// and dV read once for the four rows. K, V and the dK, dV sums are held transposed in the task's
// scratch, so every loop over a row's keys is a contiguous vector loop.
//
// Masking follows the forward decomposition: masked scores are the dtype's lowest value, so a
// partially masked row gives them weight exactly 0, and a row with no visible key (an all-zero
// padding row, or a causal query before the first key) weighs every key 1/Sk. That row's dv
// share is dO/Sk per key, and it sends nothing to dq or dk: the forward selected a constant
// there.
#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "nn_backward_kernels.h"
#include "nn_simd.h"
#include "rlx/core/error.h"

namespace rlx::cpu {

namespace {

// x . y in explicit lanes combined in a fixed order, so -O3 vectorises it without reassociating
// and every clone gives the same bits.
template <typename T>
[[gnu::always_inline]] inline T dot(const T* x, const T* y, int64_t n) {
  constexpr int L = kLanes<T>;
  T a[L] = {};
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int l = 0; l < L; ++l) a[l] += x[i + l] * y[i + l];
  for (int l = 0; i < n; ++i, ++l) a[l] += x[i] * y[i];
  for (int w = L / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) a[l] += a[l + w];
  return a[0];
}

template <typename T>
[[gnu::always_inline]] inline void axpy(T a, const T* x, T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

struct Shape4 {
  int64_t batch, heads, kv_heads, q_len, kv_len, dim, v_dim;
};

template <typename T>
struct Args {
  Shape4 sh;
  T scale;
  bool causal;
  const uint8_t* keep;  // [batch, kv_len], null: no padding mask
  const T *q, *k, *v, *dout;
  T *dq, *dk, *dv;
};

// Query rows taken together: each row of K, V, dK and dV (transposed) is loaded once per block.
constexpr int kRows = 4;

// One task's scratch. K and V are held transposed ([dim][key], rows padded to whole lanes with
// zeros), and dK, dV accumulate transposed, so every loop over a row's keys runs along
// contiguous memory; s and dp hold a block's rows of scores (then P) and dO V^T (then dS).
template <typename T>
struct Scratch {
  std::vector<T> kt, vt, dkt, dvt, s, dp, dq_spare;
};

// s[j] = exp(s[j] - m), 0 where s[j] is -inf (a masked key); returns the sum.
float exp_row(float* s, int64_t n, float m) {
  return nn_simd().exp_shifted(s, n, m, s);
}
double exp_row(double* s, int64_t n, double m) {
  double l = 0;
  for (int64_t j = 0; j < n; ++j) {
    s[j] = s[j] == -std::numeric_limits<double>::infinity() ? 0.0 : std::exp(s[j] - m);
    l += s[j];
  }
  return l;
}

// out[r][j] = sum_c x[r][c] * m[c * ld + j] for r < kRows, j < n (n a multiple of the lanes):
// a block of rows times a matrix, each lane's sum held in a register.
template <typename T>
[[gnu::always_inline]] inline void rows_times(const T* const* x, int64_t c_count, const T* m,
                                              int64_t ld, int64_t n, T* const* out) {
  constexpr int L = kLanes<T>;
  for (int64_t j0 = 0; j0 < n; j0 += L) {
    T acc[kRows][L] = {};
    for (int64_t c = 0; c < c_count; ++c)
      for (int r = 0; r < kRows; ++r)
        for (int l = 0; l < L; ++l) acc[r][l] += x[r][c] * m[c * ld + j0 + l];
    for (int r = 0; r < kRows; ++r)
      for (int l = 0; l < L; ++l) out[r][j0 + l] = acc[r][l];
  }
}

// acc[c * ld + j] += sum_r x[r][c] * y[r * ld + j] for c < c_count, j < n.
template <typename T>
[[gnu::always_inline]] inline void add_rows_outer(const T* const* x, int64_t c_count, const T* y,
                                                  int64_t ld, int64_t n, T* acc) {
  for (int64_t c = 0; c < c_count; ++c) {
    const T a0 = x[0][c], a1 = x[1][c], a2 = x[2][c], a3 = x[3][c];
    T* dst = acc + c * ld;
    for (int64_t j = 0; j < n; ++j)
      dst[j] += a0 * y[j] + a1 * y[ld + j] + a2 * y[2 * ld + j] + a3 * y[3 * ld + j];
  }
}

template <typename T>
[[gnu::always_inline]] inline void kv_head_rows(const Args<T>& a, int64_t b, int64_t kvh,
                                                Scratch<T>& w) {
  static_assert(kRows == 4, "add_rows_outer takes four rows");
  constexpr int L = kLanes<T>;
  const Shape4& sh = a.sh;
  const int64_t D = sh.dim, Dv = sh.v_dim, Sq = sh.q_len, Sk = sh.kv_len;
  const int64_t ld = (Sk + L - 1) / L * L;
  const int64_t group = sh.heads / sh.kv_heads;
  const int64_t kv_at = (b * sh.kv_heads + kvh) * Sk;
  const T* k = a.k + kv_at * D;
  const T* v = a.v + kv_at * Dv;
  T *kt = w.kt.data(), *vt = w.vt.data(), *dkt = w.dkt.data(), *dvt = w.dvt.data();
  T *s = w.s.data(), *dp = w.dp.data();
  std::fill(kt, kt + D * ld, T(0));
  std::fill(vt, vt + Dv * ld, T(0));
  for (int64_t j = 0; j < Sk; ++j) {
    for (int64_t d = 0; d < D; ++d) kt[d * ld + j] = k[j * D + d];
    for (int64_t e = 0; e < Dv; ++e) vt[e * ld + j] = v[j * Dv + e];
  }
  std::fill(dkt, dkt + D * ld, T(0));
  std::fill(dvt, dvt + Dv * ld, T(0));
  const uint8_t* keep = a.keep ? a.keep + b * Sk : nullptr;
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  for (int64_t g = 0; g < group; ++g) {
    const int64_t row0 = (b * sh.heads + kvh * group + g) * Sq;
    for (int64_t i0 = 0; i0 < Sq; i0 += kRows) {
      const int64_t rows = std::min<int64_t>(kRows, Sq - i0);
      // Rows past the block's end repeat its first row; their P and dS are zeroed below, so
      // they add nothing.
      const T *q[kRows], *dout[kRows];
      int64_t n[kRows];
      int64_t n_max = 0;
      for (int r = 0; r < kRows; ++r) {
        const int64_t i = i0 + (r < rows ? r : 0);
        q[r] = a.q + (row0 + i) * D;
        dout[r] = a.dout + (row0 + i) * Dv;
        // Keys j < n may be visible (causal aligns the last query with the last key).
        n[r] = r >= rows ? 0 : a.causal ? std::clamp<int64_t>(i + Sk - Sq + 1, 0, Sk) : Sk;
        n_max = std::max(n_max, n[r]);
      }
      const int64_t span = (n_max + L - 1) / L * L;
      T *s_rows[kRows], *dp_rows[kRows];
      for (int r = 0; r < kRows; ++r) s_rows[r] = s + r * ld, dp_rows[r] = dp + r * ld;
      rows_times(q, D, kt, ld, span, s_rows);
      rows_times(dout, Dv, vt, ld, span, dp_rows);
      for (int r = 0; r < kRows; ++r) {
        T* sr = s + r * ld;
        T* dr = dp + r * ld;
        T m = kNegInf;
        for (int64_t j = 0; j < n[r]; ++j) {
          sr[j] = keep && !keep[j] ? kNegInf : sr[j] * a.scale;
          m = std::max(m, sr[j]);
        }
        if (m == kNegInf) {
          if (r < rows) {  // no visible key: uniform weights over all Sk keys, and no dS
            const T u = T(1) / static_cast<T>(Sk);
            for (int64_t e = 0; e < Dv; ++e)
              for (int64_t j = 0; j < Sk; ++j) dvt[e * ld + j] += dout[r][e] * u;
          }
          std::fill(sr, sr + span, T(0));
          std::fill(dr, dr + span, T(0));
          continue;
        }
        const T inv = T(1) / exp_row(sr, n[r], m);
        for (int64_t j = 0; j < n[r]; ++j) sr[j] *= inv;  // P's row
        std::fill(sr + n[r], sr + span, T(0));
        const T row_dot = dot(sr, dr, n[r]);
        for (int64_t j = 0; j < span; ++j) dr[j] = sr[j] * (dr[j] - row_dot) * a.scale;
      }
      add_rows_outer(dout, Dv, s, ld, span, dvt);  // dV^T += dO^T P
      add_rows_outer(q, D, dp, ld, span, dkt);     // dK^T += Q^T dS (scaled)
      if (D % L == 0) {  // dQ = dS K over K's rows; rows past the block go to scratch
        T* dq_rows[kRows];
        for (int r = 0; r < kRows; ++r)
          dq_rows[r] = r < rows ? a.dq + (row0 + i0 + r) * D : w.dq_spare.data();
        rows_times<T>(dp_rows, n_max, k, D, D, dq_rows);
      } else {
        for (int r = 0; r < rows; ++r) {
          T* dq = a.dq + (row0 + i0 + r) * D;
          for (int64_t d = 0; d < D; ++d) dq[d] = dot(dp + r * ld, kt + d * ld, span);
        }
      }
    }
  }
  T* dk = a.dk + kv_at * D;
  T* dv = a.dv + kv_at * Dv;
  for (int64_t j = 0; j < Sk; ++j) {
    for (int64_t d = 0; d < D; ++d) dk[j * D + d] = dkt[d * ld + j];
    for (int64_t e = 0; e < Dv; ++e) dv[j * Dv + e] = dvt[e * ld + j];
  }
}

RLX_ROW_CLONES void kv_head_f32(const Args<float>& a, int64_t b, int64_t kvh, Scratch<float>& w) {
  kv_head_rows(a, b, kvh, w);
}
RLX_ROW_CLONES void kv_head_f64(const Args<double>& a, int64_t b, int64_t kvh, Scratch<double>& w) {
  kv_head_rows(a, b, kvh, w);
}
void kv_head(const Args<float>& a, int64_t b, int64_t kvh, Scratch<float>& w) {
  kv_head_f32(a, b, kvh, w);
}
void kv_head(const Args<double>& a, int64_t b, int64_t kvh, Scratch<double>& w) {
  kv_head_f64(a, b, kvh, w);
}

template <typename T>
void attention_backward(const Args<T>& a) {
  const Shape4& sh = a.sh;
  const int64_t tasks = sh.batch * sh.kv_heads;
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, tasks, 1),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      constexpr int L = kLanes<T>;
                      const int64_t ld = (sh.kv_len + L - 1) / L * L;
                      Scratch<T> w;
                      w.kt.resize(sh.dim * ld);
                      w.dkt.resize(sh.dim * ld);
                      w.vt.resize(sh.v_dim * ld);
                      w.dvt.resize(sh.v_dim * ld);
                      w.s.resize(kRows * ld);
                      w.dp.resize(kRows * ld);
                      w.dq_spare.resize(sh.dim);
                      for (int64_t t = r.begin(); t < r.end(); ++t)
                        kv_head(a, t / sh.kv_heads, t % sh.kv_heads, w);
                    });
}

Verdict refuse(const std::string& why) {
  return Verdict::no("cpu's native AttentionBackward kernel " + why);
}

bool mask_dtype_ok(DType d) {
  return d == DType::kBool || d == DType::kU8 || d == DType::kI8 || d == DType::kI32 ||
         d == DType::kI64 || d == DType::kF32 || d == DType::kF64;
}

bool mask_kept(DType d, const void* data, int64_t at) {
  switch (d) {
    case DType::kI32:
      return static_cast<const int32_t*>(data)[at] != 0;
    case DType::kI64:
      return static_cast<const int64_t*>(data)[at] != 0;
    case DType::kF32:
      return static_cast<const float*>(data)[at] != 0.0f;  // NaN keeps, as `ne 0` does
    case DType::kF64:
      return static_cast<const double*>(data)[at] != 0.0;
    default:
      return static_cast<const uint8_t*>(data)[at] != 0;
  }
}

template <typename T>
void run_typed(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
               const std::vector<void*>& ptrs) {
  const auto &qs = in[0].shape, &ks = in[1].shape, &vs = in[2].shape;
  Args<T> a;
  a.sh = {qs[0], qs[1], ks[1], qs[2], ks[2], qs[3], vs[3]};
  if (ks[0] != qs[0] || vs[0] != qs[0] || vs[1] != ks[1] || vs[2] != ks[2] || ks[3] != qs[3] ||
      ks[1] <= 0 || qs[1] % ks[1])
    throw_user_error(
        fmt::format("native:AttentionBackward ('{}'): q, k, v shapes do not fit one "
                    "attention",
                    k.loc));
  auto mask = k.attrs.find("mask");
  const std::string kind = mask == k.attrs.end() ? "none" : std::get<std::string>(mask->second);
  a.causal = kind == "causal";
  a.scale =
      static_cast<T>(number_attr(k.attrs, "scale", 1.0 / std::sqrt(static_cast<double>(qs[3]))));
  std::vector<uint8_t> keep;
  if (in.size() == 5) {
    const lir::Buffer& m = in[3];
    const int64_t mb = m.shape[0], mk = m.shape[1], B = qs[0], Sk = ks[2];
    if ((mb != B && mb != 1) || (mk != Sk && mk != 1))
      throw_user_error(
          fmt::format("native:AttentionBackward ('{}'): padding mask is [{}, {}], "
                      "attention needs [{}, {}]",
                      k.loc, mb, mk, B, Sk));
    keep.resize(B * Sk);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < Sk; ++j)
        keep[b * Sk + j] =
            mask_kept(m.dtype, ptrs[k.inputs[3]], (mb == 1 ? 0 : b) * mk + (mk == 1 ? 0 : j));
    a.keep = keep.data();
  } else {
    a.keep = nullptr;
  }
  a.q = static_cast<const T*>(ptrs[k.inputs[0]]);
  a.k = static_cast<const T*>(ptrs[k.inputs[1]]);
  a.v = static_cast<const T*>(ptrs[k.inputs[2]]);
  a.dout = static_cast<const T*>(ptrs[k.inputs.back()]);
  a.dq = static_cast<T*>(ptrs[k.outputs[0]]);
  a.dk = static_cast<T*>(ptrs[k.outputs[1]]);
  a.dv = static_cast<T*>(ptrs[k.outputs[2]]);
  attention_backward(a);
}

}  // namespace

Verdict claim_attention_backward(const NodeSignature& s) {
  if (s.inputs.size() < 4 || s.inputs.size() > 5 || s.outputs.size() != 3)
    return refuse("needs q, k, v, an optional mask, dout and three results");
  const DType d = s.inputs[0].dtype;
  if (d != DType::kF32 && d != DType::kF64) return refuse("takes f32 or f64 only");
  for (size_t i : {size_t{1}, size_t{2}, s.inputs.size() - 1})
    if (s.inputs[i].dtype != d) return refuse("needs q, k, v and dout of one dtype");
  for (const TensorType& t : s.outputs)
    if (t.dtype != d) return refuse("needs results of q's dtype");
  for (size_t i : {size_t{0}, size_t{1}, size_t{2}, s.inputs.size() - 1})
    if (s.inputs[i].rank() != 4) return refuse("needs rank-4 q, k, v and dout");
  if (s.inputs.size() == 5 && (s.inputs[3].rank() != 2 || !mask_dtype_ok(s.inputs[3].dtype)))
    return refuse("takes a [batch, kv_seq] padding mask of bool, u8, i8, i32, i64, f32 or f64");
  auto mask = s.attrs.find("mask");
  const std::string* kind =
      mask == s.attrs.end() ? nullptr : std::get_if<std::string>(&mask->second);
  if (mask != s.attrs.end() && !kind) return refuse("needs a string mask attribute");
  const std::string m = kind ? *kind : "none";
  if (m != "none" && m != "causal" && m != "padding")
    return refuse("takes mask \"none\", \"causal\" or \"padding\" only");
  if ((m == "padding") != (s.inputs.size() == 5))
    return refuse("needs a mask input exactly when mask is \"padding\"");
  auto scale = s.attrs.find("scale");
  if (scale != s.attrs.end() && !std::holds_alternative<double>(scale->second) &&
      !std::holds_alternative<int64_t>(scale->second))
    return refuse("needs a numeric scale");
  return Verdict::yes();
}

void run_attention_backward(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                            const std::vector<void*>& ptrs) {
  if (in[0].dtype == DType::kF64) return run_typed<double>(k, in, ptrs);
  run_typed<float>(k, in, ptrs);
}

}  // namespace rlx::cpu
