// The scalar semantics of MIR elementwise ops in f64/i64, for evaluating on the host (constant
// folding, importers' shape computations, the cpu's interpreter). They match the targets: float
// max/min propagate NaN, integers wrap (INT64_MIN / -1 too), integer division or remainder by
// zero gives 0, float -> integer truncates and saturates at the destination's range.
#pragma once
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "rlx/core/dtype.h"

namespace rlx::scalar {

// Float -> integer conversion (docs/ir.md): truncation toward zero, NaN -> 0, saturation at the
// range of `to` (an integer dtype); u64's value is returned as its bits.
inline int64_t float_to_int(DType to, double x) {
  if (x != x) return 0;
  if (to == DType::kU64) {
    if (x <= 0) return 0;
    if (x >= 18446744073709551616.0) return -1;  // all ones
    return static_cast<int64_t>(static_cast<uint64_t>(x));
  }
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  switch (to) {
    case DType::kI8: lo = INT8_MIN, hi = INT8_MAX; break;
    case DType::kU8: lo = 0, hi = UINT8_MAX; break;
    case DType::kI16: lo = INT16_MIN, hi = INT16_MAX; break;
    case DType::kU16: lo = 0, hi = UINT16_MAX; break;
    case DType::kI32: lo = INT32_MIN, hi = INT32_MAX; break;
    case DType::kU32: lo = 0, hi = UINT32_MAX; break;
    case DType::kBool: return x != 0;
    default: break;  // i64: its limits are exact doubles (-2^63) or just below one (2^63)
  }
  if (x <= static_cast<double>(lo)) return lo;
  if (x >= static_cast<double>(hi)) return hi;
  return static_cast<int64_t>(x);
}

inline std::optional<double> float_unary(const std::string& op, double x) {
  if (op == "neg") return -x;
  if (op == "abs") return std::fabs(x);
  if (op == "sign") return std::isnan(x) ? x : static_cast<double>((x > 0) - (x < 0));
  if (op == "exp") return std::exp(x);
  if (op == "log") return std::log(x);
  if (op == "sqrt") return std::sqrt(x);
  if (op == "rsqrt") return 1.0 / std::sqrt(x);
  if (op == "tanh") return std::tanh(x);
  if (op == "erf") return std::erf(x);
  if (op == "sin") return std::sin(x);
  if (op == "cos") return std::cos(x);
  if (op == "floor") return std::floor(x);
  if (op == "ceil") return std::ceil(x);
  if (op == "round") return std::nearbyint(x);
  if (op == "logistic") return 1.0 / (1.0 + std::exp(-x));
  return std::nullopt;
}

inline std::optional<double> float_binary(const std::string& op, double a, double b) {
  if (op == "add") return a + b;
  if (op == "sub") return a - b;
  if (op == "mul") return a * b;
  if (op == "div") return a / b;
  if (op == "max") return (std::isnan(a) || std::isnan(b)) ? NAN : (a > b ? a : b);
  if (op == "min") return (std::isnan(a) || std::isnan(b)) ? NAN : (a < b ? a : b);
  if (op == "pow") return std::pow(a, b);
  if (op == "rem") return std::fmod(a, b);
  return std::nullopt;
}

inline std::optional<int64_t> int_unary(const std::string& op, int64_t x) {
  auto ux = static_cast<uint64_t>(x);
  if (op == "neg") return static_cast<int64_t>(0 - ux);
  if (op == "abs") return x < 0 ? static_cast<int64_t>(0 - ux) : x;
  if (op == "sign") return (x > 0) - (x < 0);
  if (op == "not") return ~x;
  return std::nullopt;
}

inline std::optional<int64_t> int_binary(const std::string& op, int64_t a, int64_t b) {
  auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  if (op == "add") return static_cast<int64_t>(ua + ub);
  if (op == "sub") return static_cast<int64_t>(ua - ub);
  if (op == "mul") return static_cast<int64_t>(ua * ub);
  if (op == "div") return b == 0 ? 0 : (a == INT64_MIN && b == -1) ? INT64_MIN : a / b;
  if (op == "rem") return (b == 0 || (a == INT64_MIN && b == -1)) ? 0 : a % b;
  if (op == "max") return a > b ? a : b;
  if (op == "min") return a < b ? a : b;
  if (op == "and") return a & b;
  if (op == "or") return a | b;
  if (op == "xor") return a ^ b;
  if (op == "pow") {
    if (b < 0) return a == 1 ? 1 : (a == -1 ? (b % 2 ? -1 : 1) : 0);
    uint64_t r = 1, base = ua;
    for (int64_t e = b; e > 0; e >>= 1, base *= base)
      if (e & 1) r *= base;
    return static_cast<int64_t>(r);
  }
  return std::nullopt;
}

template <typename T>
std::optional<bool> compare(const std::string& op, T a, T b) {
  if (op == "eq") return a == b;
  if (op == "ne") return a != b;
  if (op == "lt") return a < b;
  if (op == "le") return a <= b;
  if (op == "gt") return a > b;
  if (op == "ge") return a >= b;
  return std::nullopt;
}

}  // namespace rlx::scalar
