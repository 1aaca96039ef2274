// Block-quantized storage formats (the ggml/GGUF ones). A quantized tensor is kept as rows of
// bytes: each row of `n` logical elements is n / block_size consecutive blocks. Nothing is
// expanded at load time; kernels dequantize one row at a time (DequantMatMul).
//
// Names are the lower-case ggml names ("q4_k", "iq4_nl", "f16") used by the DequantMatMul
// `qtype` attribute and by the model builders' Weight::qtype.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace rlx::quant {

enum class QType : uint8_t {
  kF32,
  kF16,
  kBF16,
  kQ4_0,
  kQ4_1,
  kQ5_0,
  kQ5_1,
  kQ8_0,
  kQ2_K,
  kQ3_K,
  kQ4_K,
  kQ5_K,
  kQ6_K,
  kQ8_K,
  kIQ4_NL,
  kIQ4_XS,
  // rlx's own int4 weight formats (`rlx quantize --scheme int4-weight`): groups of 32, 64 or 128
  // elements, {f32 d; f32 m; u8 qs[g / 2]}, x = d * q + m with q in [0, 15]; byte j holds
  // element 2j in its low nibble and 2j + 1 in its high nibble. No GGUF id (ggml_type kNoGgml).
  kI4G32,
  kI4G64,
  kI4G128,
};

inline constexpr uint32_t kNoGgml = 0xFFFFFFFFu;

struct QTypeInfo {
  QType type;
  std::string_view name;  // "q4_k"
  uint32_t ggml_type;     // the GGUF tensor type id (ggml_type enum value)
  int64_t block_size;     // elements per block (1 for the plain float types)
  int64_t block_bytes;    // bytes per block
};

// Every format, in enum order.
const std::vector<QTypeInfo>& all_qtypes();
const QTypeInfo& info(QType t);
const QTypeInfo* find_qtype(std::string_view name);    // nullptr when unknown
const QTypeInfo* qtype_from_ggml(uint32_t ggml_type);  // nullptr when rlx has no decoder for it

// Bytes of a row of `n` elements; nullopt when n is not a whole number of blocks (or negative).
std::optional<int64_t> row_bytes(QType t, int64_t n);

// Decodes n elements (a whole number of blocks, checked by the caller through row_bytes) from
// `src` into dst. src needs no alignment.
void dequantize(QType t, const void* src, float* dst, int64_t n);

// Per-format decoders of ONE block (block_size elements), used by dequantize. Exposed so tests
// can drive each format directly.
namespace detail {
void dequant_q4_0(const uint8_t* b, float* y);
void dequant_q4_1(const uint8_t* b, float* y);
void dequant_q5_0(const uint8_t* b, float* y);
void dequant_q5_1(const uint8_t* b, float* y);
void dequant_q8_0(const uint8_t* b, float* y);
void dequant_iq4_nl(const uint8_t* b, float* y);
void dequant_q2_k(const uint8_t* b, float* y);
void dequant_q3_k(const uint8_t* b, float* y);
void dequant_q4_k(const uint8_t* b, float* y);
void dequant_q5_k(const uint8_t* b, float* y);
void dequant_q6_k(const uint8_t* b, float* y);
void dequant_q8_k(const uint8_t* b, float* y);
void dequant_iq4_xs(const uint8_t* b, float* y);
void dequant_i4_group(const uint8_t* b, float* y, int group);  // kI4G32/64/128
}  // namespace detail

}  // namespace rlx::quant
