// Scalar semantics of the cpu target, shared by loop kernels and library calls. Compute
// classes: f16/bf16/f32 compute in float, f64 in double, integers and bool in int64; a result
// of a narrower dtype is rounded (floats) or wrapped (integers) to that dtype after every op,
// so fused kernels give exactly what one kernel per op would.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "erf_f32.h"
#include "rlx/core/dtype.h"
#include "rlx/core/half.h"

namespace rlx::cpu {

enum class Cls : uint8_t { kF32, kF64, kI64 };

inline Cls class_of(DType d) {
  switch (d) {
    case DType::kF16: case DType::kBF16: case DType::kF32: return Cls::kF32;
    case DType::kF64: return Cls::kF64;
    default: return Cls::kI64;
  }
}

enum class Op : uint8_t {
  kNeg, kAbs, kSign, kExp, kLog, kSqrt, kRsqrt, kTanh, kErf, kSin, kCos, kFloor, kCeil, kRound,
  kLogistic, kNot,
  kAdd, kSub, kMul, kDiv, kMax, kMin, kPow, kRem, kAnd, kOr, kXor,
  kEq, kNe, kLt, kLe, kGt, kGe,
};
// Throws an internal error for a name that is not an elementwise MIR op.
Op op_from_name(const std::string& name);
inline bool is_compare(Op op) { return op >= Op::kEq; }

// Float max/min propagate NaN (as StableHLO and numpy.maximum do), unlike fmax/fmin.
template <typename T>
inline T fmax_nan(T a, T b) { return (a != a || b != b) ? std::numeric_limits<T>::quiet_NaN() : (a > b ? a : b); }
template <typename T>
inline T fmin_nan(T a, T b) { return (a != a || b != b) ? std::numeric_limits<T>::quiet_NaN() : (a < b ? a : b); }

template <typename T>
inline T float_unary(Op op, T x) {
  switch (op) {
    case Op::kNeg: return -x;
    case Op::kAbs: return std::fabs(x);
    case Op::kSign: return x != x ? x : static_cast<T>((x > 0) - (x < 0));
    case Op::kExp: return std::exp(x);
    case Op::kLog: return std::log(x);
    case Op::kSqrt: return std::sqrt(x);
    case Op::kRsqrt: return T(1) / std::sqrt(x);
    case Op::kTanh: return std::tanh(x);
    case Op::kErf:  // f32: the same call-free erf as the generated kernels (erf_f32.h)
      if constexpr (std::is_same_v<T, float>)
        return rlx_erff(x);
      else
        return std::erf(x);
    case Op::kSin: return std::sin(x);
    case Op::kCos: return std::cos(x);
    case Op::kFloor: return std::floor(x);
    case Op::kCeil: return std::ceil(x);
    case Op::kRound: return std::nearbyint(x);
    case Op::kLogistic: return T(1) / (T(1) + std::exp(-x));
    default: return x;
  }
}

template <typename T>
inline T float_binary(Op op, T a, T b) {
  switch (op) {
    case Op::kAdd: return a + b;
    case Op::kSub: return a - b;
    case Op::kMul: return a * b;
    case Op::kDiv: return a / b;
    case Op::kMax: return fmax_nan(a, b);
    case Op::kMin: return fmin_nan(a, b);
    case Op::kPow: return std::pow(a, b);
    case Op::kRem: return std::fmod(a, b);
    default: return a;
  }
}

// Integer arithmetic wraps (computed on uint64) and division by zero yields 0: the graph never
// traps on data.
inline int64_t int_unary(Op op, int64_t x) {
  switch (op) {
    case Op::kNeg: return static_cast<int64_t>(0 - static_cast<uint64_t>(x));
    case Op::kAbs: return x < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(x)) : x;
    case Op::kSign: return (x > 0) - (x < 0);
    case Op::kNot: return ~x;
    default: return x;
  }
}

inline int64_t int_binary(Op op, int64_t a, int64_t b) {
  auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (op) {
    case Op::kAdd: return static_cast<int64_t>(ua + ub);
    case Op::kSub: return static_cast<int64_t>(ua - ub);
    case Op::kMul: return static_cast<int64_t>(ua * ub);
    case Op::kDiv: return (b == 0 || (a == INT64_MIN && b == -1)) ? 0 : a / b;
    case Op::kRem: return (b == 0 || (a == INT64_MIN && b == -1)) ? 0 : a % b;
    case Op::kMax: return a > b ? a : b;
    case Op::kMin: return a < b ? a : b;
    case Op::kPow: {
      if (b < 0) return a == 1 ? 1 : (a == -1 ? (b % 2 ? -1 : 1) : 0);
      uint64_t r = 1, base = ua;
      for (int64_t e = b; e > 0; e >>= 1, base *= base)
        if (e & 1) r *= base;
      return static_cast<int64_t>(r);
    }
    case Op::kAnd: return a & b;
    case Op::kOr: return a | b;
    case Op::kXor: return a ^ b;
    default: return a;
  }
}

template <typename T>
inline bool compare(Op op, T a, T b) {
  switch (op) {
    case Op::kEq: return a == b;
    case Op::kNe: return a != b;
    case Op::kLt: return a < b;
    case Op::kLe: return a <= b;
    case Op::kGt: return a > b;
    case Op::kGe: return a >= b;
    default: return false;
  }
}

// Rounds a float-class value to the precision of `d` (f16/bf16), leaves f32 alone.
inline float round_to(DType d, float x) {
  if (d == DType::kF16) return f16_to_f32(f32_to_f16(x));
  if (d == DType::kBF16) return bf16_to_f32(f32_to_bf16(x));
  return x;
}

// Wraps an int64-class value to the width of `d`.
inline int64_t wrap_to(DType d, int64_t x) {
  switch (d) {
    case DType::kBool: return x != 0;
    case DType::kI8: return static_cast<int8_t>(x);
    case DType::kU8: return static_cast<uint8_t>(x);
    case DType::kI16: return static_cast<int16_t>(x);
    case DType::kI32: return static_cast<int32_t>(x);
    case DType::kU16: return static_cast<uint16_t>(x);
    case DType::kU32: return static_cast<uint32_t>(x);
    default: return x;  // i64, and u64's bits (moved, never computed: cpu_target.cpp)
  }
}


// Storage <-> compute class.
inline float load_f(DType d, const void* p, int64_t i) {
  switch (d) {
    case DType::kF16: return f16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case DType::kBF16: return bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}
inline int64_t load_i(DType d, const void* p, int64_t i) {
  switch (d) {
    case DType::kBool: case DType::kU8: return static_cast<const uint8_t*>(p)[i];
    case DType::kI8: return static_cast<const int8_t*>(p)[i];
    case DType::kI16: return static_cast<const int16_t*>(p)[i];
    case DType::kI32: return static_cast<const int32_t*>(p)[i];
    case DType::kU16: return static_cast<const uint16_t*>(p)[i];
    case DType::kU32: return static_cast<const uint32_t*>(p)[i];
    default: return static_cast<const int64_t*>(p)[i];
  }
}
inline void store_f(DType d, void* p, int64_t i, float v) {
  switch (d) {
    case DType::kF16: static_cast<uint16_t*>(p)[i] = f32_to_f16(v); break;
    case DType::kBF16: static_cast<uint16_t*>(p)[i] = f32_to_bf16(v); break;
    default: static_cast<float*>(p)[i] = v; break;
  }
}
inline void store_i(DType d, void* p, int64_t i, int64_t v) {
  switch (d) {
    case DType::kBool: static_cast<uint8_t*>(p)[i] = v != 0; break;
    case DType::kU8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v); break;
    case DType::kI8: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v); break;
    case DType::kI16: static_cast<int16_t*>(p)[i] = static_cast<int16_t>(v); break;
    case DType::kI32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); break;
    case DType::kU16: static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(v); break;
    case DType::kU32: static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(v); break;
    default: static_cast<int64_t*>(p)[i] = v; break;
  }
}

}  // namespace rlx::cpu
