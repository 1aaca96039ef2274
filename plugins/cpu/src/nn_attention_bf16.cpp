// bf16 attention (nn_attention.h) on AMX tiles or AVX512-BF16, whichever gemm_bf16.h's unit is.
// Per (batch, kv head), K and V are packed once into the layout of TDPBF16PS's B operand, which
// is also what VDPBF16PS reads a row at a time (pairs of k interleaved); then each task takes
// kRows query rows and walks the keys in blocks of kBlock:
//   S = Q K^T      16 rows x 16 keys a tile (AMX) or 8 rows x 32 keys of accumulators
//                  (AVX512-BF16), D / 2 pairs each, stored as f32 rows;
//   softmax        per row in f32: scale, masks, running max and sum (online softmax), the
//                  weights rounded to bf16 into P and summed as rounded;
//   O += P V       16 columns of V a tile or register, 32 keys a step, added to O in f32.
// Both units multiply pairs exactly and sum in f32 (in different orders), with subnormals as
// zero. At MiniLM's shapes (S = 128, D = 32) a block's two products are 128 tile instructions
// of 16 cycles, where the f32 kernel spends ~32k cycles of FMAs; the softmax's exp is what is
// left.
#include <immintrin.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "amx_tiles.h"
#include "bf16_avx512.h"
#include "gemm_bf16.h"
#include "nn_attention.h"
#include "rlx/core/error.h"
#include "rlx/core/half.h"
#include "row_groups.h"

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports the deliberately undefined vectors inside its own AVX-512 intrinsics
// (_mm512_undefined_epi32) as uninitialised once they are inlined here.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace rlx::cpu {

namespace {

#include "vexp_avx512.inc"

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int64_t kRows = 32;    // query rows of a task: two A tiles
constexpr int64_t kBlock = 128;  // keys per block of the online softmax (a multiple of 32)
constexpr int64_t kTile = 512;   // bf16 elements of a B tile: 16 rows of 64 bytes

float widen(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

// Lanes [from, to) of a 16-lane mask (both clamped to [0, 16]).
__mmask16 lanes(int64_t from, int64_t to) {
  auto upto = [](int64_t k) {
    k = std::clamp<int64_t>(k, 0, 16);
    return k >= 16 ? 0xFFFFu : (1u << k) - 1;
  };
  return static_cast<__mmask16>(upto(to) & ~upto(from));
}

// K [Sk, D] as B tiles of S = Q K^T: for each chunk of 16 keys and step of 32 dims, row r holds
// dims 2r and 2r + 1 of each of the 16 keys (the pairs TDPBF16PS multiplies): a transpose of
// 32-bit pairs, one gather a row. Past Sk: zeros.
void pack_k(const uint16_t* k, int64_t ldk, int64_t sk, int64_t d, uint16_t* out) {
  const int64_t steps = d / 32;
  const auto* pairs = reinterpret_cast<const int*>(k);  // ldk / 2 pairs a key (ldk is even)
  const __m512i keys =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(static_cast<int>(ldk / 2)));
  for (int64_t c = 0; c < (sk + 15) / 16; ++c) {
    const __mmask16 live = lanes(0, sk - c * 16);
    const int* base = pairs + c * 16 * (ldk / 2);
    for (int64_t st = 0; st < steps; ++st) {
      uint16_t* t = out + (c * steps + st) * kTile;
      for (int64_t r = 0; r < 16; ++r) {
        const __m512i at = _mm512_add_epi32(keys, _mm512_set1_epi32(static_cast<int>(st * 16 + r)));
        _mm512_storeu_si512(t + r * 32,
                            _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, at, base, 4));
      }
    }
  }
}

// V [Sk, Dv] as B tiles of O = P V: for each chunk of 32 keys and group of 16 columns, row r
// holds keys 2r and 2r + 1 of each column, interleaved. Past Sk: zeros (their weights are zero).
void pack_v(const uint16_t* v, int64_t ldv, int64_t sk, int64_t dv, uint16_t* out) {
  const int64_t groups = dv / 16;
  alignas(64) static constexpr uint16_t kInterleave[32] = {
      0, 32, 1, 33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39,
      8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  const __m512i idx = _mm512_load_si512(kInterleave);
  auto row = [&](int64_t key, int64_t g) {
    return key < sk ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + key * ldv + g * 16))
                    : _mm256_setzero_si256();
  };
  for (int64_t c = 0; c < (sk + 31) / 32; ++c)
    for (int64_t g = 0; g < groups; ++g) {
      uint16_t* t = out + (c * groups + g) * kTile;
      for (int64_t r = 0; r < 16; ++r) {
        const int64_t key = c * 32 + 2 * r;
        _mm512_storeu_si512(t + r * 32,
                            _mm512_permutex2var_epi16(_mm512_castsi256_si512(row(key, g)), idx,
                                                      _mm512_castsi256_si512(row(key + 1, g))));
      }
    }
}

// The softmax of one query row over a block of n keys, in two passes over the row instead of a
// call per step (scale and mask, maximum, exponential, rounding): at MiniLM's 128 keys a row is
// eight vectors, and the calls and their setup cost more than the arithmetic.
//
// Pass one: sc[0, n) times scale, those outside [from, visible) or whose keep flag is 0 set to
// -inf, stored back; returns their maximum (NaN scores are left out of it and reported through
// *saw_nan).
float scale_mask_max(float* sc, int64_t n, int64_t from, int64_t visible, float scale,
                     const uint8_t* keep, bool* saw_nan) {
  const __m512 f = _mm512_set1_ps(scale), ninf = _mm512_set1_ps(kNegInf);
  __m512 mx = ninf;
  __mmask16 nan = 0;
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = lanes(0, n - j);
    __mmask16 live = lanes(from - j, visible - j);
    if (keep) {
      const __m128i k = _mm_maskz_loadu_epi8(m, keep + j);
      live &= _mm_test_epi8_mask(k, k);
    }
    const __m512 v =
        _mm512_mask_mov_ps(ninf, live, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, sc + j), f));
    _mm512_mask_storeu_ps(sc + j, m, v);
    nan |= _mm512_mask_cmp_ps_mask(m, v, v, _CMP_UNORD_Q);
    mx = _mm512_mask_max_ps(mx, m, v, mx);  // a NaN v yields mx: reported, not kept
  }
  if (nan) *saw_nan = true;
  return _mm512_reduce_max_ps(mx);
}

// Pass two: the weights e^(s - m) (-inf gives exactly 0) rounded to bf16 (nearest even) into
// p[0, n); returns the sum of the rounded values, which is what P V sums.
float exp_round_sum(const float* sc, int64_t n, float m, uint16_t* p) {
  const __m512 shift = _mm512_set1_ps(m), ninf = _mm512_set1_ps(kNegInf);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 t = lanes(0, n - j);
    const __m512 v = _mm512_maskz_loadu_ps(t, sc + j);
    const __mmask16 live = _mm512_mask_cmp_ps_mask(t, v, ninf, _CMP_NEQ_UQ);
    const __m256i r = bf16_from_f32(_mm512_maskz_mov_ps(live, vexp(_mm512_sub_ps(v, shift))));
    sum = _mm512_add_ps(sum, bf16_widen(r));
    _mm256_mask_storeu_epi16(p + j, t, r);
  }
  return _mm512_reduce_add_ps(sum);
}

// A row of O divided by l, rounded to bf16.
void store_row(const float* o, int64_t n, float l, uint16_t* dst) {
  const __m512 denom = _mm512_set1_ps(l);
  for (int64_t j = 0; j < n; j += 16)  // n is a multiple of 16
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + j),
                        bf16_from_f32(_mm512_div_ps(_mm512_loadu_ps(o + j), denom)));
}

// AVX512-BF16's share of a block, both products in one form: R rows (R <= 8) of bf16 pairs in a
// (row stride lda) against N (1 or 2) 16-column B operands laid out as packed tiles (b, the n-th
// at b + n * b_n), over `outer` steps of 16 pairs (a advances 32 elements a step, b by b_step):
// one VDPBF16PS adds a row's pair (broadcast) times the pair's tile row to that row's 16 sums.
// The sums are stored to out (row stride ldo), or added to it. R and N are compile-time so the
// accumulators stay in registers.
//   S = Q K^T:  a = q rows, outer = D / 32 steps, b = 16-key chunks;
//   O += P V:   a = weight rows, outer = 32-key chunks, b = 16-column groups of V.
template <int R, int N, bool Add>
void dot_rows(const uint16_t* a, int64_t lda, const uint16_t* b, int64_t b_n, int64_t b_step,
              int64_t outer, float* out, int64_t ldo) {
  __m512 acc[R][N];
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 2
    for (int n = 0; n < N; ++n) acc[i][n] = _mm512_setzero_ps();
  for (int64_t o = 0; o < outer; ++o)
    for (int r = 0; r < 16; ++r) {
      __m512bh w[N];
#pragma GCC unroll 2
      for (int n = 0; n < N; ++n)
        w[n] = (__m512bh)_mm512_loadu_si512(b + n * b_n + o * b_step + r * 32);
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) {
        int32_t pair;
        std::memcpy(&pair, a + i * lda + o * 32 + 2 * r, sizeof(pair));
        const __m512bh x = (__m512bh)_mm512_set1_epi32(pair);
#pragma GCC unroll 2
        for (int n = 0; n < N; ++n) acc[i][n] = _mm512_dpbf16_ps(acc[i][n], x, w[n]);
      }
    }
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 2
    for (int n = 0; n < N; ++n) {
      float* dst = out + i * ldo + n * 16;
      _mm512_storeu_ps(dst, Add ? _mm512_add_ps(_mm512_loadu_ps(dst), acc[i][n]) : acc[i][n]);
    }
}

// All `count` B operands of a product, two at a time (operand n at b + n * b_n, its sums at
// out + 16 n).
template <int R, bool Add>
void dot_all(const uint16_t* a, int64_t lda, const uint16_t* b, int64_t b_n, int64_t b_step,
             int64_t outer, int64_t count, float* out, int64_t ldo) {
  int64_t n = 0;
  for (; n + 2 <= count; n += 2)
    dot_rows<R, 2, Add>(a, lda, b + n * b_n, b_n, b_step, outer, out + n * 16, ldo);
  if (n < count) dot_rows<R, 1, Add>(a, lda, b + n * b_n, b_n, b_step, outer, out + n * 16, ldo);
}

struct Packed {
  const uint16_t* k = nullptr;  // per group: chunks16 * steps tiles
  const uint16_t* v = nullptr;  // per group: chunks32 * groups tiles
  int64_t k_per_group = 0, v_per_group = 0;
};

// Query rows [r0, r1) (at most kRows) of kv head `kvh` of batch `b`, on unit U.
template <Bf16Unit U>
void attend_rows(const AttentionShape& sh, const uint16_t* q, const uint16_t* v, const Packed& pk,
                 uint16_t* out, int64_t b, int64_t kvh, int64_t r0, int64_t r1) {
  const int64_t group = sh.heads / sh.kv_heads, D = sh.head_dim, Dv = sh.v_dim;
  const int64_t Sq = sh.q_len, Sk = sh.kv_len, steps = D / 32, vgroups = Dv / 16;
  const int64_t rows = r1 - r0, g = b * sh.kv_heads + kvh;
  const uint16_t* kp = pk.k + g * pk.k_per_group;
  const uint16_t* vp = pk.v + g * pk.v_per_group;
  // Row r of this kv head: query position r / group of head kvh * group + r % group.
  auto at = [&](const AttentionShape::Strides& st, int64_t r) {
    return st.at(b, kvh * group + r % group, r / group);
  };
  const uint8_t* keep = sh.keep ? sh.keep + b * Sk : nullptr;

  alignas(64) uint16_t qt[kRows * 128];  // D <= 128 (attention_bf16_unit)
  alignas(64) float s[kRows * kBlock];
  alignas(64) uint16_t p[kRows * kBlock];
  alignas(64) float t[kRows * 16];
  // O's rows on the stack for value heads up to 128 wide (every model here), else on the heap.
  alignas(64) float o_stack[kRows * 128];
  std::vector<float> o_heap;
  float* o = o_stack;
  if (Dv <= 128) {
    std::fill(o_stack, o_stack + kRows * Dv, 0.0f);
  } else {
    o_heap.assign(static_cast<size_t>(kRows * Dv), 0.0f);
    o = o_heap.data();
  }
  float m[kRows], l[kRows];
  bool nan[kRows];
  int64_t limit[kRows];
  int64_t hi = 0;
  for (int64_t i = 0; i < kRows; ++i) {
    m[i] = kNegInf, l[i] = 0, nan[i] = false;
    limit[i] = i < rows ? (sh.causal ? std::min(Sk, (r0 + i) / group + Sk - Sq + 1) : Sk) : 0;
    hi = std::max(hi, limit[i]);
    if (i < rows)
      std::memcpy(qt + i * D, q + at(sh.q_st, r0 + i), static_cast<size_t>(D) * 2);
    else
      std::memset(qt + i * D, 0, static_cast<size_t>(D) * 2);
  }
  int64_t lo = 0;
  if (keep) {
    while (lo < hi && !keep[lo]) ++lo;
    int64_t last = hi;
    while (last > lo && !keep[last - 1]) --last;
    if (std::find(keep + lo, keep + last, 0) == keep + last) {
      hi = std::min(hi, last);  // no holes: the range is the mask
      for (int64_t i = 0; i < kRows; ++i) limit[i] = std::min(limit[i], last);
      keep = nullptr;
    }
  }
  if constexpr (U == Bf16Unit::kAmx) amx::configure(16, 16);
  for (int64_t j0 = lo / 32 * 32; j0 < hi; j0 += kBlock) {
    const int64_t n = std::min(kBlock, hi - j0);
    const int64_t n16 = (n + 15) / 16 * 16, n32 = (n + 31) / 32 * 32;
    if constexpr (U == Bf16Unit::kAvx512Bf16) {
      const uint16_t* k0 = kp + (j0 / 16) * steps * kTile;
      by_eight(rows, [&](auto r, int64_t i) {
        dot_all<decltype(r)::value, false>(qt + i * D, D, k0, steps * kTile, kTile, steps, n16 / 16,
                                           s + i * kBlock, kBlock);
      });
    } else {
      // S: 32 rows x 32 keys a step, the four accumulators of a 2 x 2 block (each tile of Q and
      // of K read once per step for two products), so four chains of TDPBF16PS overlap.
      for (int64_t c = 0; c < n16 / 16; c += 2) {
        const bool two = c + 1 < n16 / 16;
        const uint16_t* k0 = kp + ((j0 / 16 + c) * steps) * kTile;
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        for (int64_t st = 0; st < steps; ++st) {
          _tile_loadd(4, qt + st * 32, D * 2);
          _tile_loadd(5, qt + 16 * D + st * 32, D * 2);
          _tile_loadd(6, k0 + st * kTile, 64);
          _tile_dpbf16ps(0, 4, 6);
          _tile_dpbf16ps(2, 5, 6);
          if (two) {
            _tile_loadd(7, k0 + (steps + st) * kTile, 64);
            _tile_dpbf16ps(1, 4, 7);
            _tile_dpbf16ps(3, 5, 7);
          }
        }
        _tile_stored(0, s + c * 16, kBlock * 4);
        _tile_stored(2, s + 16 * kBlock + c * 16, kBlock * 4);
        if (two) {
          _tile_stored(1, s + c * 16 + 16, kBlock * 4);
          _tile_stored(3, s + 16 * kBlock + c * 16 + 16, kBlock * 4);
        }
      }
    }
    for (int64_t i = 0; i < kRows; ++i) {
      float* sc = s + i * kBlock;
      uint16_t* pr = p + i * kBlock;
      const int64_t visible = std::clamp<int64_t>(limit[i] - j0, 0, n);
      std::memset(pr, 0, static_cast<size_t>(n32) * 2);
      if (i >= rows || nan[i] || visible == 0) continue;
      bool saw_nan = false;
      const float block_max =
          scale_mask_max(sc, n, lo - j0, visible, sh.scale, keep ? keep + j0 : nullptr, &saw_nan);
      if (saw_nan) {
        nan[i] = true;
        continue;
      }
      if (block_max == kNegInf) continue;  // every key of the block masked: nothing to add
      const float m_new = std::max(m[i], block_max);
      const float sum = exp_round_sum(sc, n, m_new, pr);
      if (m[i] == kNegInf) {  // the row's first visible block: O and l are still 0
        l[i] = sum;
      } else {
        const float alpha = std::exp(m[i] - m_new);
        l[i] = alpha * l[i] + sum;
        float* orow = o + i * Dv;
        for (int64_t d = 0; d < Dv; ++d) orow[d] *= alpha;
      }
      m[i] = m_new;
    }
    if constexpr (U == Bf16Unit::kAvx512Bf16) {
      const uint16_t* v0 = vp + (j0 / 32) * vgroups * kTile;
      by_eight(rows, [&](auto r, int64_t i) {
        dot_all<decltype(r)::value, true>(p + i * kBlock, kBlock, v0, kTile, vgroups * kTile,
                                          n32 / 32, vgroups, o + i * Dv, Dv);
      });
      continue;
    }
    // O += P V: 32 rows x 32 columns of V a step of 32 keys, again a 2 x 2 block.
    for (int64_t vg = 0; vg < vgroups; vg += 2) {
      const bool two = vg + 1 < vgroups;
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (int64_t c = 0; c < n32 / 32; ++c) {
        const uint16_t* v0 = vp + ((j0 / 32 + c) * vgroups + vg) * kTile;
        _tile_loadd(4, p + c * 32, kBlock * 2);
        _tile_loadd(5, p + 16 * kBlock + c * 32, kBlock * 2);
        _tile_loadd(6, v0, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(2, 5, 6);
        if (two) {
          _tile_loadd(7, v0 + kTile, 64);
          _tile_dpbf16ps(1, 4, 7);
          _tile_dpbf16ps(3, 5, 7);
        }
      }
      // Tile (row half, column half) into rows [16 half, ...) of O.
      auto add = [&](int64_t half, int64_t col) {
        for (int64_t i = 16 * half; i < std::min<int64_t>(rows, 16 * half + 16); ++i) {
          float* orow = o + i * Dv + (vg + col) * 16;
          _mm512_storeu_ps(
              orow, _mm512_add_ps(_mm512_loadu_ps(orow), _mm512_load_ps(t + (i - 16 * half) * 16)));
        }
      };
      _tile_stored(0, t, 64);
      add(0, 0);
      if (rows > 16) {
        _tile_stored(2, t, 64);
        add(1, 0);
      }
      if (two) {
        _tile_stored(1, t, 64);
        add(0, 1);
        if (rows > 16) {
          _tile_stored(3, t, 64);
          add(1, 1);
        }
      }
    }
  }
  if constexpr (U == Bf16Unit::kAmx) _tile_release();
  const uint16_t* vb = v + sh.v_st.at(b, kvh, 0);
  for (int64_t i = 0; i < rows; ++i) {
    uint16_t* dst = out + at(sh.o_st, r0 + i);
    const float* orow = o + i * Dv;
    if (nan[i]) {
      for (int64_t d = 0; d < Dv; ++d)
        dst[d] = f32_to_bf16(std::numeric_limits<float>::quiet_NaN());
    } else if (l[i] == 0) {
      // No visible key: uniform weights over all keys, the mean of V (attention()'s rule).
      for (int64_t d = 0; d < Dv; ++d) {
        float sum = 0;
        for (int64_t j = 0; j < Sk; ++j) sum += widen(vb[j * sh.v_st.s + d]);
        dst[d] = f32_to_bf16(Sk ? sum / static_cast<float>(Sk) : 0.0f);
      }
    } else {
      store_row(orow, Dv, l[i], dst);
    }
  }
}

thread_local ThreadScratch<uint16_t> tls_packed_kv;

}  // namespace

Bf16Unit attention_bf16_unit(KvElem q, KvElem k, KvElem v, int64_t head_dim, int64_t v_dim) {
  const bool fits = q == KvElem::kBF16 && k == KvElem::kBF16 && v == KvElem::kBF16 &&
                    head_dim > 0 && head_dim % 32 == 0 && head_dim <= 128 && v_dim > 0 &&
                    v_dim % 16 == 0;
  return fits ? bf16_unit() : Bf16Unit::kNone;
}

void attention_bf16(Bf16Unit unit, const AttentionShape& given, const void* q, const void* k,
                    const void* v, void* out) {
  if (unit == Bf16Unit::kNone || (unit == Bf16Unit::kAmx && !amx_bf16_enabled()) ||
      (unit == Bf16Unit::kAvx512Bf16 && !avx512_bf16_enabled()))
    throw_internal_error("attention_bf16: the bf16 unit asked for is not available on this CPU");
  const AttentionShape sh = with_layout(given);
  const int64_t group = sh.heads / sh.kv_heads;
  const int64_t rows = group * sh.q_len, groups = sh.batch * sh.kv_heads;
  if (rows == 0 || groups == 0) return;
  Packed pk;
  pk.k_per_group = (sh.kv_len + 15) / 16 * (sh.head_dim / 32) * kTile;
  pk.v_per_group = (sh.kv_len + 31) / 32 * (sh.v_dim / 16) * kTile;
  std::vector<uint16_t> own;
  ScratchRelease release;
  uint16_t* buf = borrow_scratch(
      tls_packed_kv, own, static_cast<size_t>(groups * (pk.k_per_group + pk.v_per_group)), release);
  pk.k = buf;
  pk.v = buf + groups * pk.k_per_group;
  const auto* k16 = static_cast<const uint16_t*>(k);
  const auto* v16 = static_cast<const uint16_t*>(v);
  tbb::parallel_for(int64_t{0}, groups, [&](int64_t g) {
    const int64_t b = g / sh.kv_heads, kvh = g % sh.kv_heads;
    pack_k(k16 + sh.k_st.at(b, kvh, 0), sh.k_st.s, sh.kv_len, sh.head_dim,
           buf + g * pk.k_per_group);
    pack_v(v16 + sh.v_st.at(b, kvh, 0), sh.v_st.s, sh.kv_len, sh.v_dim,
           buf + groups * pk.k_per_group + g * pk.v_per_group);
  });
  const int64_t tiles = (rows + kRows - 1) / kRows;
  tbb::parallel_for(
      tbb::blocked_range<int64_t>(0, groups * tiles, 1),
      [&](const tbb::blocked_range<int64_t>& range) {
        for (int64_t t = range.begin(); t < range.end(); ++t) {
          const int64_t g = t / tiles, r0 = (t % tiles) * kRows;
          const auto attend = unit == Bf16Unit::kAmx ? attend_rows<Bf16Unit::kAmx>
                                                     : attend_rows<Bf16Unit::kAvx512Bf16>;
          attend(sh, static_cast<const uint16_t*>(q), v16, pk, static_cast<uint16_t*>(out),
                 g / sh.kv_heads, g % sh.kv_heads, r0, std::min(rows, r0 + kRows));
        }
      });
}

}  // namespace rlx::cpu
