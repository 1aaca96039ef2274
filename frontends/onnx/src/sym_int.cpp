#include "sym_int.h"

#include <algorithm>
#include <cstring>

#include "rlx/core/error.h"

namespace rlx::onnx {

namespace {

bool mul_overflows(int64_t a, int64_t b, int64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}

}  // namespace

SymInt SymInt::from_dim(const Dim& d) {
  if (d.is_static()) return SymInt(d.value);
  // Product symbols ("2*batch*seq") split back into their factors.
  SymInt s(1);
  size_t start = 0;
  const std::string& str = d.sym;
  while (start <= str.size()) {
    size_t end = str.find('*', start);
    if (end == std::string::npos) end = str.size();
    std::string f = str.substr(start, end - start);
    if (!f.empty() &&
        std::all_of(f.begin(), f.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
        f.size() < 18)
      s.coef *= std::stoll(f);
    else
      s.syms.push_back(f);
    start = end + 1;
  }
  std::sort(s.syms.begin(), s.syms.end());
  return s;
}

std::optional<Dim> SymInt::to_dim() const {
  if (is_static()) return coef >= 0 ? std::optional<Dim>(Dim(coef)) : std::nullopt;
  if (coef <= 0) return std::nullopt;
  std::string s = coef == 1 ? "" : std::to_string(coef);
  for (const auto& f : syms) s += (s.empty() ? "" : "*") + f;
  return Dim::symbol(s);
}

bool SymInt::operator==(const SymInt& o) const {
  if (is_static() && o.is_static()) return coef == o.coef;
  return coef == o.coef && syms == o.syms;
}

std::string SymInt::str() const {
  if (is_static()) return std::to_string(coef);
  std::string s = coef == 1 ? "" : std::to_string(coef);
  for (const auto& f : syms) s += (s.empty() ? "" : "*") + f;
  return s;
}

SymInt sym_mul(const SymInt& a, const SymInt& b) {
  SymInt r;
  if (mul_overflows(a.coef, b.coef, &r.coef)) r.coef = a.coef * b.coef;  // wraps like ONNX int64
  if (r.coef == 0) return SymInt(0);
  r.syms = a.syms;
  r.syms.insert(r.syms.end(), b.syms.begin(), b.syms.end());
  std::sort(r.syms.begin(), r.syms.end());
  return r;
}

std::optional<SymInt> sym_add(const SymInt& a, const SymInt& b) {
  if (a.is_static() && b.is_static())
    return SymInt(
        static_cast<int64_t>(static_cast<uint64_t>(a.coef) + static_cast<uint64_t>(b.coef)));
  if (a.is_static() && a.coef == 0) return b;
  if (b.is_static() && b.coef == 0) return a;
  if (a.syms != b.syms) return std::nullopt;
  SymInt r = a;
  r.coef = a.coef + b.coef;
  if (r.coef == 0) return SymInt(0);
  return r;
}

std::optional<SymInt> sym_neg(const SymInt& a) {
  SymInt r = a;
  r.coef = static_cast<int64_t>(0 - static_cast<uint64_t>(a.coef));
  return r;
}

std::optional<SymInt> sym_div(const SymInt& a, const SymInt& b, bool floor) {
  if (b.is_static() && b.coef == 0) return std::nullopt;
  if (a.is_static() && b.is_static()) {
    if (a.coef == INT64_MIN && b.coef == -1) return std::nullopt;
    int64_t q = a.coef / b.coef;
    if (floor && (a.coef % b.coef != 0) && ((a.coef < 0) != (b.coef < 0))) --q;
    return SymInt(q);
  }
  if (a.is_static()) return std::nullopt;
  // Monomial division: every symbol of b must appear in a, and the coefficients divide.
  std::vector<std::string> rest = a.syms;
  for (const auto& s : b.syms) {
    auto it = std::find(rest.begin(), rest.end(), s);
    if (it == rest.end()) return std::nullopt;
    rest.erase(it);
  }
  if (a.coef % b.coef != 0) return std::nullopt;
  SymInt r;
  r.coef = a.coef / b.coef;
  r.syms = rest;
  return r;
}

std::optional<bool> sym_eq(const SymInt& a, const SymInt& b) {
  if (a.is_static() && b.is_static()) return a.coef == b.coef;
  if (a == b) return true;
  // A dim is never negative: a symbolic size cannot equal a negative constant.
  if (a.is_static() && a.coef < 0 && b.nonneg()) return false;
  if (b.is_static() && b.coef < 0 && a.nonneg()) return false;
  return std::nullopt;
}

std::optional<bool> sym_lt(const SymInt& a, const SymInt& b) {
  if (a.is_static() && b.is_static()) return a.coef < b.coef;
  if (a == b) return false;
  if (a.is_static() && a.coef < 0 && b.nonneg()) return true;
  if (b.is_static() && b.coef <= 0 && a.nonneg()) return false;
  return std::nullopt;
}

std::optional<SymInt> sym_max(const SymInt& a, const SymInt& b) {
  auto lt = sym_lt(a, b);
  if (!lt) return std::nullopt;
  return *lt ? b : a;
}

std::optional<SymInt> sym_min(const SymInt& a, const SymInt& b) {
  auto lt = sym_lt(a, b);
  if (!lt) return std::nullopt;
  return *lt ? a : b;
}

bool SymTensor::is_static() const {
  return std::all_of(v.begin(), v.end(), [](const SymInt& s) { return s.is_static(); });
}

std::optional<SymTensor> sym_from_tensor(const Tensor& t) {
  if (!(is_integer(t.dtype()) || t.dtype() == DType::kBool) || t.numel() > kMaxSymElements)
    return std::nullopt;
  SymTensor s;
  s.dtype = t.dtype();
  s.shape = t.shape();
  s.v.reserve(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t x = 0;
    switch (t.dtype()) {
      case DType::kI64:
        x = t.as<int64_t>()[i];
        break;
      case DType::kI32:
        x = t.as<int32_t>()[i];
        break;
      case DType::kI16:
        x = t.as<int16_t>()[i];
        break;
      case DType::kI8:
        x = t.as<int8_t>()[i];
        break;
      default:
        x = t.as<uint8_t>()[i];
        break;
    }
    s.v.emplace_back(x);
  }
  return s;
}

Tensor tensor_from_sym(const SymTensor& s) {
  RLX_CHECK(s.is_static(), "tensor_from_sym on a symbolic tensor");
  Tensor t(s.dtype, s.shape);
  for (int64_t i = 0; i < s.numel(); ++i) {
    int64_t x = s.v[i].coef;
    switch (s.dtype) {
      case DType::kI64:
        t.as<int64_t>()[i] = x;
        break;
      case DType::kI32:
        t.as<int32_t>()[i] = static_cast<int32_t>(x);
        break;
      case DType::kI16:
        t.as<int16_t>()[i] = static_cast<int16_t>(x);
        break;
      case DType::kI8:
        t.as<int8_t>()[i] = static_cast<int8_t>(x);
        break;
      case DType::kBool:
        t.as<uint8_t>()[i] = x != 0;
        break;
      default:
        t.as<uint8_t>()[i] = static_cast<uint8_t>(x);
        break;
    }
  }
  return t;
}

Dim dim_product(const std::vector<Dim>& dims) {
  SymInt p(1);
  for (const Dim& d : dims) p = sym_mul(p, SymInt::from_dim(d));
  return *p.to_dim();
}

}  // namespace rlx::onnx
