// Each block format against a reference written from the documented layout one element at a
// time (which bits of which byte hold element e, which scale applies to it), on random blocks.
// The decoder under test follows ggml's loops instead, so the two share no code.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>

#include "rlx/core/half.h"
#include "rlx/core/quant.h"

namespace rlx::quant {
namespace {

using Bytes = std::vector<uint8_t>;

double f16(const uint8_t* p) {
  return f16_to_f32(static_cast<uint16_t>(p[0] | (p[1] << 8)));
}
int bits(uint8_t byte, int shift, int width) {
  return (byte >> shift) & ((1 << width) - 1);
}
// Low nibble for the first half of a 32-element group, high nibble for the second half.
int nibble(const uint8_t* qs, int i) {
  return i < 16 ? qs[i] & 15 : qs[i - 16] >> 4;
}
const int kLevels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// --- references: value of element e of one block -------------------------------------------

double ref_q4_0(const uint8_t* b, int e) {
  return f16(b) * (nibble(b + 2, e) - 8);
}
double ref_q4_1(const uint8_t* b, int e) {
  return f16(b) * nibble(b + 4, e) + f16(b + 2);
}
int q5_high(const uint8_t* qh, int e) {
  return bits(qh[e / 8], e % 8, 1);
}  // bit e of qh
double ref_q5_0(const uint8_t* b, int e) {
  return f16(b) * (nibble(b + 6, e) + 16 * q5_high(b + 2, e) - 16);
}
double ref_q5_1(const uint8_t* b, int e) {
  return f16(b) * (nibble(b + 8, e) + 16 * q5_high(b + 4, e)) + f16(b + 2);
}
double ref_q8_0(const uint8_t* b, int e) {
  return f16(b) * static_cast<int8_t>(b[2 + e]);
}
double ref_iq4_nl(const uint8_t* b, int e) {
  return f16(b) * kLevels[nibble(b + 2, e)];
}

// Q2_K: 16 groups of 16; group g's 4-bit scale and 4-bit min in scales[g]. Element e lives in
// 2-bit field (e % 128) / 32 of byte qs[32 * (e / 128) + e % 32].
double ref_q2_k(const uint8_t* b, int e) {
  const uint8_t sc = b[e / 16];
  const int q = bits(b[16 + 32 * (e / 128) + e % 32], 2 * ((e % 128) / 32), 2);
  return f16(b + 80) * (sc & 15) * q - f16(b + 82) * (sc >> 4);
}

// Q3_K: 2-bit fields as Q2_K plus a high bit in hmask[e % 32], bit (e / 32); a clear high bit
// subtracts 4. Scale g (6 bits, offset 32): low 4 bits in byte g % 8 (low nibble for g < 8),
// high 2 bits in byte 8 + g % 4 at bit 2 * (g / 4).
double ref_q3_k(const uint8_t* b, int e) {
  const uint8_t* s = b + 96;
  const int g = e / 16;
  const int scale =
      (bits(s[g % 8], g < 8 ? 0 : 4, 4) | (bits(s[8 + g % 4], 2 * (g / 4), 2) << 4)) - 32;
  const int q = bits(b[32 + 32 * (e / 128) + e % 32], 2 * ((e % 128) / 32), 2);
  const int high = bits(b[e % 32], e / 32, 1);
  return f16(b + 108) * scale * (q - (high ? 0 : 4));
}

// Q4_K / Q5_K: 8 groups of 32 with a 6-bit scale and min. Groups 0-3: bytes 0-3 (scale) and
// 4-7 (min), low 6 bits. Groups 4-7: low nibble / high nibble of byte 8 + (g - 4), plus the
// top 2 bits of bytes g - 4 (scale) and g (min).
void scale_min(const uint8_t* s, int g, int* sc, int* mn) {
  if (g < 4) {
    *sc = bits(s[g], 0, 6);
    *mn = bits(s[g + 4], 0, 6);
  } else {
    *sc = bits(s[g + 4], 0, 4) | (bits(s[g - 4], 6, 2) << 4);
    *mn = bits(s[g + 4], 4, 4) | (bits(s[g], 6, 2) << 4);
  }
}
// Element e: group g = e / 32; byte qs[32 * (g / 2) + e % 32], low nibble for even g.
int k_nibble(const uint8_t* qs, int e) {
  const int g = e / 32;
  return bits(qs[32 * (g / 2) + e % 32], g % 2 ? 4 : 0, 4);
}
double ref_q4_k(const uint8_t* b, int e) {
  int sc, mn;
  scale_min(b + 4, e / 32, &sc, &mn);
  return f16(b) * sc * k_nibble(b + 16, e) - f16(b + 2) * mn;
}
double ref_q5_k(const uint8_t* b, int e) {
  int sc, mn;
  scale_min(b + 4, e / 32, &sc, &mn);
  const int q = k_nibble(b + 48, e) + 16 * bits(b[16 + e % 32], e / 32, 1);
  return f16(b) * sc * q - f16(b + 2) * mn;
}

// Q6_K: halves of 128; in a half, quarter k = r / 32 and l = r % 32: low 4 bits in
// ql[64 h + 32 (k % 2) + l] (low nibble for k < 2), high 2 bits in qh[32 h + l] at bit 2k.
// Scale: int8 scales[e / 16].
double ref_q6_k(const uint8_t* b, int e) {
  const int h = e / 128, r = e % 128, k = r / 32, l = r % 32;
  const int lo = bits(b[64 * h + 32 * (k % 2) + l], k < 2 ? 0 : 4, 4);
  const int hi = bits(b[128 + 32 * h + l], 2 * k, 2);
  return f16(b + 208) * static_cast<int8_t>(b[192 + e / 16]) * ((lo | (hi << 4)) - 32);
}

double ref_q8_k(const uint8_t* b, int e) {
  float d;
  std::memcpy(&d, b, 4);
  return static_cast<double>(d) * static_cast<int8_t>(b[4 + e]);
}

// IQ4_XS: 8 groups of 32; 6-bit scale: low 4 bits = nibble (g % 2) of scales_l[g / 2], high
// 2 bits = bits 2g..2g+1 of the u16 scales_h; quants as IQ4_NL per group.
double ref_iq4_xs(const uint8_t* b, int e) {
  const int g = e / 32;
  const int sh = b[2] | (b[3] << 8);
  const int ls = bits(b[4 + g / 2], 4 * (g % 2), 4) | (((sh >> (2 * g)) & 3) << 4);
  return f16(b) * (ls - 32) * kLevels[nibble(b + 8 + 16 * g, e % 32)];
}

struct Case {
  QType type;
  std::function<double(const uint8_t*, int)> ref;
  std::vector<int> f16_fields;  // byte offsets of f16 scales: filled with sane values
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {QType::kQ4_0, ref_q4_0, {0}},      {QType::kQ4_1, ref_q4_1, {0, 2}},
      {QType::kQ5_0, ref_q5_0, {0}},      {QType::kQ5_1, ref_q5_1, {0, 2}},
      {QType::kQ8_0, ref_q8_0, {0}},      {QType::kIQ4_NL, ref_iq4_nl, {0}},
      {QType::kQ2_K, ref_q2_k, {80, 82}}, {QType::kQ3_K, ref_q3_k, {108}},
      {QType::kQ4_K, ref_q4_k, {0, 2}},   {QType::kQ5_K, ref_q5_k, {0, 2}},
      {QType::kQ6_K, ref_q6_k, {208}},    {QType::kQ8_K, ref_q8_k, {}},
      {QType::kIQ4_XS, ref_iq4_xs, {0}},
  };
  return c;
}

// Random blocks: all bytes random, except scales, which are finite f16 values in [-2, 2] (or
// an f32 for Q8_K) so the comparison is about layout, not about Inf arithmetic.
Bytes random_blocks(const Case& c, int nblocks, std::mt19937& rng) {
  const QTypeInfo& q = info(c.type);
  Bytes b(q.block_bytes * nblocks);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-2.f, 2.f);
  for (auto& x : b) x = static_cast<uint8_t>(byte(rng));
  for (int k = 0; k < nblocks; ++k) {
    uint8_t* blk = b.data() + k * q.block_bytes;
    for (int off : c.f16_fields) {
      uint16_t h = f32_to_f16(scale(rng));
      std::memcpy(blk + off, &h, 2);
    }
    if (c.type == QType::kQ8_K) {
      float d = scale(rng);
      std::memcpy(blk, &d, 4);
    }
  }
  return b;
}

class QuantFormat : public ::testing::TestWithParam<int> {};

TEST_P(QuantFormat, MatchesLayoutReferenceOnRandomBlocks) {
  const Case& c = cases()[GetParam()];
  const QTypeInfo& q = info(c.type);
  std::mt19937 rng(1234 + GetParam());
  const int nblocks = 64;
  Bytes b = random_blocks(c, nblocks, rng);
  const int64_t n = q.block_size * nblocks;
  ASSERT_EQ(row_bytes(c.type, n), static_cast<int64_t>(b.size()));
  std::vector<float> got(n);
  dequantize(c.type, b.data(), got.data(), n);
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* blk = b.data() + (i / q.block_size) * q.block_bytes;
    double want = c.ref(blk, static_cast<int>(i % q.block_size));
    // The decoder rounds to f32 at each step; the reference works in double.
    if (std::abs(got[i] - want) > 1e-5 * std::max(1.0, std::abs(want)) && bad++ < 5)
      ADD_FAILURE() << q.name << " element " << i << ": got " << got[i] << ", want " << want;
  }
  EXPECT_EQ(bad, 0) << q.name;
}

INSTANTIATE_TEST_SUITE_P(AllBlockFormats, QuantFormat,
                         ::testing::Range(0, static_cast<int>(cases().size())), [](const auto& p) {
                           return std::string(quant::info(cases()[p.param].type).name);
                         });

TEST(Quant, PlainFloatFormats) {
  std::vector<float> want = {0.f, 1.5f, -2.25f, 65504.f, -0.0f, 3.0e-5f};
  std::vector<uint8_t> h(want.size() * 2), bf(want.size() * 2), f(want.size() * 4);
  for (size_t i = 0; i < want.size(); ++i) {
    uint16_t a = f32_to_f16(want[i]), c = f32_to_bf16(want[i]);
    std::memcpy(&h[2 * i], &a, 2);
    std::memcpy(&bf[2 * i], &c, 2);
    std::memcpy(&f[4 * i], &want[i], 4);
  }
  std::vector<float> out(want.size());
  auto n = static_cast<int64_t>(want.size());
  // Bit patterns, so -0 must come back negative. The f16 and bf16 values are numpy's
  // astype(float16) and round-to-nearest-even of the top 16 bits: 65504 is exact in f16 but
  // becomes 65536 in bf16, 3e-5 is an f16 subnormal.
  auto bits = [](const std::vector<float>& v) {
    std::vector<uint32_t> b(v.size());
    std::memcpy(b.data(), v.data(), v.size() * 4);
    return b;
  };
  dequantize(QType::kF32, f.data(), out.data(), n);
  EXPECT_EQ(bits(out), bits(want));
  dequantize(QType::kF16, h.data(), out.data(), n);
  EXPECT_EQ(bits(out), (std::vector<uint32_t>{0x00000000, 0x3FC00000, 0xC0100000, 0x477FE000,
                                              0x80000000, 0x37FB8000}));
  dequantize(QType::kBF16, bf.data(), out.data(), n);
  EXPECT_EQ(bits(out), (std::vector<uint32_t>{0x00000000, 0x3FC00000, 0xC0100000, 0x47800000,
                                              0x80000000, 0x37FC0000}));
  // bf16 is the top half of an f32: 0x3FC0 is 1.5 exactly.
  // Nothing to decode: null pointers are fine (an empty tensor has no storage).
  for (const QTypeInfo& q : all_qtypes()) dequantize(q.type, nullptr, nullptr, 0);
  uint8_t one_and_half[2] = {0xC0, 0x3F};
  dequantize(QType::kBF16, one_and_half, out.data(), 1);
  EXPECT_EQ(out[0], 1.5f);
}

TEST(Quant, TableMatchesGgmlIdsAndSizes) {
  // Spot checks of ggml_type ids and block sizes (ggml.h, ggml-common.h).
  EXPECT_EQ(qtype_from_ggml(8)->type, QType::kQ8_0);
  EXPECT_EQ(qtype_from_ggml(12)->type, QType::kQ4_K);
  EXPECT_EQ(qtype_from_ggml(30)->type, QType::kBF16);
  EXPECT_EQ(qtype_from_ggml(16), nullptr);  // IQ2_XXS: no decoder
  EXPECT_EQ(find_qtype("q6_k")->block_bytes, 210);
  EXPECT_EQ(find_qtype("iq4_xs")->block_bytes, 136);
  EXPECT_EQ(find_qtype("nope"), nullptr);
  EXPECT_EQ(row_bytes(QType::kQ8_0, 64), 68);
  EXPECT_FALSE(row_bytes(QType::kQ8_0, 172).has_value());  // not a whole number of blocks
  EXPECT_EQ(row_bytes(QType::kF16, 3), 6);
  for (size_t i = 0; i < all_qtypes().size(); ++i)
    EXPECT_EQ(static_cast<size_t>(all_qtypes()[i].type), i) << "table order";
}

std::vector<char> read_all(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

// data/make_reference.py decoded random blocks (Inf/NaN scales included) with the gguf package
// from PyPI, llama.cpp's own Python implementation: an independent second reference.
TEST(Quant, AgreesWithGgufPyOnRandomBlocks) {
  const std::filesystem::path dir = RLX_QUANT_DATA_DIR;
  int checked = 0;
  for (const QTypeInfo& q : all_qtypes()) {
    auto bin = dir / (std::string(q.name) + ".bin"), ref = dir / (std::string(q.name) + ".ref");
    if (!std::filesystem::exists(bin)) continue;  // f32 (trivial), q8_k (gguf-py lacks it)
    std::vector<char> raw = read_all(bin), want_bytes = read_all(ref);
    const int64_t n = static_cast<int64_t>(want_bytes.size() / 4);
    ASSERT_EQ(row_bytes(q.type, n), static_cast<int64_t>(raw.size())) << q.name;
    std::vector<float> got(n), want(n);
    std::memcpy(want.data(), want_bytes.data(), want_bytes.size());
    dequantize(q.type, raw.data(), got.data(), n);
    int bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      bool same = std::isnan(want[i]) ? std::isnan(got[i])
                  : std::isinf(want[i])
                      ? got[i] == want[i]
                      : std::abs(got[i] - want[i]) <= 1e-6f * std::max(1.f, std::abs(want[i]));
      if (!same && bad++ < 3)
        ADD_FAILURE() << q.name << "[" << i << "]: " << got[i] << " vs " << want[i];
    }
    EXPECT_EQ(bad, 0) << q.name;
    ++checked;
  }
  EXPECT_EQ(checked, 14);
}

}  // namespace
}  // namespace rlx::quant
