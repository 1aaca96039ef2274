#include "quantized_weights.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rlx/core/error.h"
#include "rlx/core/quant.h"
#include "rlx/core/quantize.h"

namespace rlx::frontends {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string stem(const std::string& s, const std::string& tail) {
  return s.substr(0, s.size() - tail.size());
}

}  // namespace

bool quantized_part(const std::string& name, const std::function<bool(const std::string&)>& has) {
  for (const char* suffix : {kScaleSuffix, kZeroSuffix})
    if (ends_with(name, std::string(".weight") + suffix))
      return has(stem(name, suffix));
  for (const char* suffix : {kInputScale, kInputZero, kInputSmooth})
    if (ends_with(name, suffix)) {
      const std::string weight = stem(name, suffix) + ".weight";
      return has(weight) && has(weight + kScaleSuffix);
    }
  return false;
}

void read_quantized(const std::string& name, Weight& w,
                    const std::function<const Tensor*(const std::string&)>& find) {
  const Tensor& q = w.dense;
  const Tensor& scale = *find(name + kScaleSuffix);
  auto bad = [&](const std::string& why) {
    throw_user_error(fmt::format(
        "quantized weight '{}' ({} [{}], scale {} [{}]): {}; write it again with rlx quantize",
        name, dtype_name(q.dtype()), fmt::join(q.shape(), ", "), dtype_name(scale.dtype()),
        fmt::join(scale.shape(), ", "), why));
  };
  if (q.rank() != 2 || scale.dtype() != DType::kF32) bad("expected a matrix and f32 scales");
  const int64_t n = q.shape()[0];
  if (q.dtype() == DType::kI8) {
    if (scale.numel() != n) bad("int8 weights take one scale per row");
    w.scale = scale;
    const std::string p = stem(name, ".weight");
    const Tensor* xs = find(p + kInputScale);
    const Tensor* xz = find(p + kInputZero);
    if (xs || xz) {
      if (!xs || !xz) bad("a calibrated weight needs both input_scale and input_zero_point");
      w.input_scale = *xs;
      w.input_zero = *xz;
    }
    if (const Tensor* sm = find(p + kInputSmooth)) {
      if (!xs) bad("input_smooth belongs to a calibrated weight (input_scale, input_zero_point)");
      if (sm->dtype() != DType::kF32 || sm->numel() != q.shape()[1])
        bad(fmt::format("input_smooth must be f32 with one value per input ({})", q.shape()[1]));
      w.input_smooth = *sm;
    }
    return;
  }
  const Tensor* zero = find(name + kZeroSuffix);
  if (q.dtype() != DType::kU8 || !zero) bad("int4 weights are u8 pairs with zero points");
  const int64_t k = q.shape()[1] * 2;
  if (scale.rank() != 2 || scale.shape()[0] != n || scale.shape()[1] <= 0 ||
      k % scale.shape()[1] || zero->dtype() != DType::kU8 || zero->shape() != scale.shape())
    bad("int4 scales and zero points are [rows, groups], the groups dividing the row");
  const int64_t group = k / scale.shape()[1];
  const quant::QTypeInfo* t = quant::find_qtype(fmt::format("i4_g{}", group));
  if (!t) bad(fmt::format("groups of {} (rlx has 32, 64 and 128)", group));
  w.qtype = std::string(t->name);
  w.shape = {n, k};
  w.raw = Tensor(DType::kU8, {n, *quant::row_bytes(t->type, k)});
  quant::int4_groups_to_blocks(q.as<uint8_t>(), scale.as<float>(), zero->as<uint8_t>(), n, k,
                               group, w.raw.as<uint8_t>());
  w.dense = Tensor();
}

}  // namespace rlx::frontends
