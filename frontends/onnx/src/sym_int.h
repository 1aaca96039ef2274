// Integers known at import time up to the model's symbolic dims: what shape-computation
// subgraphs (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) compute. A SymInt is a monomial
// coef * s1 * s2 ...; that covers the products torch exports build (batch * seq), and becomes
// an rlx Dim ("batch*seq") when it is used as a shape.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rlx/core/shape.h"
#include "rlx/core/tensor.h"

namespace rlx::onnx {

struct SymInt {
  int64_t coef = 0;
  std::vector<std::string> syms;  // sorted; empty for a plain integer

  SymInt() = default;
  SymInt(int64_t v) : coef(v) {}  // NOLINT: plain integers read naturally
  static SymInt from_dim(const Dim& d);
  bool is_static() const { return syms.empty() || coef == 0; }
  int64_t value() const { return coef; }  // meaningful when is_static()
  // Symbols stand for dims, which are never negative.
  bool nonneg() const { return is_static() ? coef >= 0 : coef > 0; }
  std::optional<Dim> to_dim() const;  // nullopt for a negative coefficient with symbols
  bool operator==(const SymInt& o) const;
  std::string str() const;
};

SymInt sym_mul(const SymInt& a, const SymInt& b);
std::optional<SymInt> sym_add(const SymInt& a, const SymInt& b);
std::optional<SymInt> sym_neg(const SymInt& a);
// Exact division (a / b when b divides a as monomials); integer division for plain integers
// follows `floor` (true) or truncation (false).
std::optional<SymInt> sym_div(const SymInt& a, const SymInt& b, bool floor = false);
// Comparisons answer only when the result does not depend on the symbols' values.
std::optional<bool> sym_eq(const SymInt& a, const SymInt& b);
std::optional<bool> sym_lt(const SymInt& a, const SymInt& b);
std::optional<SymInt> sym_max(const SymInt& a, const SymInt& b);
std::optional<SymInt> sym_min(const SymInt& a, const SymInt& b);

// A small integer (or bool) tensor whose elements are SymInts.
struct SymTensor {
  DType dtype = DType::kI64;
  std::vector<int64_t> shape;
  std::vector<SymInt> v;
  int64_t numel() const { return static_cast<int64_t>(v.size()); }
  bool is_static() const;
};

// Integer tensors small enough to be folded on the host as SymTensors.
inline constexpr int64_t kMaxSymElements = 4096;
// Whether a tensor of these (non-negative) dims has at most kMaxSymElements elements, without
// overflowing on huge dims.
inline bool fits_sym(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > kMaxSymElements) return false;
  return true;
}
std::optional<SymTensor> sym_from_tensor(const Tensor& t);
Tensor tensor_from_sym(const SymTensor& s);  // requires is_static()

// The product of dims as one Dim (static, or a canonical product symbol).
Dim dim_product(const std::vector<Dim>& dims);

}  // namespace rlx::onnx
