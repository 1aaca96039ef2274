#include "params.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rlx/core/error.h"

namespace rlx::frontends::detail {

ValueId to_f32(GraphBuilder& b, ValueId x) {
  if (b.type(x).dtype == DType::kF32) return x;
  return b.op("Cast", {x}, {{"dtype", DType::kF32}});
}

ValueId Params::stored(const std::string& name, const std::vector<int64_t>& shape) {
  if (auto it = stored_.find(name); it != stored_.end()) return it->second;
  if (!source_.has(name))
    throw_user_error(fmt::format("{}: weight '{}' is missing from the checkpoint", what_, name));
  Weight w = source_.get(name);
  if (!w.qtype.empty())
    throw_user_error(fmt::format(
        "{}: weight '{}' is stored as {}; the model builders take dense weights only so far "
        "(quantized weights need the DequantMatMul op)",
        what_, name, w.qtype));
  const Tensor& t = w.dense;
  if (!t.defined()) throw_user_error(fmt::format("{}: weight '{}' has no data", what_, name));
  if (t.shape() != shape)
    throw_user_error(fmt::format("{}: weight '{}' has shape [{}], the config implies [{}]", what_,
                                 name, fmt::join(t.shape(), ", "), fmt::join(shape, ", ")));
  if (!is_float(t.dtype()) || t.dtype() == DType::kC64)
    throw_user_error(fmt::format("{}: weight '{}' is {}, a real floating-point dtype is needed",
                                 what_, name, dtype_name(t.dtype())));
  ValueId v = b_.param(name, t);
  stored_.emplace(name, v);
  return v;
}

ValueId Params::f32(const std::string& name, const std::vector<int64_t>& shape) {
  if (auto it = cast_.find(name); it != cast_.end()) return it->second;
  ValueId s = stored(name, shape);
  // Narrowing is never silent (ARCHITECTURE.md: f64 -> f32 only when the user asks).
  if (b_.type(s).dtype == DType::kF64)
    throw_user_error(
        fmt::format("{}: weight '{}' is f64; the model builders compute in f32 and "
                    "do not narrow f64 weights silently: convert the checkpoint",
                    what_, name));
  ValueId v = to_f32(b_, s);
  cast_.emplace(name, v);
  return v;
}

std::optional<ValueId> Params::optional_f32(const std::string& name,
                                            const std::vector<int64_t>& shape) {
  if (!source_.has(name)) return std::nullopt;
  return f32(name, shape);
}

}  // namespace rlx::frontends::detail
