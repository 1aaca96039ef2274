// The text side of MlxCalls (mlx_calls.h): C++ spellings of MLX call arguments.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "mlx_calls.h"
#include "rlx/core/error.h"

namespace rlx::mlx_target {

namespace mx = mlx::core;

namespace {

template <typename List, typename Spell>
std::string braced(const std::string& type, const List& items, Spell spell) {
  std::string out = type + "{";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + spell(items[i]);
  return out + "}";
}

// fmt's shortest text that reads back as the same value, made a floating literal ("3" -> "3.0").
std::string floating(std::string text) {
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

template <typename T>
std::string non_finite(T v, const char* type) {
  if (std::isnan(v)) return fmt::format("std::numeric_limits<{}>::quiet_NaN()", type);
  return fmt::format("{}std::numeric_limits<{}>::infinity()", v < 0 ? "-" : "", type);
}

}  // namespace

void CallRecorder::bind(const mx::array& a, std::string name) {
  names_[a.id()] = std::move(name);
  kept_.push_back(a);
}

void CallRecorder::define(const mx::array& result, const std::string& call) {
  std::string name = fmt::format("v{}", defined_++);
  lines_.push_back(fmt::format("const mx::array {} = {};", name, call));
  bind(result, std::move(name));
}

void CallRecorder::comment(const std::string& text) {
  std::string line = "// " + text;
  for (char& c : line)
    if (c == '\n' || c == '\r') c = ' ';
  lines_.push_back(std::move(line));
}

const std::string& CallRecorder::name_of(const mx::array& a) const {
  auto it = names_.find(a.id());
  if (it == names_.end())
    throw_internal_error(
        "mlx: the program writer met an array that no recorded MLX call made (a call in "
        "graph_builder.cpp or native_ops.cpp bypasses RLX_MX); the program would differ from "
        "what the target runs");
  return it->second;
}

std::string CallRecorder::spell(const mx::array& a) const {
  return name_of(a);
}

std::string CallRecorder::spell(const std::optional<mx::array>& a) const {
  return a ? name_of(*a) : "std::nullopt";
}

std::string CallRecorder::spell(const std::vector<mx::array>& v) const {
  return braced("std::vector<mx::array>", v, [&](const mx::array& a) { return name_of(a); });
}

std::string CallRecorder::spell(std::nullopt_t) const {
  return "std::nullopt";
}

std::string CallRecorder::spell(const mx::Shape& s) const {
  return braced("mx::Shape", s, [](int d) { return std::to_string(d); });
}

std::string CallRecorder::spell(const std::vector<int>& v) const {
  return braced("std::vector<int>", v, [](int d) { return std::to_string(d); });
}

std::string CallRecorder::spell(const std::vector<std::pair<int, int>>& v) const {
  return braced("std::vector<std::pair<int, int>>", v, [](const std::pair<int, int>& p) {
    return fmt::format("{{{}, {}}}", p.first, p.second);
  });
}

std::string CallRecorder::spell(mx::Dtype d) const {
  switch (d.val()) {
    case mx::Dtype::Val::bool_:
      return "mx::bool_";
    case mx::Dtype::Val::uint8:
      return "mx::uint8";
    case mx::Dtype::Val::uint16:
      return "mx::uint16";
    case mx::Dtype::Val::uint32:
      return "mx::uint32";
    case mx::Dtype::Val::uint64:
      return "mx::uint64";
    case mx::Dtype::Val::int8:
      return "mx::int8";
    case mx::Dtype::Val::int16:
      return "mx::int16";
    case mx::Dtype::Val::int32:
      return "mx::int32";
    case mx::Dtype::Val::int64:
      return "mx::int64";
    case mx::Dtype::Val::float16:
      return "mx::float16";
    case mx::Dtype::Val::float32:
      return "mx::float32";
    case mx::Dtype::Val::float64:
      return "mx::float64";
    case mx::Dtype::Val::bfloat16:
      return "mx::bfloat16";
    case mx::Dtype::Val::complex64:
      return "mx::complex64";
  }
  throw_internal_error("mlx: an MLX dtype the program writer has no name for");
}

std::string CallRecorder::spell(bool v) const {
  return v ? "true" : "false";
}

std::string CallRecorder::spell(int v) const {
  return std::to_string(v);
}

std::string CallRecorder::spell(int64_t v) const {
  // The literal's type is int64_t, as the builder's argument was; INT64_MIN has no literal.
  if (v == std::numeric_limits<int64_t>::min()) return "std::numeric_limits<int64_t>::min()";
  return fmt::format("int64_t{{{}}}", v);
}

std::string CallRecorder::spell(float v) const {
  if (!std::isfinite(v)) return non_finite(v, "float");
  return floating(fmt::format("{}", v)) + "f";
}

std::string CallRecorder::spell(double v) const {
  if (!std::isfinite(v)) return non_finite(v, "double");
  return floating(fmt::format("{}", v));
}

std::string CallRecorder::spell(const std::string& s) const {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\')
      out += fmt::format("\\{}", static_cast<char>(c));
    else if (c < 0x20 || c >= 0x7f)
      out += fmt::format("\\{:03o}", c);  // octal takes at most three digits: no run-on
    else
      out += static_cast<char>(c);
  }
  return out + "\"";
}

}  // namespace rlx::mlx_target
