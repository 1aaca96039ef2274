// The cpu's native transformer kernels (plugins/cpu/src/nn_*.cpp): each instruction set the
// host has, directly, against naive float64 references written here; then through the plugin,
// against the same references and against the op's MIR decomposition run on the same target
// with the native claims turned off.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <type_traits>

#include "nn_attention.h"
#include "nn_norms.h"
#include "nn_simd.h"
#include "rlx/core/dispatch.h"
#include "rlx/core/half.h"
#include "rlx/core/ir_text.h"
#include "test_support.h"

namespace rlx {
namespace {

using cpu::bf16_unit_name;
using cpu::Bf16Unit;
using cpu::NnSimd;

std::vector<float> random_values(size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// Both NaN, or within tol (absolute, scaled up for large values).
void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i) {
    if (std::isnan(want[i])) {
      if (!std::isnan(got[i]))
        ++bad, ADD_FAILURE() << what << " at " << i << ": want NaN, got " << got[i];
      continue;
    }
    if (!(std::fabs(got[i] - want[i]) <= tol * std::max(1.0, std::fabs(want[i]))))
      ++bad, ADD_FAILURE() << what << " at " << i << ": want " << want[i] << ", got " << got[i];
  }
}

std::vector<double> widen(const std::vector<float>& v) {
  return {v.begin(), v.end()};
}

std::vector<const NnSimd*> instruction_sets() {
  std::vector<const NnSimd*> sets{&cpu::nn_simd_portable()};
  if (cpu::nn_simd_avx512()) sets.push_back(cpu::nn_simd_avx512());
  return sets;
}

// ---- attention ------------------------------------------------------------------------------

struct AttnCase {
  std::string name;
  int64_t B, H, Hkv, Sq, Sk, D, Dv;
  bool causal = false;
  std::vector<uint8_t> keep;  // [B, Sk] or empty
  double scale = 0;           // 0: 1 / sqrt(D)
};

// softmax(Q K^T * scale + mask) V in float64, the mask adding the lowest value as Hugging Face
// does: a row with no visible key has equal scores, so it is the mean of V over all keys.
std::vector<double> naive_attention(const AttnCase& c, const std::vector<float>& q,
                                    const std::vector<float>& k, const std::vector<float>& v) {
  const double scale = c.scale ? c.scale : 1.0 / std::sqrt(static_cast<double>(c.D));
  std::vector<double> out;
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.H; ++h) {
      const int64_t g = h / (c.H / c.Hkv);
      for (int64_t i = 0; i < c.Sq; ++i) {
        std::vector<double> s(c.Sk);
        double mx = -INFINITY;
        for (int64_t j = 0; j < c.Sk; ++j) {
          double d = 0;
          for (int64_t t = 0; t < c.D; ++t)
            d += double(q[((b * c.H + h) * c.Sq + i) * c.D + t]) *
                 k[((b * c.Hkv + g) * c.Sk + j) * c.D + t];
          const bool masked =
              (c.causal && j > i + (c.Sk - c.Sq)) || (!c.keep.empty() && !c.keep[b * c.Sk + j]);
          s[j] = masked ? -INFINITY : d * scale;
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (auto& x : s)
          x = mx == -INFINITY ? 1.0 : x == -INFINITY ? 0.0 : std::exp(x - mx), sum += x;
        for (int64_t t = 0; t < c.Dv; ++t) {
          double acc = 0;
          for (int64_t j = 0; j < c.Sk; ++j)
            acc += s[j] * v[((b * c.Hkv + g) * c.Sk + j) * c.Dv + t];
          out.push_back(sum == 0 ? NAN : acc / sum);
        }
      }
    }
  return out;
}

std::vector<AttnCase> attention_cases() {
  std::vector<AttnCase> cs;
  cs.push_back({"decode_seq1_gqa", 1, 4, 2, 1, 7, 8, 8, true});
  cs.push_back({"odd_sizes_no_mask", 2, 3, 3, 5, 6, 13, 7, false});
  cs.push_back({"gqa_causal_prefill", 1, 8, 2, 37, 37, 64, 64, true});
  cs.push_back({"bert_batch1_12_heads_seq32", 1, 12, 12, 32, 32, 32, 32, false});
  cs.push_back({"long_keys_over_blocks", 1, 2, 1, 19, 300, 32, 32, true});
  cs.push_back({"wide_heads_over_128", 1, 2, 2, 3, 9, 160, 144, false});
  cs.push_back(
      {"more_queries_than_keys_causal", 1, 2, 2, 4, 2, 8, 8, true});  // rows 0, 1 see nothing
  AttnCase pad{"padding_with_fully_masked_batch", 3, 2, 2, 4, 5, 16, 16};
  pad.keep = {1, 1, 0, 1, 0,   // batch 0: gaps
              0, 0, 0, 0, 0,   // batch 1: nothing visible -> the mean of V
              0, 0, 1, 1, 1};  // batch 2: leading padding
  cs.push_back(pad);
  // A fixed-capacity KV cache with 21 filled slots of 64: decode reads the valid part only.
  AttnCase cache{"kv_cache_valid_length", 2, 6, 2, 1, 64, 32, 32};
  cache.keep.assign(2 * 64, 0);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t j = 0; j <= 20; ++j) cache.keep[b * 64 + j] = 1;
  cs.push_back(cache);
  // Tiles of >= 8 rows score from a transposed K block: over several key blocks, and masked.
  cs.push_back({"packed_tiles_over_key_blocks", 1, 4, 1, 70, 300, 48, 40, true});
  AttnCase packed_pad{"packed_tiles_padding", 2, 12, 12, 16, 16, 32, 32};
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t j = 0; j < 16; ++j) packed_pad.keep.push_back(b == 0 ? j % 3 != 1 : j < 11);
  cs.push_back(packed_pad);
  AttnCase scaled{"explicit_scale", 2, 2, 1, 3, 3, 4, 4, true};
  scaled.scale = 0.0625;
  cs.push_back(scaled);
  return cs;
}

// A case's shape for the kernel: its scale (or 1 / sqrt(D)), mask and padding flags.
cpu::AttentionShape shape_of(const AttnCase& c) {
  cpu::AttentionShape sh{c.B, c.H, c.Hkv, c.Sq, c.Sk, c.D, c.Dv};
  sh.scale = static_cast<float>(c.scale ? c.scale : 1.0 / std::sqrt(static_cast<double>(c.D)));
  sh.causal = c.causal;
  sh.keep = c.keep.empty() ? nullptr : c.keep.data();
  return sh;
}

TEST(CpuNnKernels, AttentionMatchesFloat64ReferenceOnEveryInstructionSet) {
  for (const NnSimd* simd : instruction_sets())
    for (const AttnCase& c : attention_cases()) {
      auto q = random_values(c.B * c.H * c.Sq * c.D, 1, 2),
           k = random_values(c.B * c.Hkv * c.Sk * c.D, 2, 2),
           v = random_values(c.B * c.Hkv * c.Sk * c.Dv, 3);
      cpu::AttentionShape sh = shape_of(c);
      std::vector<float> out(c.B * c.H * c.Sq * c.Dv, -7.0f);
      cpu::attention(sh, q.data(), k.data(), v.data(), out.data(), *simd);
      expect_close(widen(out), naive_attention(c, q, k, v), 2e-5, c.name + " (" + simd->name + ")");
    }
}

TEST(CpuNnKernels, AttentionRowWithANanScoreIsNan) {
  for (const NnSimd* simd : instruction_sets()) {
    AttnCase c{"nan", 1, 1, 1, 2, 3, 4, 4, false};
    auto q = random_values(8, 4), k = random_values(12, 5), v = random_values(12, 6);
    q[1] = NAN;  // query row 0 only
    cpu::AttentionShape sh{1, 1, 1, 2, 3, 4, 4, 0.5f};
    std::vector<float> out(8);
    cpu::attention(sh, q.data(), k.data(), v.data(), out.data(), *simd);
    for (int t = 0; t < 4; ++t) EXPECT_TRUE(std::isnan(out[t])) << simd->name;
    for (int t = 4; t < 8; ++t) EXPECT_FALSE(std::isnan(out[t])) << simd->name;
  }
}

// Rows are scored four at a time from the packed K: a NaN row in such a group turns only itself
// NaN, and its neighbours still get their keys (the group narrows to the rows still live).
TEST(CpuNnKernels, AttentionNanRowInsideAGroupOfPackedRows) {
  for (const NnSimd* simd : instruction_sets()) {
    AttnCase c{"nan_in_group", 1, 12, 12, 16, 16, 32, 32, false};
    auto q = random_values(c.H * c.Sq * c.D, 7), k = random_values(c.H * c.Sk * c.D, 8),
         v = random_values(c.H * c.Sk * c.Dv, 9);
    const int64_t head = 3, row = 5;  // the second row of the second group of four
    q[(head * c.Sq + row) * c.D + 4] = NAN;
    cpu::AttentionShape sh{1, c.H, c.H, c.Sq, c.Sk, c.D, c.Dv};
    sh.scale = 0.25f;
    c.scale = 0.25;
    std::vector<float> out(c.H * c.Sq * c.Dv);
    cpu::attention(sh, q.data(), k.data(), v.data(), out.data(), *simd);
    const std::vector<double> want = naive_attention(c, q, k, v);
    for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i) {
      const bool nan_row = i / c.Dv == head * c.Sq + row;
      ASSERT_EQ(std::isnan(out[i]), nan_row) << simd->name << " at " << i;
      if (!nan_row) EXPECT_NEAR(out[i], want[i], 2e-5 * std::max(1.0, std::fabs(want[i])));
    }
  }
}

// K and V of a 16-bit float type, as the kernel reads a KV cache kept in f16 or bf16: `bits`,
// and the same values widened to f32 (exactly) in `wide`.
struct Kv16 {
  std::vector<uint16_t> bits;
  std::vector<float> wide;
};
Kv16 to_16bit(const std::vector<float>& v, cpu::KvElem e) {
  Kv16 r;
  for (float x : v) {
    const uint16_t b = e == cpu::KvElem::kF16 ? f32_to_f16(x) : f32_to_bf16(x);
    r.bits.push_back(b);
    r.wide.push_back(e == cpu::KvElem::kF16 ? f16_to_f32(b) : bf16_to_f32(b));
  }
  return r;
}
const char* elem_name(cpu::KvElem e) {
  return e == cpu::KvElem::kF32 ? "f32" : e == cpu::KvElem::kF16 ? "f16" : "bf16";
}

// Widening is exact and the arithmetic after it is the f32 kernel's, so a 16-bit K and V give the
// f32 result of their widened values bit for bit: on every path (scores from K as stored or from
// K packed, V rows in groups, the uniform row of a query that sees no key) and every instruction
// set, k and v of different types included.
TEST(CpuNnKernels, AttentionWith16BitKvIsTheF32ResultOfItsValues) {
  using cpu::KvElem;
  const std::vector<std::pair<KvElem, KvElem>> elems{
      {KvElem::kF16, KvElem::kF16}, {KvElem::kBF16, KvElem::kBF16}, {KvElem::kF16, KvElem::kBF16}};
  for (const NnSimd* simd : instruction_sets())
    for (const AttnCase& c : attention_cases())
      for (auto [ke, ve] : elems) {
        auto q = random_values(c.B * c.H * c.Sq * c.D, 21, 2);
        Kv16 k = to_16bit(random_values(c.B * c.Hkv * c.Sk * c.D, 22, 2), ke),
             v = to_16bit(random_values(c.B * c.Hkv * c.Sk * c.Dv, 23), ve);
        cpu::AttentionShape sh = shape_of(c);
        std::vector<float> want(c.B * c.H * c.Sq * c.Dv), got(want.size(), -7.0f);
        cpu::attention(sh, q.data(), k.wide.data(), v.wide.data(), want.data(), *simd);
        sh.k_elem = ke, sh.v_elem = ve;
        cpu::attention(sh, q.data(), k.bits.data(), v.bits.data(), got.data(), *simd);
        const std::string what =
            c.name + " k " + elem_name(ke) + " v " + elem_name(ve) + " (" + simd->name + ")";
        ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << what;
        expect_close(widen(got), naive_attention(c, q, k.wide, v.wide), 2e-5, what + " vs float64");
      }
}

// A 16-bit q (and so result, in q's type): its rows widened exactly, the f32 kernel, each result
// rounded once. So the result is the f32 result for the widened q, rounded: bit for bit, with
// 16-bit K and V too.
TEST(CpuNnKernels, AttentionWith16BitQIsTheRoundedF32ResultOfItsValues) {
  using cpu::KvElem;
  for (const NnSimd* simd : instruction_sets())
    for (const AttnCase& c : attention_cases())
      for (KvElem e : {KvElem::kBF16, KvElem::kF16}) {
        Kv16 q = to_16bit(random_values(c.B * c.H * c.Sq * c.D, 21, 2), e),
             k = to_16bit(random_values(c.B * c.Hkv * c.Sk * c.D, 22, 2), e),
             v = to_16bit(random_values(c.B * c.Hkv * c.Sk * c.Dv, 23), e);
        cpu::AttentionShape sh = shape_of(c);
        std::vector<float> wide(c.B * c.H * c.Sq * c.Dv);
        cpu::attention(sh, q.wide.data(), k.wide.data(), v.wide.data(), wide.data(), *simd);
        sh.q_elem = sh.k_elem = sh.v_elem = e;
        std::vector<uint16_t> got(wide.size(), 0x7777);
        cpu::attention(sh, q.bits.data(), k.bits.data(), v.bits.data(), got.data(), *simd);
        const std::string what = c.name + " " + elem_name(e) + " (" + simd->name + ")";
        for (size_t i = 0; i < got.size(); ++i) {
          const uint16_t want = e == KvElem::kF16 ? f32_to_f16(wide[i]) : f32_to_bf16(wide[i]);
          ASSERT_EQ(got[i], want) << what << " at " << i;
        }
      }
}

// bf16 attention on each bf16 unit this CPU has (AMX tiles, AVX512-BF16: what --precision
// amp-bf16 runs there): exact products summed in f32, the softmax's weights rounded to bf16, the
// result rounded to bf16, so within a few bf16 ulps of the float64 attention of the same values,
// on every case whose head sizes fill whole tiles (GQA, causal, padding with a batch that sees
// nothing, keys over blocks, row counts that are not a multiple of the unit's groups).
TEST(CpuNnKernels, Bf16AttentionOnEachUnitIsCloseToFloat64) {
  using cpu::KvElem;
  std::vector<Bf16Unit> units;
  if (cpu::amx_bf16_enabled()) units.push_back(Bf16Unit::kAmx);
  if (cpu::avx512_bf16_enabled()) units.push_back(Bf16Unit::kAvx512Bf16);
  if (units.empty())
    GTEST_SKIP() << "this CPU has neither AMX-BF16 (granted) nor AVX512-BF16, or "
                    "RLX_CPU_AMX_BF16=0 / RLX_CPU_AVX512_BF16=0";
  std::vector<AttnCase> cases = attention_cases();
  AttnCase pad{"padding_with_fully_masked_batch_d32", 3, 4, 2, 20, 40, 32, 48};
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t j = 0; j < 40; ++j) pad.keep.push_back(b == 1 ? 0 : b == 0 ? j % 5 != 2 : j >= 9);
  cases.push_back(pad);
  cases.push_back({"d128_causal_long", 1, 2, 2, 33, 260, 128, 128, true});
  cases.push_back({"d64_v16_odd_rows", 2, 3, 3, 13, 70, 64, 16});
  for (Bf16Unit unit : units) {
    int run = 0;
    for (const AttnCase& c : cases) {
      if (cpu::attention_bf16_unit(KvElem::kBF16, KvElem::kBF16, KvElem::kBF16, c.D, c.Dv) ==
          Bf16Unit::kNone)
        continue;
      ++run;
      Kv16 q = to_16bit(random_values(c.B * c.H * c.Sq * c.D, 31, 2), KvElem::kBF16),
           k = to_16bit(random_values(c.B * c.Hkv * c.Sk * c.D, 32, 2), KvElem::kBF16),
           v = to_16bit(random_values(c.B * c.Hkv * c.Sk * c.Dv, 33), KvElem::kBF16);
      cpu::AttentionShape sh = shape_of(c);
      sh.q_elem = sh.k_elem = sh.v_elem = KvElem::kBF16;
      std::vector<uint16_t> got(c.B * c.H * c.Sq * c.Dv, 0x7777);
      cpu::attention_bf16(unit, sh, q.bits.data(), k.bits.data(), v.bits.data(), got.data());
      const std::vector<double> want = naive_attention(c, q.wide, k.wide, v.wide);
      for (size_t i = 0; i < got.size(); ++i) {
        const double g = bf16_to_f32(got[i]);
        if (std::isnan(want[i])) {
          ASSERT_TRUE(std::isnan(g)) << c.name << " at " << i;
          continue;
        }
        ASSERT_NEAR(g, want[i], 4e-3 + 8e-3 * std::fabs(want[i]))
            << bf16_unit_name(unit) << " " << c.name << " at " << i;
      }
    }
    EXPECT_GE(run, 7) << bf16_unit_name(unit);
  }
}

// Strided layouts (q, k, v and the result as [B, S, H, D], what the layout fold passes): the
// same bytes as the contiguous layout, on the f32 kernel, its 16-bit paths and the bf16 kernel.
TEST(CpuNnKernels, AttentionInHeadInterleavedLayoutsGivesTheSameBytes) {
  using cpu::KvElem;
  for (const AttnCase& c : attention_cases()) {
    if (c.H != c.Hkv) continue;  // [B, S, H, D] for all four needs one head count
    for (KvElem e : {KvElem::kF32, KvElem::kBF16}) {
      const int64_t per_q = c.Sq * c.D, per_kv = c.Sk * c.D;
      if (c.D != c.Dv) continue;
      Kv16 q = to_16bit(random_values(c.B * c.H * per_q, 41, 2), KvElem::kBF16),
           k = to_16bit(random_values(c.B * c.H * per_kv, 42, 2), KvElem::kBF16),
           v = to_16bit(random_values(c.B * c.H * per_kv, 43), KvElem::kBF16);
      // [B, H, S, D] -> [B, S, H, D]
      auto interleave = [&](const auto& x, int64_t len) {
        std::remove_cvref_t<decltype(x)> y(x.size());
        for (int64_t b = 0; b < c.B; ++b)
          for (int64_t h = 0; h < c.H; ++h)
            for (int64_t s = 0; s < len; ++s)
              for (int64_t d = 0; d < c.D; ++d)
                y[((b * len + s) * c.H + h) * c.D + d] = x[((b * c.H + h) * len + s) * c.D + d];
        return y;
      };
      cpu::AttentionShape sh = shape_of(c);
      sh.q_elem = sh.k_elem = sh.v_elem = e;
      cpu::AttentionShape st = sh;
      st.q_st = st.o_st = {c.Sq * c.H * c.D, c.D, c.H * c.D};
      st.k_st = st.v_st = {c.Sk * c.H * c.D, c.D, c.H * c.D};
      const size_t n = c.B * c.H * c.Sq * c.Dv;
      const NnSimd& simd = *instruction_sets().back();
      std::vector<float> want(n), got(n);
      std::vector<uint16_t> want16(n), got16(n);
      if (e == KvElem::kF32) {
        cpu::attention(sh, q.wide.data(), k.wide.data(), v.wide.data(), want.data(), simd);
        cpu::attention(st, interleave(q.wide, c.Sq).data(), interleave(k.wide, c.Sk).data(),
                       interleave(v.wide, c.Sk).data(), got.data(), simd);
        EXPECT_EQ(std::memcmp(interleave(want, c.Sq).data(), got.data(), n * 4), 0) << c.name;
        continue;
      }
      const Bf16Unit unit = cpu::attention_bf16_unit(e, e, e, c.D, c.Dv);
      auto run = [&](const cpu::AttentionShape& s, const void* qq, const void* kk, const void* vv,
                     void* out) {
        if (unit != Bf16Unit::kNone) return cpu::attention_bf16(unit, s, qq, kk, vv, out);
        cpu::attention(s, qq, kk, vv, out, simd);
      };
      run(sh, q.bits.data(), k.bits.data(), v.bits.data(), want16.data());
      run(st, interleave(q.bits, c.Sq).data(), interleave(k.bits, c.Sk).data(),
          interleave(v.bits, c.Sk).data(), got16.data());
      EXPECT_EQ(std::memcmp(interleave(want16, c.Sq).data(), got16.data(), n * 2), 0)
          << c.name << " " << bf16_unit_name(unit);
    }
  }
}

// ---- norms and softmax -----------------------------------------------------------------------

TEST(CpuNnKernels, LayerNormAndRmsNormMatchFloat64Reference) {
  for (const NnSimd* simd : instruction_sets())
    for (int64_t n : {1, 7, 16, 33, 384, 1000}) {
      const int64_t rows = 5;
      auto x = random_values(rows * n, 7, 3), g = random_values(n, 8), b = random_values(n, 9);
      for (int64_t i = 0; i < n; ++i) x[i] += 100.0f;  // a row with a large mean
      std::vector<double> ln, ln_plain, rms;
      for (int64_t r = 0; r < rows; ++r) {
        double mean = 0, var = 0, ms = 0;
        for (int64_t i = 0; i < n; ++i)
          mean += x[r * n + i], ms += double(x[r * n + i]) * x[r * n + i];
        mean /= n, ms /= n;
        for (int64_t i = 0; i < n; ++i) var += (x[r * n + i] - mean) * (x[r * n + i] - mean);
        var /= n;
        for (int64_t i = 0; i < n; ++i) {
          const double c = (x[r * n + i] - mean) / std::sqrt(var + 1e-5);
          ln.push_back(c * g[i] + b[i]);
          ln_plain.push_back(c);
          rms.push_back(x[r * n + i] / std::sqrt(ms + 1e-6) * g[i]);
        }
      }
      std::vector<float> y(rows * n);
      const std::string at = std::to_string(n) + " (" + simd->name + ")";
      cpu::layer_norm_f32(x.data(), rows, n, 1e-5f, g.data(), b.data(), y.data(), *simd);
      expect_close(widen(y), ln, 5e-4, "LayerNorm n=" + at);  // the +100 row loses f32 digits
      cpu::layer_norm_f32(x.data(), rows, n, 1e-5f, nullptr, nullptr, y.data(), *simd);
      expect_close(widen(y), ln_plain, 5e-4, "LayerNorm without scale n=" + at);
      cpu::rms_norm_f32(x.data(), rows, n, 1e-6f, g.data(), y.data(), *simd);
      expect_close(widen(y), rms, 1e-5, "RMSNorm n=" + at);
    }
}

std::vector<double> naive_softmax(const std::vector<float>& x, int64_t outer, int64_t n,
                                  int64_t inner) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < inner; ++c) {
      auto at = [&](int64_t i) { return (o * n + i) * inner + c; };
      double mx = -INFINITY, sum = 0;
      bool nan = false;
      for (int64_t i = 0; i < n; ++i)
        nan |= std::isnan(x[at(i)]), mx = std::max(mx, double(x[at(i)]));
      for (int64_t i = 0; i < n; ++i) sum += x[at(i)] == -INFINITY ? 0.0 : std::exp(x[at(i)] - mx);
      for (int64_t i = 0; i < n; ++i)
        y[at(i)] = nan || mx == -INFINITY
                       ? NAN
                       : (x[at(i)] == -INFINITY ? 0.0 : std::exp(x[at(i)] - mx)) / sum;
    }
  return y;
}

TEST(CpuNnKernels, SoftmaxMatchesFloat64ReferenceOnAnyAxis) {
  for (const NnSimd* simd : instruction_sets()) {
    for (auto [outer, n, inner] : std::vector<std::array<int64_t, 3>>{
             {3, 1, 1}, {4, 17, 1}, {2, 512, 1}, {2, 5, 3}, {1, 9, 7}}) {
      auto x = random_values(outer * n * inner, 10, 20);
      std::vector<float> y(x.size());
      cpu::softmax_f32(x.data(), outer, n, inner, y.data(), *simd);
      expect_close(
          widen(y), naive_softmax(x, outer, n, inner), 1e-6,
          "softmax " + std::to_string(n) + "x" + std::to_string(inner) + " (" + simd->name + ")");
    }
    // Masked entries, a fully masked row (NaN, as the decomposition gives) and a NaN row.
    const float ninf = -INFINITY;
    std::vector<float> x = {0.5f, ninf, 2.0f, ninf, ninf, ninf, ninf, ninf, 1.0f, NAN, 0.0f, 3.0f};
    std::vector<float> y(12);
    cpu::softmax_f32(x.data(), 3, 4, 1, y.data(), *simd);
    expect_close(widen(y), naive_softmax(x, 3, 4, 1), 1e-6,
                 std::string("softmax specials (") + simd->name + ")");
    EXPECT_EQ(y[1], 0.0f);
  }
}

// ---- through the plugin ----------------------------------------------------------------------

bool is_nn_op(const std::string& op) {
  return op == "Attention" || op == "LayerNorm" || op == "RMSNorm" || op == "Softmax";
}

// The cpu target with its native nn claims refused: dispatch then takes each op's MIR
// decomposition, the reference the native kernels must agree with.
class SharedIrCpu final : public Target {
 public:
  explicit SharedIrCpu(std::shared_ptr<Target> t) : t_(std::move(t)) {}
  std::string name() const override { return t_->name(); }
  Verdict claim_native(const NodeSignature& s) const override {
    if (is_nn_op(s.op)) return Verdict::no("native nn kernels turned off by the test");
    return t_->claim_native(s);
  }
  Verdict accepts_primitive(const NodeSignature& s) const override {
    return t_->accepts_primitive(s);
  }
  Verdict can_execute() const override { return t_->can_execute(); }
  std::unique_ptr<Executable> compile(const lir::Program& p) override { return t_->compile(p); }
  std::vector<Artifact> emit(const lir::Program& p, const std::filesystem::path& dir) override {
    return t_->emit(p, dir);
  }

 private:
  std::shared_ptr<Target> t_;
};

LoweringPath path_of(const std::string& ir, const std::string& op, std::shared_ptr<Target> t) {
  DispatchResult r = dispatch(parse_graph(ir, "test.rlx"), *t);
  for (const auto& e : r.report.entries)
    if (e.op == op) return e.path;
  ADD_FAILURE() << op << " not in the dispatch report";
  return LoweringPath::kRewritten;
}

std::vector<double> run_one(const std::string& ir, const NamedTensors& in,
                            std::shared_ptr<Target> t) {
  return test::values(test::run_text(ir, in, std::move(t)).at("o"));
}

TEST(CpuNnKernels, AttentionThroughThePluginMatchesDecompositionAndReference) {
  auto native = test::cpu_target();
  auto shared = std::make_shared<SharedIrCpu>(native);
  for (const AttnCase& c : attention_cases()) {
    const bool pad = !c.keep.empty();
    for (std::string mdt :
         pad ? std::vector<std::string>{"i64", "bool", "f32"} : std::vector<std::string>{""}) {
      std::string mask = pad ? "padding" : c.causal ? "causal" : "none";
      std::string attrs = "{mask = \"" + mask + "\"" +
                          (c.scale ? ", scale = " + std::to_string(c.scale) : "") + "}";
      auto dims = [](std::initializer_list<int64_t> d) {
        std::string s;
        for (int64_t x : d) s += (s.empty() ? "" : ",") + std::to_string(x);
        return s;
      };
      std::string ir = "graph @t(%q: f32[" + dims({c.B, c.H, c.Sq, c.D}) + "], %k: f32[" +
                       dims({c.B, c.Hkv, c.Sk, c.D}) + "], %v: f32[" +
                       dims({c.B, c.Hkv, c.Sk, c.Dv}) + "]" +
                       (pad ? ", %m: " + mdt + "[" + dims({c.B, c.Sk}) + "]" : "") +
                       ") {\n  %o = Attention(%q, %k, %v" + (pad ? ", %m" : "") + ") " + attrs +
                       " : f32[" + dims({c.B, c.H, c.Sq, c.Dv}) + "]\n  return %o\n}\n";
      auto q = random_values(c.B * c.H * c.Sq * c.D, 11, 2),
           k = random_values(c.B * c.Hkv * c.Sk * c.D, 12, 2),
           v = random_values(c.B * c.Hkv * c.Sk * c.Dv, 13);
      NamedTensors in{{"q", test::f32({c.B, c.H, c.Sq, c.D}, q)},
                      {"k", test::f32({c.B, c.Hkv, c.Sk, c.D}, k)},
                      {"v", test::f32({c.B, c.Hkv, c.Sk, c.Dv}, v)}};
      if (pad) {
        std::vector<int64_t> shape{c.B, c.Sk};
        if (mdt == "i64")
          in["m"] = Tensor::from<int64_t>(DType::kI64, shape, {c.keep.begin(), c.keep.end()});
        if (mdt == "bool") in["m"] = Tensor::from<uint8_t>(DType::kBool, shape, c.keep);
        if (mdt == "f32")
          in["m"] = Tensor::from<float>(DType::kF32, shape, {c.keep.begin(), c.keep.end()});
      }
      const std::string what = c.name + (mdt.empty() ? "" : " mask " + mdt);
      EXPECT_EQ(path_of(ir, "Attention", native), LoweringPath::kNative) << what;
      EXPECT_EQ(path_of(ir, "Attention", shared), LoweringPath::kSharedIr) << what;
      auto got = run_one(ir, in, native);
      expect_close(got, naive_attention(c, q, k, v), 2e-5, what + " vs float64");
      expect_close(got, run_one(ir, in, shared), 2e-5, what + " vs decomposition");
    }
  }
}

// A KV cache kept in f16 or bf16 is read by f32 queries: the cpu claims that Attention, and its
// result matches both the decomposition (which converts k and v to f32 first) and the float64
// reference over the widened values.
TEST(CpuNnKernels, AttentionWith16BitKvThroughThePluginMatchesDecompositionAndReference) {
  auto native = test::cpu_target();
  auto shared = std::make_shared<SharedIrCpu>(native);
  for (const AttnCase& c : attention_cases())
    for (cpu::KvElem e : {cpu::KvElem::kF16, cpu::KvElem::kBF16}) {
      const std::string kv = elem_name(e);
      const bool pad = !c.keep.empty();
      std::string mask = pad ? "padding" : c.causal ? "causal" : "none";
      std::string attrs = "{mask = \"" + mask + "\"" +
                          (c.scale ? ", scale = " + std::to_string(c.scale) : "") + "}";
      auto dims = [](std::initializer_list<int64_t> d) {
        std::string s;
        for (int64_t x : d) s += (s.empty() ? "" : ",") + std::to_string(x);
        return s;
      };
      std::string ir = "graph @t(%q: f32[" + dims({c.B, c.H, c.Sq, c.D}) + "], %k: " + kv + "[" +
                       dims({c.B, c.Hkv, c.Sk, c.D}) + "], %v: " + kv + "[" +
                       dims({c.B, c.Hkv, c.Sk, c.Dv}) + "]" +
                       (pad ? ", %m: i64[" + dims({c.B, c.Sk}) + "]" : "") +
                       ") {\n  %o = Attention(%q, %k, %v" + (pad ? ", %m" : "") + ") " + attrs +
                       " : f32[" + dims({c.B, c.H, c.Sq, c.Dv}) + "]\n  return %o\n}\n";
      auto q = random_values(c.B * c.H * c.Sq * c.D, 31, 2);
      Kv16 k = to_16bit(random_values(c.B * c.Hkv * c.Sk * c.D, 32, 2), e),
           v = to_16bit(random_values(c.B * c.Hkv * c.Sk * c.Dv, 33), e);
      const DType dt = e == cpu::KvElem::kF16 ? DType::kF16 : DType::kBF16;
      NamedTensors in{{"q", test::f32({c.B, c.H, c.Sq, c.D}, q)},
                      {"k", Tensor::from<uint16_t>(dt, {c.B, c.Hkv, c.Sk, c.D}, k.bits)},
                      {"v", Tensor::from<uint16_t>(dt, {c.B, c.Hkv, c.Sk, c.Dv}, v.bits)}};
      if (pad)
        in["m"] = Tensor::from<int64_t>(DType::kI64, {c.B, c.Sk}, {c.keep.begin(), c.keep.end()});
      const std::string what = c.name + " kv " + kv;
      EXPECT_EQ(path_of(ir, "Attention", native), LoweringPath::kNative) << what;
      EXPECT_EQ(path_of(ir, "Attention", shared), LoweringPath::kSharedIr) << what;
      auto got = run_one(ir, in, native);
      expect_close(got, naive_attention(c, q, k.wide, v.wide), 2e-5, what + " vs float64");
      expect_close(got, run_one(ir, in, shared), 2e-5, what + " vs decomposition");
    }
}

TEST(CpuNnKernels, NormsAndSoftmaxThroughThePluginMatchDecomposition) {
  auto native = test::cpu_target();
  auto shared = std::make_shared<SharedIrCpu>(native);
  const std::string ir = R"(graph @t(%x: f32[2,3,37], %g: f32[37], %b: f32[37]) {
  %l = LayerNorm(%x, %g, %b) {epsilon = 1e-05} : f32[2,3,37]
  %r = RMSNorm(%x, %g) {epsilon = 1e-06} : f32[2,3,37]
  %s = Softmax(%x) {axis = -1} : f32[2,3,37]
  %t = Softmax(%x) {axis = 1} : f32[2,3,37]
  return %l, %r, %s, %t
}
)";
  NamedTensors in{{"x", test::f32({2, 3, 37}, random_values(222, 14, 4))},
                  {"g", test::f32({37}, random_values(37, 15))},
                  {"b", test::f32({37}, random_values(37, 16))}};
  for (const char* op : {"LayerNorm", "RMSNorm", "Softmax"}) {
    EXPECT_EQ(path_of(ir, op, native), LoweringPath::kNative) << op;
    EXPECT_EQ(path_of(ir, op, shared), LoweringPath::kSharedIr) << op;
  }
  auto got = test::run_text(ir, in, native), want = test::run_text(ir, in, shared);
  for (const char* name : {"l", "r", "s", "t"})
    expect_close(test::values(got.at(name)), test::values(want.at(name)), 2e-6, name);
}

TEST(CpuNnKernels, OtherDtypesAreRefusedNativelyAndTakeTheSharedPath) {
  const std::string ir =
      R"(graph @t(%q: f64[1,2,3,4], %k: f64[1,1,3,4], %v: f64[1,1,3,4], %x: f16[2,8]) {
  %o = Attention(%q, %k, %v) {mask = "causal"} : f64[1,2,3,4]
  %s = Softmax(%x) : f16[2,8]
  return %o, %s
}
)";
  DispatchResult r = dispatch(parse_graph(ir, "test.rlx"), *test::cpu_target());
  ASSERT_EQ(r.report.entries.size(), 2u);
  for (const auto& e : r.report.entries) {
    EXPECT_EQ(e.path, LoweringPath::kSharedIr) << e.op;
    ASSERT_FALSE(e.refused.empty()) << e.op;
    EXPECT_NE(e.refused[0].find("takes f32"), std::string::npos) << e.refused[0];
  }
}

}  // namespace
}  // namespace rlx
