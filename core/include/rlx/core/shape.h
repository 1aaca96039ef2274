// Shapes whose dims are either static sizes or named symbols ("batch", "seq"). A symbolic dim
// is bound when the model runs; kernels of a specialised program see only static sizes.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rlx/core/dtype.h"

namespace rlx {

struct Dim {
  int64_t value = 0;   // meaningful when sym is empty
  // Non-empty for a symbolic dim: a name, or a product of names and at most one leading number
  // ("batch*seq", "4*seq"; factors sorted) that importers derive from flattens and reshapes.
  std::string sym;

  Dim() = default;
  Dim(int64_t v) : value(v) {}  // NOLINT: static dims read naturally as integers
  static Dim symbol(std::string name) { Dim d; d.sym = std::move(name); d.value = -1; return d; }
  bool is_static() const { return sym.empty(); }
  bool operator==(const Dim& o) const { return sym == o.sym && (!sym.empty() || value == o.value); }
  std::string str() const;
};

using Shape = std::vector<Dim>;
using Bindings = std::map<std::string, int64_t>;

std::string shape_str(const Shape& s);                 // "[B,4]"
bool is_static(const Shape& s);
std::vector<int64_t> static_dims(const Shape& s);      // throws if any dim is symbolic
// Number of elements as "static product" and the multiset of symbols; two shapes hold the same
// element count when both agree.
bool same_num_elements(const Shape& a, const Shape& b);
Shape bind_shape(const Shape& s, const Bindings& b);   // throws naming an unbound symbol
// The product of dims; INT64_MAX when it does not fit in int64 (0 when a dim is 0).
int64_t num_elements(const std::vector<int64_t>& dims);

struct TensorType {
  DType dtype = DType::kF32;
  Shape shape;
  bool operator==(const TensorType& o) const { return dtype == o.dtype && shape == o.shape; }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  std::string str() const;  // "f32[B,4]"
};

}  // namespace rlx
