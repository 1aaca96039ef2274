#include "nn_attention.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "half_inline.h"
#include "rlx/core/half.h"

namespace rlx::cpu {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int64_t kKeyBlock = 128;  // keys per block: S row and V block stay in L1/L2
constexpr int64_t kMaxRows = 32;    // query rows per task
constexpr int64_t kPackRows = 8;    // tiles of this many rows score from K transposed

// The query rows of one kv head: every (query position, head of its group), position-major so
// that rows of a tile see nearly the same causal key range.
struct RowMap {
  int64_t group;  // query heads per kv head
  int64_t qpos(int64_t r) const { return r / group; }
  int64_t head_in_group(int64_t r) const { return r % group; }
};

// Rows per task: as many as kMaxRows (K and V blocks are reused across a tile's rows), fewer
// when that leaves too few tasks to keep every thread busy (batch 1, a dozen heads).
int64_t rows_per_task(int64_t rows, int64_t groups) {
  const int64_t want = 4 * static_cast<int64_t>(tbb::this_task_arena::max_concurrency());
  int64_t br = std::min(rows, kMaxRows);
  while (br > 4 && groups * ((rows + br - 1) / br) < want) br = (br + 1) / 2;
  return std::max<int64_t>(br, 1);
}

// The visible key range [lo, hi) of a padding mask row: keys outside it are all masked.
void kept_range(const uint8_t* keep, int64_t n, int64_t* lo, int64_t* hi) {
  *lo = 0;
  *hi = n;
  if (!keep) return;
  while (*lo < n && !keep[*lo]) ++*lo;
  while (*hi > *lo && !keep[*hi - 1]) --*hi;
}

// A tile's running state. One per worker thread, reset per tile: a run allocates nothing once
// every thread has seen the largest tile.
struct TileState {
  std::vector<float> s, o, m, l;
  std::vector<float> q, row;  // a 16-bit q's rows widened; a row of a 16-bit result before rounding
  std::vector<uint8_t> nan;
  std::vector<int64_t> limit;  // keys at or past limit[i] are invisible to row i of the tile
  void reset(int64_t rows, int64_t dv) {
    s.resize(kNnRows * kKeyBlock);
    o.assign(rows * dv, 0.0f);
    m.assign(rows, kNegInf);
    l.assign(rows, 0.0f);
    nan.assign(rows, 0);
    limit.resize(rows);
  }
};
thread_local TileState tls_tile;
thread_local ThreadScratch<float> tls_packed_k, tls_wide_v;

// K transposed per (batch, kv head), [D][ld], shared by every tile of that kv head. ld leaves a
// spare 16 columns: the scoring loop reads whole vectors past a block that starts unaligned.
struct PackedK {
  const float* data = nullptr;
  int64_t ld = 0;
  const float* of(int64_t group, int64_t d) const { return data + group * d * ld; }
};

// A row of n 16-bit values at element `at` of src widened to f32, and back, rounding to nearest
// even (rlx/core/half.h's rules), in loops the compiler vectorises (half_inline.h).
void widen_row(KvElem e, const void* src, int64_t at, int64_t n, float* dst) {
  const auto* h = static_cast<const uint16_t*>(src) + at;
  if (e == KvElem::kBF16)
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16_widen_inline(h[i]);
  else
    for (int64_t i = 0; i < n; ++i) dst[i] = f16_widen_inline(h[i]);
}

void narrow_row(const float* src, int64_t n, KvElem e, void* dst, int64_t at) {
  auto* h = static_cast<uint16_t*>(dst) + at;
  if (e == KvElem::kBF16)
    for (int64_t i = 0; i < n; ++i) h[i] = bf16_round_inline(src[i]);
  else
    for (int64_t i = 0; i < n; ++i) h[i] = f16_round_inline(src[i]);
}

void attend_tile(const AttentionShape& sh, const void* q_any, const void* k, const void* v,
                 const PackedK& packed_k, void* out_any, const NnSimd& simd, int64_t b, int64_t kvh,
                 int64_t r0, int64_t r1) {
  const RowMap map{sh.heads / sh.kv_heads};
  const int64_t D = sh.head_dim, Dv = sh.v_dim, Sq = sh.q_len, Sk = sh.kv_len;
  const NnKvLoops &k_loops = simd.kv[static_cast<int>(sh.k_elem)],
                  &v_loops = simd.kv[static_cast<int>(sh.v_elem)];
  const int64_t k_size = kv_elem_size(sh.k_elem), v_size = kv_elem_size(sh.v_elem);
  // Row j of this kv head's K or V, whatever its element type.
  const auto* kb = static_cast<const char*>(k) + sh.k_st.at(b, kvh, 0) * k_size;
  const auto* vb = static_cast<const char*>(v) + sh.v_st.at(b, kvh, 0) * v_size;
  auto k_rows = [&](int64_t j) { return kb + j * sh.k_st.s * k_size; };
  auto v_rows = [&](int64_t j) { return vb + j * sh.v_st.s * v_size; };
  const uint8_t* keep = sh.keep ? sh.keep + b * Sk : nullptr;
  auto head = [&](int64_t r) { return kvh * map.group + map.head_in_group(r); };
  // Element offsets of row r of q and of the result.
  auto q_at = [&](int64_t r) { return sh.q_st.at(b, head(r), map.qpos(r)); };
  auto out_at = [&](int64_t r) { return sh.o_st.at(b, head(r), map.qpos(r)); };
  const bool wide = sh.q_elem == KvElem::kF32;

  int64_t lo, hi;
  kept_range(keep, Sk, &lo, &hi);
  if (keep && std::find(keep + lo, keep + hi, 0) == keep + hi) keep = nullptr;  // no holes
  const int64_t rows = r1 - r0;
  TileState& st = tls_tile;
  st.reset(rows, Dv);
  if (!wide) {
    st.q.resize(rows * D);
    st.row.resize(Dv);
    for (int64_t i = 0; i < rows; ++i) widen_row(sh.q_elem, q_any, q_at(r0 + i), D, &st.q[i * D]);
  }
  auto q_row = [&](int64_t r) {
    return wide ? static_cast<const float*>(q_any) + q_at(r) : st.q.data() + (r - r0) * D;
  };
  std::vector<int64_t>& limit = st.limit;
  int64_t tile_hi = lo;
  for (int64_t i = 0; i < rows; ++i) {
    limit[i] = sh.causal ? std::min(hi, map.qpos(r0 + i) + Sk - Sq + 1) : hi;
    tile_hi = std::max(tile_hi, limit[i]);
  }
  const float* kt = packed_k.data ? packed_k.of(b * sh.kv_heads + kvh, D) : nullptr;
  float* s = st.s.data();
  auto keys_of = [&](int64_t i, int64_t j0) { return std::min(j0 + kKeyBlock, limit[i]) - j0; };
  for (int64_t j0 = lo; j0 < tile_hi; j0 += kKeyBlock) {
    // Rows go in groups of up to kNnRows that see the same keys of this block, so that one pass
    // over K (transposed) and over V serves the whole group.
    for (int64_t i = 0; i < rows;) {
      const int64_t n = keys_of(i, j0);
      if (n <= 0 || st.nan[i]) {
        ++i;
        continue;
      }
      int64_t count = 1;
      while (kt && count < kNnRows && i + count < rows && !st.nan[i + count] &&
             keys_of(i + count, j0) == n)
        ++count;
      const float* q_rows[kNnRows];
      for (int64_t c = 0; c < count; ++c) q_rows[c] = q_row(r0 + i + c);
      if (kt)
        simd.qk_scores_kt(q_rows, count, kt + j0, packed_k.ld, n, D, sh.scale, s, kKeyBlock);
      else
        k_loops.qk_scores(q_rows[0], D, 1, k_rows(j0), sh.k_st.s, n, D, sh.scale, s, kKeyBlock);
      // Online softmax per row; a row that turned NaN or sees only masked keys here adds nothing.
      float* o_rows[kNnRows];
      const float* p_rows[kNnRows];
      float alpha[kNnRows];
      int64_t live = 0;
      for (int64_t c = 0; c < count; ++c) {
        const int64_t row = i + c;
        float* sc = s + c * kKeyBlock;
        if (keep)
          for (int64_t j = 0; j < n; ++j)
            if (!keep[j0 + j]) sc[j] = kNegInf;
        bool saw_nan = false;
        const float block_max = simd.row_max(sc, n, &saw_nan);
        if (saw_nan) {
          st.nan[row] = 1;  // the decomposition's max, exp and sum all turn NaN for this row
          continue;
        }
        if (block_max == kNegInf) continue;  // every key of the block masked: nothing to add
        const float m_new = std::max(st.m[row], block_max);
        alpha[live] = std::exp(st.m[row] - m_new);  // 0 on the row's first visible block
        st.l[row] = alpha[live] * st.l[row] + simd.exp_shifted(sc, n, m_new, sc);
        st.m[row] = m_new;
        o_rows[live] = st.o.data() + row * Dv;
        p_rows[live++] = sc;
      }
      if (live) v_loops.pv_accumulate(o_rows, live, Dv, alpha, p_rows, n, v_rows(j0), sh.v_st.s);
      i += count;
    }
  }
  for (int64_t i = 0; i < rows; ++i) {
    float* dst = wide ? static_cast<float*>(out_any) + out_at(r0 + i) : st.row.data();
    if (st.nan[i]) {
      std::fill(dst, dst + Dv, std::numeric_limits<float>::quiet_NaN());
    } else if (st.l[i] == 0) {
      // No visible key (an all-zero padding mask, or a query before the first key): every score
      // is the same lowest value in the decomposition (Hugging Face's semantics), so the weights
      // are uniform over all keys and the row is the mean of V.
      std::fill(dst, dst + Dv, 0.0f);
      for (int64_t j = 0; j < Sk; ++j)
        for (int64_t d = 0; d < Dv; ++d) dst[d] += kv_load(sh.v_elem, vb, j * sh.v_st.s + d);
      if (Sk)
        for (int64_t d = 0; d < Dv; ++d) dst[d] /= static_cast<float>(Sk);
    } else {
      simd.divide(st.o.data() + i * Dv, Dv, st.l[i], dst);
    }
    if (!wide) narrow_row(dst, Dv, sh.q_elem, out_any, out_at(r0 + i));
  }
}

}  // namespace

AttentionShape with_layout(AttentionShape s) {
  auto fill = [&](AttentionShape::Strides& st, int64_t heads, int64_t len, int64_t width) {
    if (st.b || st.h || st.s) return;
    st = {heads * len * width, len * width, width};
  };
  fill(s.q_st, s.heads, s.q_len, s.head_dim);
  fill(s.k_st, s.kv_heads, s.kv_len, s.head_dim);
  fill(s.v_st, s.kv_heads, s.kv_len, s.v_dim);
  fill(s.o_st, s.heads, s.q_len, s.v_dim);
  return s;
}

void attention(const AttentionShape& given, const void* q, const void* k, const void* v, void* out,
               const NnSimd& simd) {
  const AttentionShape sh = with_layout(given);
  const int64_t group = sh.heads / sh.kv_heads;
  const int64_t rows = group * sh.q_len, groups = sh.batch * sh.kv_heads;
  if (rows == 0 || groups == 0 || sh.v_dim == 0) return;
  const int64_t br = rows_per_task(rows, groups);
  const int64_t tiles = (rows + br - 1) / br;
  PackedK packed_k;
  std::vector<float> own, own_v;
  ScratchRelease release, release_v;
  AttentionShape shape = sh;
  const void* vs = v;
  if (br >= kPackRows && sh.v_elem != KvElem::kF32) {
    // A 16-bit V widened once per call: pv_accumulate would widen each row of V again for every
    // group of kNnRows query rows (32 times at 128 queries). At MiniLM's shapes (b8 s128) that
    // measured within noise of the widening as read; it bounds the work for longer sequences.
    const int64_t per_group = sh.kv_len * sh.v_dim;
    float* wide =
        borrow_scratch(tls_wide_v, own_v, static_cast<size_t>(groups * per_group), release_v);
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, groups, 1),
                      [&](const tbb::blocked_range<int64_t>& r) {
                        for (int64_t g = r.begin(); g < r.end(); ++g)
                          for (int64_t j = 0; j < sh.kv_len; ++j)
                            widen_row(sh.v_elem, v, sh.v_st.at(g / sh.kv_heads, g % sh.kv_heads, j),
                                      sh.v_dim, wide + g * per_group + j * sh.v_dim);
                      });
    shape.v_elem = KvElem::kF32;
    shape.v_st = {sh.kv_heads * per_group, per_group, sh.v_dim};
    vs = wide;
  }
  if (br >= kPackRows) {
    packed_k.ld = (sh.kv_len + 15) / 16 * 16 + 16;
    // Grown, never shrunk or cleared: the columns past a kv head's keys are read into lanes that
    // are never stored, so what an earlier call left there does not matter.
    float* packed = borrow_scratch(
        tls_packed_k, own, static_cast<size_t>(groups * sh.head_dim * packed_k.ld), release);
    packed_k.data = packed;
    tbb::parallel_for(
        tbb::blocked_range<int64_t>(0, groups, 1), [&](const tbb::blocked_range<int64_t>& r) {
          for (int64_t g = r.begin(); g < r.end(); ++g)
            simd.kv[static_cast<int>(sh.k_elem)].pack_kt(
                static_cast<const char*>(k) +
                    sh.k_st.at(g / sh.kv_heads, g % sh.kv_heads, 0) * kv_elem_size(sh.k_elem),
                sh.k_st.s, sh.kv_len, sh.head_dim, packed + g * sh.head_dim * packed_k.ld,
                packed_k.ld);
        });
  }
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, groups * tiles, 1),
                    [&](const tbb::blocked_range<int64_t>& range) {
                      for (int64_t t = range.begin(); t < range.end(); ++t) {
                        const int64_t g = t / tiles, r0 = (t % tiles) * br;
                        attend_tile(shape, q, k, vs, packed_k, out, simd, g / sh.kv_heads,
                                    g % sh.kv_heads, r0, std::min(rows, r0 + br));
                      }
                    });
}

}  // namespace rlx::cpu
