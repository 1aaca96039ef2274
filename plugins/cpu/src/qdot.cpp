// Activation quantization, ISA choice and the portable path of the integer block products.
#include "qdot.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "rlx/core/error.h"

namespace rlx::cpu {

using quant::QType;

// ---- ISA selection --------------------------------------------------------------------------

const char* qdot_isa_name(QDotIsa isa) {
  return isa == QDotIsa::kAvx512Vnni ? "avx512vnni" : "portable";
}

bool qdot_isa_supported(QDotIsa isa) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (isa == QDotIsa::kAvx512Vnni)
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
           __builtin_cpu_supports("f16c") && __builtin_cpu_supports("fma");
  return true;
#else
  return isa == QDotIsa::kPortable;
#endif
}

namespace {

QDotIsa initial_isa() {
  const char* env = std::getenv("RLX_CPU_QDOT_ISA");
  if (!env || !*env)
    return qdot_isa_supported(QDotIsa::kAvx512Vnni) ? QDotIsa::kAvx512Vnni : QDotIsa::kPortable;
  for (QDotIsa isa : {QDotIsa::kAvx512Vnni, QDotIsa::kPortable}) {
    if (std::string(env) != qdot_isa_name(isa)) continue;
    if (!qdot_isa_supported(isa))
      throw_user_error(
          fmt::format("RLX_CPU_QDOT_ISA={} but this CPU lacks it; unset it or use "
                      "portable",
                      env));
    return isa;
  }
  throw_user_error(fmt::format("RLX_CPU_QDOT_ISA={} is not one of avx512vnni, portable", env));
}

std::atomic<int>& isa_slot() {
  static std::atomic<int> slot{static_cast<int>(initial_isa())};
  return slot;
}

}  // namespace

QDotIsa qdot_isa() {
  return static_cast<QDotIsa>(isa_slot().load(std::memory_order_relaxed));
}

void set_qdot_isa(QDotIsa isa) {
  if (!qdot_isa_supported(isa))
    throw_user_error(fmt::format("this CPU cannot run the {} block products", qdot_isa_name(isa)));
  isa_slot().store(static_cast<int>(isa), std::memory_order_relaxed);
}

// ---- Formats and activation rows ------------------------------------------------------------

bool qdot_supports(QType t) {
  switch (t) {
    case QType::kQ4_0:
    case QType::kQ4_1:
    case QType::kQ5_0:
    case QType::kQ5_1:
    case QType::kQ8_0:
    case QType::kIQ4_NL:
    case QType::kQ4_K:
    case QType::kQ5_K:
    case QType::kQ6_K:
      return true;
    default:
      return false;
  }
}

int64_t qdot_act_block(QType t) {
  return quant::info(t).block_size == 256 ? 256 : 32;
}

size_t qdot_act_row_bytes(QType t, int64_t k) {
  const int64_t blocks = k / qdot_act_block(t);
  return static_cast<size_t>(blocks) *
         (qdot_act_block(t) == 256 ? sizeof(QAct256) : sizeof(QAct32));
}

namespace {

// Symmetric 8-bit rounding of n values: d = max|x| / 127, q = round(x / d).
float quantize_block(const float* x, int n, int8_t* q) {
  float amax = 0;
  for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = amax / 127.0f, id = d > 0 ? 1.0f / d : 0.0f;
  for (int i = 0; i < n; ++i) q[i] = static_cast<int8_t>(std::nearbyint(x[i] * id));
  return d;
}

}  // namespace

void qdot_quantize_row(QType t, const float* x, int64_t k, void* dst) {
  if (qdot_act_block(t) == 32) {
    auto* b = static_cast<QAct32*>(dst);
    for (int64_t i = 0; i < k / 32; ++i, x += 32) {
      b[i].d = quantize_block(x, 32, b[i].q);
      int sum = 0;
      for (int8_t v : b[i].q) sum += v;
      b[i].dsum = b[i].d * static_cast<float>(sum);
    }
    return;
  }
  auto* b = static_cast<QAct256*>(dst);
  for (int64_t i = 0; i < k / 256; ++i, x += 256) {
    b[i].d = quantize_block(x, 256, b[i].q);
    for (int j = 0; j < 16; ++j) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += b[i].q[16 * j + l];
      b[i].bsums[j] = static_cast<int16_t>(sum);
    }
  }
}

void qdot_round_row(QType t, const float* x, int64_t k, float* out) {
  const int64_t block = qdot_act_block(t);
  int8_t q[256];
  for (int64_t b = 0; b < k; b += block) {
    const float d = quantize_block(x + b, static_cast<int>(block), q);
    for (int64_t i = 0; i < block; ++i) out[b + i] = d * static_cast<float>(q[i]);
  }
}

// ---- Portable path --------------------------------------------------------------------------

namespace detail {

namespace {

// Eight partial sums: the compiler vectorises this without reassociating one chain.
float dot8(const float* a, const float* b, int64_t n) {
  float acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  float s = 0;
  for (; i < n; ++i) s += a[i] * b[i];
  for (float v : acc) s += v;
  return s;
}

}  // namespace

// Decodes both operands to f32 and sums in f32: the same value as the integer path up to f32
// rounding, on any CPU.
void qdot_rows_portable(QType t, const uint8_t* w, int64_t row_bytes, int64_t n0, int64_t n1,
                        const void* xq, int64_t xq_stride, int64_t M, int64_t k, float* y,
                        int64_t ldy) {
  thread_local std::vector<float> xs, wrow;
  xs.resize(static_cast<size_t>(M * k));
  wrow.resize(static_cast<size_t>(k));
  for (int64_t m = 0; m < M; ++m) {
    const auto* row = static_cast<const uint8_t*>(xq) + m * xq_stride;
    float* out = xs.data() + m * k;
    if (qdot_act_block(t) == 32) {
      const auto* b = reinterpret_cast<const QAct32*>(row);
      for (int64_t i = 0; i < k; ++i) out[i] = b[i / 32].d * b[i / 32].q[i % 32];
    } else {
      const auto* b = reinterpret_cast<const QAct256*>(row);
      for (int64_t i = 0; i < k; ++i) out[i] = b[i / 256].d * b[i / 256].q[i % 256];
    }
  }
  for (int64_t n = n0; n < n1; ++n) {
    quant::dequantize(t, w + n * row_bytes, wrow.data(), k);
    for (int64_t m = 0; m < M; ++m) y[m * ldy + n] = dot8(xs.data() + m * k, wrow.data(), k);
  }
}

void qdot_rows_f32_portable(QType t, const uint8_t* w, int64_t row_bytes, int64_t n0, int64_t n1,
                            const float* x, int64_t ldx, int64_t M, int64_t k, float* y,
                            int64_t ldy) {
  thread_local std::vector<float> wrow;
  wrow.resize(static_cast<size_t>(k));
  for (int64_t n = n0; n < n1; ++n) {
    quant::dequantize(t, w + n * row_bytes, wrow.data(), k);
    for (int64_t m = 0; m < M; ++m) y[m * ldy + n] = dot8(x + m * ldx, wrow.data(), k);
  }
}

}  // namespace detail

void qdot_rows_f32(QType t, const uint8_t* w, int64_t row_bytes, int64_t n0, int64_t n1,
                   const float* x, int64_t ldx, int64_t M, int64_t k, float* y, int64_t ldy) {
#if defined(__x86_64__)
  if (qdot_isa() == QDotIsa::kAvx512Vnni && qdot_supports(t))
    return detail::qdot_rows_f32_avx512(t, w, row_bytes, n0, n1, x, ldx, M, k, y, ldy);
#endif
  detail::qdot_rows_f32_portable(t, w, row_bytes, n0, n1, x, ldx, M, k, y, ldy);
}

void qdot_decode_rows(QType t, const uint8_t* w, int64_t row_bytes, int64_t n0, int64_t n1,
                      int64_t k, float* out, int64_t ldo) {
#if defined(__x86_64__)
  if (qdot_isa() == QDotIsa::kAvx512Vnni && qdot_supports(t))
    return detail::qdot_decode_rows_avx512(t, w, row_bytes, n0, n1, k, out, ldo);
#endif
  for (int64_t n = n0; n < n1; ++n)
    quant::dequantize(t, w + n * row_bytes, out + (n - n0) * ldo, k);
}

void qdot_rows(QType t, const uint8_t* w, int64_t row_bytes, int64_t n0, int64_t n1, const void* xq,
               int64_t xq_stride, int64_t M, int64_t k, float* y, int64_t ldy) {
#if defined(__x86_64__)
  if (qdot_isa() == QDotIsa::kAvx512Vnni && qdot_supports(t))
    return detail::qdot_rows_avx512vnni(t, w, row_bytes, n0, n1, xq, xq_stride, M, k, y, ldy);
#endif
  detail::qdot_rows_portable(t, w, row_bytes, n0, n1, xq, xq_stride, M, k, y, ldy);
}

}  // namespace rlx::cpu
