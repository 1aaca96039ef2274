#include "tensor_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <vector>

#include "rlx/core/half.h"

namespace rlx::cli {
namespace {

// One element, read exactly: a 64-bit integer keeps every digit, a float keeps its own width so
// it prints as the shortest text of that width.
struct Element {
  enum Kind { kSigned, kUnsigned, kBool, kF32, kF64, kComplex } kind = kF64;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0, imag = 0;  // kF32 holds a float's exact value

  double real() const {
    return kind == kSigned     ? static_cast<double>(i)
           : kind == kUnsigned ? static_cast<double>(u)
           : kind == kBool     ? static_cast<double>(i)
                               : f;
  }
  bool is_nan() const { return (kind == kF32 || kind == kF64) && std::isnan(f); }
  bool less(const Element& o) const {
    return kind == kSigned ? i < o.i : kind == kUnsigned ? u < o.u : real() < o.real();
  }
};

template <class T>
T load(const Tensor& t, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(t.data()) + i * static_cast<int64_t>(sizeof(T)),
              sizeof(T));
  return v;
}

Element element(const Tensor& t, int64_t i) {
  Element e;
  switch (t.dtype()) {
    case DType::kBool:
      e.kind = Element::kBool, e.i = load<uint8_t>(t, i) != 0;
      break;
    case DType::kI8:
      e.kind = Element::kSigned, e.i = load<int8_t>(t, i);
      break;
    case DType::kI16:
      e.kind = Element::kSigned, e.i = load<int16_t>(t, i);
      break;
    case DType::kI32:
      e.kind = Element::kSigned, e.i = load<int32_t>(t, i);
      break;
    case DType::kI64:
      e.kind = Element::kSigned, e.i = load<int64_t>(t, i);
      break;
    case DType::kU8:
      e.kind = Element::kUnsigned, e.u = load<uint8_t>(t, i);
      break;
    case DType::kU16:
      e.kind = Element::kUnsigned, e.u = load<uint16_t>(t, i);
      break;
    case DType::kU32:
      e.kind = Element::kUnsigned, e.u = load<uint32_t>(t, i);
      break;
    case DType::kU64:
      e.kind = Element::kUnsigned, e.u = load<uint64_t>(t, i);
      break;
    case DType::kF16:
      e.kind = Element::kF32, e.f = f16_to_f32(load<uint16_t>(t, i));
      break;
    case DType::kBF16:
      e.kind = Element::kF32, e.f = bf16_to_f32(load<uint16_t>(t, i));
      break;
    case DType::kF32:
      e.kind = Element::kF32, e.f = load<float>(t, i);
      break;
    case DType::kF64:
      e.kind = Element::kF64, e.f = load<double>(t, i);
      break;
    case DType::kC64: {
      const auto c = load<std::complex<float>>(t, i);
      e.kind = Element::kComplex, e.f = c.real(), e.imag = c.imag();
      break;
    }
  }
  return e;
}

std::string float_text(double v, bool single) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  return single ? fmt::format("{}", static_cast<float>(v)) : fmt::format("{}", v);
}

std::string text(const Element& e) {
  switch (e.kind) {
    case Element::kSigned:
      return std::to_string(e.i);
    case Element::kUnsigned:
      return std::to_string(e.u);
    case Element::kBool:
      return e.i ? "true" : "false";
    case Element::kF32:
    case Element::kF64:
      return float_text(e.f, e.kind == Element::kF32);
    case Element::kComplex:
      return fmt::format("{}{}{}j", float_text(e.f, true), e.imag < 0 ? "" : "+",
                         float_text(e.imag, true));
  }
  return {};
}

json::Value json_float(double v, bool single) {
  if (!std::isfinite(v)) return json::Value{float_text(v, single)};
  return json::Value{json::Number{v, float_text(v, single)}};
}

json::Value json_of(const Element& e) {
  switch (e.kind) {
    case Element::kSigned:
    case Element::kUnsigned:
      return json::Value{json::Number{e.real(), text(e)}};
    case Element::kBool:
      return json::Value{e.i != 0};
    case Element::kF32:
    case Element::kF64:
      return json_float(e.f, e.kind == Element::kF32);
    case Element::kComplex:
      return json::Value{json::Array{json_float(e.f, true), json_float(e.imag, true)}};
  }
  return {};
}

// Nested lists of `cells` (already padded) in numpy's layout: one row of the last axis a line,
// each deeper axis opening a bracket one column further right.
void nest(const std::vector<int64_t>& shape, size_t axis, const std::vector<std::string>& cells,
          int64_t& next, const std::string& indent, std::string& out) {
  out += "[";
  const int64_t n = shape[axis];
  for (int64_t k = 0; k < n; ++k) {
    if (axis + 1 == shape.size()) {
      out += (k ? ", " : "") + cells[static_cast<size_t>(next++)];
      continue;
    }
    if (k) out += ",\n" + std::string(shape.size() - axis > 2 ? 1 : 0, '\n') + indent + " ";
    nest(shape, axis + 1, cells, next, indent + " ", out);
  }
  out += "]";
}

// numpy's tolist(): lists nested as deep as the rank, a bare number for a scalar.
json::Value nested_json(const Tensor& t, size_t axis, int64_t& next) {
  if (axis == t.shape().size()) return json_of(element(t, next++));
  json::Array a;
  for (int64_t k = 0; k < t.shape()[axis]; ++k) a.push_back(nested_json(t, axis + 1, next));
  return json::Value{std::move(a)};
}

struct Summary {
  Element min, max;
  double mean = 0;
  int64_t nans = 0;
  bool ordered = true;  // complex values have no min or max
};

Summary summarize(const Tensor& t) {
  Summary s;
  const int64_t n = t.numel();
  double sum = 0;
  bool seen = false;
  for (int64_t i = 0; i < n; ++i) {
    const Element e = element(t, i);
    if (e.kind == Element::kComplex) {
      s.ordered = false;
      return s;
    }
    sum += e.real();
    if (e.is_nan()) {
      ++s.nans;
      continue;
    }
    if (!seen || e.less(s.min)) s.min = e;
    if (!seen || s.max.less(e)) s.max = e;
    seen = true;
  }
  if (!seen) s.min = s.max = element(t, 0);  // all NaN
  s.mean = sum / static_cast<double>(n);
  return s;
}

}  // namespace

std::string tensor_text(const std::string& name, const Tensor& t) {
  const std::string head = fmt::format("  {} {}{}:", name, dtype_name(t.dtype()), t.shape_str());
  const int64_t n = t.numel();
  if (n <= kShownWhole) {
    std::vector<std::string> cells;
    size_t width = 0;
    for (int64_t i = 0; i < n; ++i) {
      cells.push_back(text(element(t, i)));
      width = std::max(width, cells.back().size());
    }
    if (t.rank() == 0) return head + " " + cells.front() + "\n";
    if (n == 0) return head + " (no values)\n";
    if (t.rank() == 1) return fmt::format("{} [{}]\n", head, fmt::join(cells, ", "));
    for (std::string& c : cells) c.insert(0, width - c.size(), ' ');
    std::string body;
    int64_t next = 0;
    nest(t.shape(), 0, cells, next, "    ", body);
    return head + "\n    " + body + "\n";
  }
  std::vector<std::string> first;
  for (int64_t i = 0; i < kSummaryFirst; ++i) first.push_back(text(element(t, i)));
  const Summary s = summarize(t);
  std::string stats = s.ordered
                          ? fmt::format(" min {}, max {}, mean {:.6g}{}", text(s.min), text(s.max),
                                        s.mean, s.nans ? fmt::format(", {} NaN", s.nans) : "")
                          : "";
  return fmt::format("{} {} values,{}\n    first {}: [{}, ...]\n", head, n,
                     stats.empty() ? "" : stats, kSummaryFirst, fmt::join(first, ", "));
}

json::Object tensor_json(const Tensor& t) {
  const int64_t n = t.numel();
  if (n <= kShownWhole) {
    int64_t next = 0;
    return {{"values", nested_json(t, 0, next)}};
  }
  json::Array first;
  for (int64_t i = 0; i < kSummaryFirst; ++i) first.push_back(json_of(element(t, i)));
  const Summary s = summarize(t);
  json::Object summary;
  if (s.ordered) {
    summary.emplace_back("min", json_of(s.min));
    summary.emplace_back("max", json_of(s.max));
    summary.emplace_back("mean", json_float(s.mean, false));
    if (s.nans)
      summary.emplace_back(
          "nans", json::Value{json::Number{static_cast<double>(s.nans), std::to_string(s.nans)}});
  }
  summary.emplace_back("first", json::Value{std::move(first)});
  return {{"summary", json::Value{std::move(summary)}}};
}

}  // namespace rlx::cli
