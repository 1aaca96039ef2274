#include "rlx/core/shape.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "rlx/core/error.h"

namespace rlx {

namespace {

// A symbolic dim may be a product of factors, "batch*seq" or "4*seq" (importers derive such
// dims from reshapes and flattens); calls f(coefficient, "") for a number, f(1, name) for a symbol.
template <typename F>
void for_each_factor(const std::string& sym, F&& f) {
  size_t start = 0;
  for (;;) {
    size_t end = sym.find('*', start);
    std::string factor = sym.substr(start, end == std::string::npos ? std::string::npos : end - start);
    bool number = !factor.empty() && factor.size() < 19 &&
                  std::all_of(factor.begin(), factor.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (number) f(std::stoll(factor), std::string());
    else f(1, factor);
    if (end == std::string::npos) return;
    start = end + 1;
  }
}

}  // namespace

std::string Dim::str() const {
  return is_static() ? std::to_string(value) : sym;
}

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ',';
    out += s[i].str();
  }
  return out + "]";
}

bool is_static(const Shape& s) {
  return std::all_of(s.begin(), s.end(), [](const Dim& d) { return d.is_static(); });
}

std::vector<int64_t> static_dims(const Shape& s) {
  std::vector<int64_t> dims;
  dims.reserve(s.size());
  for (const Dim& d : s) {
    if (!d.is_static())
      throw_user_error(fmt::format("shape {} has symbolic dim '{}' where a static shape is needed",
                                   shape_str(s), d.sym));
    dims.push_back(d.value);
  }
  return dims;
}

bool same_num_elements(const Shape& a, const Shape& b) {
  if (a == b) return true;
  // A product past int64 (a fuzzer's shape) is no count that can be compared: such shapes
  // match only when equal, above. (Found by rten_fuzz: the product used to wrap around.)
  auto split = [](const Shape& s, int64_t& product, std::vector<std::string>& syms) {
    product = 1;
    bool overflow = false;
    auto times = [&](int64_t c) { overflow = __builtin_mul_overflow(product, c, &product) || overflow; };
    for (const Dim& d : s) {
      if (d.is_static())
        times(d.value);
      else
        for_each_factor(d.sym, [&](int64_t c, const std::string& f) {
          if (f.empty()) times(c);
          else syms.push_back(f);
        });
    }
    std::sort(syms.begin(), syms.end());
    return !overflow;
  };
  int64_t pa, pb;
  std::vector<std::string> sa, sb;
  const bool fits_a = split(a, pa, sa), fits_b = split(b, pb, sb);
  return fits_a && fits_b && pa == pb && sa == sb;
}

Shape bind_shape(const Shape& s, const Bindings& b) {
  Shape out;
  out.reserve(s.size());
  for (const Dim& d : s) {
    if (d.is_static()) {
      out.push_back(d);
      continue;
    }
    int64_t value = 1;
    for_each_factor(d.sym, [&](int64_t c, const std::string& f) {
      if (f.empty()) {
        value *= c;
        return;
      }
      auto it = b.find(f);
      if (it == b.end())
        throw_user_error(fmt::format("symbol '{}' is not bound (shape {})", f, shape_str(s)));
      value *= it->second;
    });
    out.emplace_back(value);
  }
  return out;
}

int64_t num_elements(const std::vector<int64_t>& dims) {
  for (int64_t d : dims)
    if (d == 0) return 0;
  int64_t n = 1;
  for (int64_t d : dims)
    if (__builtin_mul_overflow(n, d, &n)) return INT64_MAX;  // saturates: never a wrapped size
  return n;
}

std::string TensorType::str() const {
  return fmt::format("{}{}", dtype_name(dtype), shape_str(shape));
}

}  // namespace rlx
