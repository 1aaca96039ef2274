// The C-family dialects' spelling of values (render_c.cpp's kernel renderer builds on it): types,
// literals, casts, the dialect's math functions and every unary, binary and converting op with
// the semantics render.h lists (wrapping integer arithmetic, NaN-propagating max and min,
// saturating float-to-integer conversion, 16-bit rounding at each op).
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "rlx/sdk/render.h"

namespace rlx::sdk::detail {

class CValues {
 public:
  CValues(const Dialect& d, std::string kernel_name);

 protected:
  // A compile error naming the kernel and the dialect.
  [[noreturn]] void fail(const std::string& what) const;

  // --- types and literals
  const std::string& entry(const DTypeTable& t, DType dt, const char* what) const;
  const std::string& type(DType t) const;  // the compute type
  const std::string& storage_type(DType t) const;
  std::string cast_to(const std::string& type_name, const std::string& x) const;
  std::string cast(DType t, const std::string& x) const;
  std::string declare(const std::string& type_name, const std::string& name, const std::string& x,
                      bool writable = false) const;
  // `c ? t : f` in the dialect's words (WGSL: select(f, t, c)).
  std::string choose(const std::string& c, const std::string& t, const std::string& f) const;
  std::string is_nan(const std::string& x) const;
  std::string restrict_space() const;
  std::string literal(double v, DType t) const;
  // The dialect's function for math op `op` at dtype t, if it has one.
  std::optional<std::string> math(std::string_view op, DType t) const;
  std::string call(std::string_view op, DType t, const std::string& args) const;

  // --- ops
  // Integer add/sub/mul through the wrap type, so overflow wraps instead of being undefined.
  std::string wrapping(DType t, const char* op, const std::string& a, const std::string& b) const;
  std::string negate(DType t, const std::string& a) const;
  std::string unary(const std::string& op, DType t, const std::string& a) const;
  // `t` is the operand dtype.
  std::string binary(const std::string& op, DType t, const std::string& a,
                     const std::string& b) const;
  std::string convert(const std::string& x, DType from, DType to) const;

  const Dialect& d_;

 private:
  std::string kernel_name_;
};

}  // namespace rlx::sdk::detail
