// The C-family dialects' spelling of values (render_c.cpp's kernel renderer builds on it): types,
// literals, casts, the dialect's math functions and every unary, binary and converting op with
// the semantics render.h lists (wrapping integer arithmetic, NaN-propagating max and min,
// saturating float-to-integer conversion, 16-bit rounding at each op).
#include "render_c_values.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <map>

#include "render_parts.h"
#include "rlx/core/error.h"

namespace rlx::sdk::detail {

CValues::CValues(const Dialect& d, std::string kernel_name)
    : d_(d), kernel_name_(std::move(kernel_name)) {}

void CValues::fail(const std::string& what) const {
  throw Error(ErrorKind::kCompile, fmt::format("cannot render kernel {} in dialect {}: {}",
                                               kernel_name_, d_.name, what));
}

// --- types and literals
const std::string& CValues::entry(const DTypeTable& t, DType dt, const char* what) const {
  const std::string& s = t[static_cast<int>(dt)];
  if (s.empty()) fail(fmt::format("the dialect has no {} for {}", what, dtype_name(dt)));
  return s;
}
const std::string& CValues::type(DType t) const {
  return entry(d_.compute_type, t, "compute type");
}
const std::string& CValues::storage_type(DType t) const {
  return entry(d_.storage_type, t, "storage type");
}
std::string CValues::cast_to(const std::string& type_name, const std::string& x) const {
  return fmt::format(fmt::runtime(d_.cast), fmt::arg("type", type_name), fmt::arg("x", x));
}
std::string CValues::cast(DType t, const std::string& x) const {
  return cast_to(type(t), x);
}
std::string CValues::declare(const std::string& type_name, const std::string& name,
                             const std::string& x, bool writable) const {
  return fmt::format(fmt::runtime(writable ? d_.declare_mutable : d_.declare),
                     fmt::arg("type", type_name), fmt::arg("name", name), fmt::arg("x", x));
}
// `c ? t : f` in the dialect's words (WGSL: select(f, t, c)).
std::string CValues::choose(const std::string& c, const std::string& t,
                            const std::string& f) const {
  return fmt::format(fmt::runtime(d_.conditional), fmt::arg("c", c), fmt::arg("t", t),
                     fmt::arg("f", f));
}
std::string CValues::is_nan(const std::string& x) const {
  return fmt::format(fmt::runtime(d_.is_nan), fmt::arg("x", x));
}
std::string CValues::restrict_space() const {
  return d_.restrict_kw.empty() ? "" : d_.restrict_kw + " ";
}

std::string CValues::literal(double v, DType t) const {
  if (t == DType::kBool) return v != 0 ? "true" : "false";
  if (is_float(t)) {
    std::string s;
    if (std::isnan(v))
      s = d_.nan;
    else if (std::isinf(v))
      s = v > 0 ? d_.infinity : "(-" + d_.infinity + ")";
    if (!s.empty()) return single_float(t) ? s : cast(t, s);
    s = single_float(t) ? float_text(static_cast<float>(v)) : fmt::format("{}", v);
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return s + (single_float(t) ? d_.float_suffix : d_.float64_suffix);
  }
  auto [lo, hi] = int_limits(t);
  // Clamp before converting: a double outside the range would be undefined behaviour here.
  int64_t i = v <= static_cast<double>(lo)   ? lo
              : v >= static_cast<double>(hi) ? hi
                                             : static_cast<int64_t>(v);
  if (t == DType::kI64)
    return i == INT64_MIN ? fmt::format("(-9223372036854775807{0} - 1{0})", d_.int64_suffix)
                          : fmt::format("{}{}", i, d_.int64_suffix);
  if (t == DType::kI32) return i == INT32_MIN ? "(-2147483647 - 1)" : std::to_string(i);
  return cast(t, std::to_string(i));
}

std::optional<std::string> CValues::math(std::string_view op, DType t) const {
  auto it = d_.math.find(op);
  if (it == d_.math.end()) return std::nullopt;
  return it->second + (single_float(t) ? d_.math_float_suffix : "");
}
std::string CValues::call(std::string_view op, DType t, const std::string& args) const {
  auto fn = math(op, t);
  if (!fn) fail(fmt::format("the dialect has no math function for {}", op));
  return fmt::format("{}({})", *fn, args);
}

// Integer add/sub/mul through the wrap type, so overflow wraps instead of being undefined.
std::string CValues::wrapping(DType t, const char* op, const std::string& a,
                              const std::string& b) const {
  const std::string& w = d_.wrap_type[static_cast<int>(t)];
  if (w.empty()) return cast(t, fmt::format("{} {} {}", a, op, b));
  return cast(t, fmt::format("{} {} {}", cast_to(w, a), op, cast_to(w, b)));
}
std::string CValues::negate(DType t, const std::string& a) const {
  return is_float(t) ? "(-" + a + ")" : wrapping(t, "-", literal(0, t), a);
}

std::string CValues::unary(const std::string& op, DType t, const std::string& a) const {
  if (op == "neg") return negate(t, a);
  if (op == "not") return t == DType::kBool ? "(!" + a + ")" : cast(t, "~" + a);
  if (is_float(t)) {
    std::string one = literal(1, t);
    if (op == "sign")  // keeps -0, +0 and NaN as they are, like XLA
      return choose(a + " > 0", one, choose(a + " < 0", "-" + one, a));
    if (op == "rsqrt" && !math(op, t)) return fmt::format("({} / {})", one, call("sqrt", t, a));
    if (op == "logistic" && !math(op, t))
      return fmt::format("({0} / ({0} + {1}))", one, call("exp", t, "-" + a));
    return call(op, t, a);  // exp log sqrt tanh erf sin cos floor ceil round abs
  }
  if (op == "abs") return is_signed_int(t) ? choose(a + " < 0", negate(t, a), a) : a;
  if (op == "sign") return cast(t, fmt::format("({0} > 0) - ({0} < 0)", a));
  fail(fmt::format("unary {} is not defined on {}", op, dtype_name(t)));
}

// `t` is the operand dtype.
std::string CValues::binary(const std::string& op, DType t, const std::string& a,
                            const std::string& b) const {
  static const std::map<std::string, const char*, std::less<>> kCompare = {
      {"eq", "=="}, {"ne", "!="}, {"lt", "<"}, {"le", "<="}, {"gt", ">"}, {"ge", ">="}};
  if (auto it = kCompare.find(op); it != kCompare.end())
    return fmt::format("({} {} {})", a, it->second, b);
  if (op == "and" || op == "or" || op == "xor") {
    if (t == DType::kBool) {
      const char* c = op == "and" ? "&&" : op == "or" ? "||" : "!=";
      return fmt::format("({} {} {})", a, c, b);
    }
    if (is_float(t)) fail(fmt::format("{} is not defined on {}", op, dtype_name(t)));
    const char* c = op == "and" ? "&" : op == "or" ? "|" : "^";
    return cast(t, fmt::format("{} {} {}", a, c, b));
  }
  bool f = is_float(t);
  if (op == "add" || op == "sub" || op == "mul") {
    const char* c = op == "add" ? "+" : op == "sub" ? "-" : "*";
    return f ? fmt::format("({} {} {})", a, c, b) : wrapping(t, c, a, b);
  }
  // NaN-propagating: a is chosen when it is NaN; when only b is NaN both tests fail and b is.
  if (op == "max")
    return f ? choose(fmt::format("({} > {} || {})", a, b, is_nan(a)), a, b)
             : choose(fmt::format("{} > {}", a, b), a, b);
  if (op == "min")
    return f ? choose(fmt::format("({} < {} || {})", a, b, is_nan(a)), a, b)
             : choose(fmt::format("{} < {}", a, b), a, b);
  std::string zero = literal(0, t);
  if (op == "div") {
    if (f) return fmt::format("({} / {})", a, b);
    std::string q = cast(t, fmt::format("{} / {}", a, b));
    if (is_signed_int(t))  // INT_MIN / -1 overflows (and traps on x86): negate with wrap
      q = choose(b + " == -1", negate(t, a), q);
    return choose(b + " == 0", zero, q);
  }
  if (op == "rem") {
    if (f) return call("rem", t, a + ", " + b);
    std::string cond =
        is_signed_int(t) ? fmt::format("{0} == 0 || {0} == -1", b) : fmt::format("{} == 0", b);
    return choose(cond, zero, cast(t, fmt::format("{} % {}", a, b)));
  }
  if (op == "pow") {
    if (f) return call("pow", t, a + ", " + b);
    return cast(t, call("ipow", DType::kI64, cast(DType::kI64, a) + ", " + cast(DType::kI64, b)));
  }
  fail(fmt::format("binary {} is not defined on {}", op, dtype_name(t)));
}

std::string CValues::convert(const std::string& x, DType from, DType to) const {
  if (from == to) return x;
  if (to == DType::kBool) return fmt::format("({} != 0)", x);
  if (to == DType::kF16 || to == DType::kBF16) {
    // Round to the 16-bit format now; the value stays in its float compute type.
    std::string f = single_float(from) ? x : cast(DType::kF32, x);
    std::string bits =
        fmt::format(fmt::runtime(entry(d_.store, to, "store conversion")), fmt::arg("x", f));
    return fmt::format(fmt::runtime(entry(d_.load, to, "load conversion")), fmt::arg("x", bits));
  }
  if (is_float(to)) return single_float(from) && single_float(to) ? x : cast(to, x);
  if (is_float(from) && to == DType::kU64) {
    // Saturating like the other integers: NaN and <= 0 give 0, >= 2^64 all ones.
    std::string max = cast(to, fmt::format("-1{}", d_.int64_suffix));
    return choose(is_nan(x), literal(0, to),
                  choose(fmt::format("{} <= 0.0", x), literal(0, to),
                         choose(fmt::format("{} >= 18446744073709551616.0", x), max, cast(to, x))));
  }
  if (is_float(from)) {
    auto [lo, hi] = int_limits(to);
    // Compared in double, where every limit up to 2^63 is exact: >= 2^63 saturates to max.
    std::string top = hi == INT64_MAX ? std::string("9223372036854775808") : std::to_string(hi);
    return choose(is_nan(x), literal(0, to),
                  choose(fmt::format("{} <= {}.0", x, lo), literal(static_cast<double>(lo), to),
                         choose(fmt::format("{} >= {}.0", x, top),
                                literal(static_cast<double>(hi), to), cast(to, x))));
  }
  return cast(to, x);  // integer and bool narrowing or widening: modular, as C defines it
}

}  // namespace rlx::sdk::detail
