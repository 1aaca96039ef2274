#include "rlx/core/dtype.h"

#include <array>

namespace rlx {
namespace {

struct DTypeInfo {
  std::string_view name;
  size_t size;
};

// Indexed by the enum value; the static_assert keeps the table and the enum in step.
constexpr std::array<DTypeInfo, kNumDTypes> kInfo = {{
    {"bool", 1},
    {"i8", 1},
    {"u8", 1},
    {"i16", 2},
    {"i32", 4},
    {"i64", 8},
    {"f16", 2},
    {"bf16", 2},
    {"f32", 4},
    {"f64", 8},
    {"c64", 8},
    {"u16", 2},
    {"u32", 4},
    {"u64", 8},
}};
static_assert(static_cast<int>(DType::kU64) + 1 == kNumDTypes);

constexpr std::array<DType, kNumDTypes> kAll = {
    DType::kBool, DType::kI8,   DType::kU8,  DType::kI16, DType::kI32, DType::kI64,
    DType::kF16,  DType::kBF16, DType::kF32, DType::kF64, DType::kC64,
    DType::kU16,  DType::kU32,  DType::kU64,
};

const DTypeInfo& info(DType t) {
  return kInfo.at(static_cast<size_t>(t));
}

}  // namespace

std::string_view dtype_name(DType t) {
  return info(t).name;
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType t : kAll)
    if (info(t).name == name) return t;
  return std::nullopt;
}

size_t dtype_size(DType t) {
  return info(t).size;
}

bool is_float(DType t) {
  return t == DType::kF16 || t == DType::kBF16 || t == DType::kF32 || t == DType::kF64;
}

bool is_integer(DType t) {
  return t == DType::kI8 || t == DType::kU8 || t == DType::kI16 || t == DType::kI32 ||
         t == DType::kI64 || t == DType::kU16 || t == DType::kU32 || t == DType::kU64;
}

bool is_unsigned(DType t) {
  return t == DType::kU8 || t == DType::kU16 || t == DType::kU32 || t == DType::kU64;
}

bool is_complex(DType t) {
  return t == DType::kC64;
}

const DType* all_dtypes() {
  return kAll.data();
}

}  // namespace rlx
