#include "gguf_types.h"

#include <vector>

namespace rlx::gguf {

namespace {

using quant::QType;

// ggml.h (enum ggml_type) and ggml-common.h (block structs), QK_K = 256.
const std::vector<GgmlType> kTypes = {
    {0, "f32", 1, 4, DType::kF32, QType::kF32},
    {1, "f16", 1, 2, DType::kF16, QType::kF16},
    {2, "q4_0", 32, 18, std::nullopt, QType::kQ4_0},
    {3, "q4_1", 32, 20, std::nullopt, QType::kQ4_1},
    {6, "q5_0", 32, 22, std::nullopt, QType::kQ5_0},
    {7, "q5_1", 32, 24, std::nullopt, QType::kQ5_1},
    {8, "q8_0", 32, 34, std::nullopt, QType::kQ8_0},
    {9, "q8_1", 32, 36, std::nullopt, std::nullopt},
    {10, "q2_k", 256, 84, std::nullopt, QType::kQ2_K},
    {11, "q3_k", 256, 110, std::nullopt, QType::kQ3_K},
    {12, "q4_k", 256, 144, std::nullopt, QType::kQ4_K},
    {13, "q5_k", 256, 176, std::nullopt, QType::kQ5_K},
    {14, "q6_k", 256, 210, std::nullopt, QType::kQ6_K},
    {15, "q8_k", 256, 292, std::nullopt, QType::kQ8_K},
    {16, "iq2_xxs", 256, 66, std::nullopt, std::nullopt},
    {17, "iq2_xs", 256, 74, std::nullopt, std::nullopt},
    {18, "iq3_xxs", 256, 98, std::nullopt, std::nullopt},
    {19, "iq1_s", 256, 50, std::nullopt, std::nullopt},
    {20, "iq4_nl", 32, 18, std::nullopt, QType::kIQ4_NL},
    {21, "iq3_s", 256, 110, std::nullopt, std::nullopt},
    {22, "iq2_s", 256, 82, std::nullopt, std::nullopt},
    {23, "iq4_xs", 256, 136, std::nullopt, QType::kIQ4_XS},
    {24, "i8", 1, 1, DType::kI8, std::nullopt},
    {25, "i16", 1, 2, DType::kI16, std::nullopt},
    {26, "i32", 1, 4, DType::kI32, std::nullopt},
    {27, "i64", 1, 8, DType::kI64, std::nullopt},
    {28, "f64", 1, 8, DType::kF64, std::nullopt},
    {29, "iq1_m", 256, 56, std::nullopt, std::nullopt},
    {30, "bf16", 1, 2, DType::kBF16, QType::kBF16},
    {34, "tq1_0", 256, 54, std::nullopt, std::nullopt},
    {35, "tq2_0", 256, 66, std::nullopt, std::nullopt},
    {39, "mxfp4", 32, 17, std::nullopt, std::nullopt},
};

}  // namespace

const GgmlType* ggml_type(uint32_t id) {
  for (const GgmlType& t : kTypes)
    if (t.id == id) return &t;
  return nullptr;
}

}  // namespace rlx::gguf
