// The format table and the row decoder that dispatches to the per-block decoders.
#include "rlx/core/quant.h"

#include <cstring>

#include "rlx/core/error.h"
#include "rlx/core/half.h"

namespace rlx::quant {

namespace {

// ggml_type ids and block sizes from ggml.h / ggml-common.h (QK_K = 256).
const std::vector<QTypeInfo> kTable = {
    {QType::kF32, "f32", 0, 1, 4},          {QType::kF16, "f16", 1, 1, 2},
    {QType::kBF16, "bf16", 30, 1, 2},       {QType::kQ4_0, "q4_0", 2, 32, 18},
    {QType::kQ4_1, "q4_1", 3, 32, 20},      {QType::kQ5_0, "q5_0", 6, 32, 22},
    {QType::kQ5_1, "q5_1", 7, 32, 24},      {QType::kQ8_0, "q8_0", 8, 32, 34},
    {QType::kQ2_K, "q2_k", 10, 256, 84},    {QType::kQ3_K, "q3_k", 11, 256, 110},
    {QType::kQ4_K, "q4_k", 12, 256, 144},   {QType::kQ5_K, "q5_k", 13, 256, 176},
    {QType::kQ6_K, "q6_k", 14, 256, 210},   {QType::kQ8_K, "q8_k", 15, 256, 292},
    {QType::kIQ4_NL, "iq4_nl", 20, 32, 18}, {QType::kIQ4_XS, "iq4_xs", 23, 256, 136},
    {QType::kI4G32, "i4_g32", kNoGgml, 32, 24},
    {QType::kI4G64, "i4_g64", kNoGgml, 64, 40},
    {QType::kI4G128, "i4_g128", kNoGgml, 128, 72},
};

using BlockFn = void (*)(const uint8_t*, float*);

BlockFn block_fn(QType t) {
  using namespace detail;
  switch (t) {
    case QType::kQ4_0:
      return dequant_q4_0;
    case QType::kQ4_1:
      return dequant_q4_1;
    case QType::kQ5_0:
      return dequant_q5_0;
    case QType::kQ5_1:
      return dequant_q5_1;
    case QType::kQ8_0:
      return dequant_q8_0;
    case QType::kQ2_K:
      return dequant_q2_k;
    case QType::kQ3_K:
      return dequant_q3_k;
    case QType::kQ4_K:
      return dequant_q4_k;
    case QType::kQ5_K:
      return dequant_q5_k;
    case QType::kQ6_K:
      return dequant_q6_k;
    case QType::kQ8_K:
      return dequant_q8_k;
    case QType::kIQ4_NL:
      return dequant_iq4_nl;
    case QType::kIQ4_XS:
      return dequant_iq4_xs;
    default:
      return nullptr;
  }
}

}  // namespace

const std::vector<QTypeInfo>& all_qtypes() {
  return kTable;
}

const QTypeInfo& info(QType t) {
  return kTable.at(static_cast<size_t>(t));
}

const QTypeInfo* find_qtype(std::string_view name) {
  for (const QTypeInfo& q : kTable)
    if (q.name == name) return &q;
  return nullptr;
}

const QTypeInfo* qtype_from_ggml(uint32_t ggml_type) {
  if (ggml_type == kNoGgml) return nullptr;
  for (const QTypeInfo& q : kTable)
    if (q.ggml_type == ggml_type) return &q;
  return nullptr;
}

std::optional<int64_t> row_bytes(QType t, int64_t n) {
  const QTypeInfo& q = info(t);
  if (n < 0 || n % q.block_size) return std::nullopt;
  return n / q.block_size * q.block_bytes;
}

void dequantize(QType t, const void* src, float* dst, int64_t n) {
  const auto* p = static_cast<const uint8_t*>(src);
  const QTypeInfo& q = info(t);
  RLX_CHECK(n % q.block_size == 0, "dequantize: a partial block");
  if (n == 0) return;  // an empty tensor may come with null pointers (memcpy forbids them)
  switch (t) {
    case QType::kF32:
      std::memcpy(dst, p, n * 4);
      return;
    case QType::kF16:
    case QType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t v;
        std::memcpy(&v, p + 2 * i, 2);
        dst[i] = t == QType::kF16 ? f16_to_f32(v) : bf16_to_f32(v);
      }
      return;
    case QType::kI4G32:
    case QType::kI4G64:
    case QType::kI4G128:
      for (int64_t b = 0; b < n / q.block_size; ++b)
        detail::dequant_i4_group(p + b * q.block_bytes, dst + b * q.block_size,
                                 static_cast<int>(q.block_size));
      return;
    default:
      break;
  }
  BlockFn f = block_fn(t);
  for (int64_t b = 0; b < n / q.block_size; ++b) f(p + b * q.block_bytes, dst + b * q.block_size);
}

}  // namespace rlx::quant
