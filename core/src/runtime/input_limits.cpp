#include "rlx/core/input_limits.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>

#include "rlx/core/error.h"

namespace rlx {
namespace {

std::string key_of(const InputLimit& l) {
  std::string key = kInputLimitPrefix + l.input;
  if (l.dim >= 0) key += fmt::format(".dim{}", l.dim);
  return key;
}

bool parse_int(std::string_view text, int64_t& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

// "min,max,reason" (the reason may hold commas).
InputLimit parse_limit(const std::string& key, const std::string& value) {
  InputLimit l;
  std::string name = key.substr(std::string(kInputLimitPrefix).size());
  if (size_t dot = name.rfind(".dim"); dot != std::string::npos) {
    if (!parse_int(std::string_view(name).substr(dot + 4), l.dim) || l.dim < 0)
      throw_user_error(
          fmt::format("model metadata '{}': '{}' is not a dim number", key, name.substr(dot + 4)));
    name.resize(dot);
  }
  l.input = name;
  const size_t c1 = value.find(','), c2 = c1 == std::string::npos ? c1 : value.find(',', c1 + 1);
  if (l.input.empty() || c2 == std::string::npos ||
      !parse_int(std::string_view(value).substr(0, c1), l.min) ||
      !parse_int(std::string_view(value).substr(c1 + 1, c2 - c1 - 1), l.max) || l.min > l.max)
    throw_user_error(fmt::format("model metadata '{}' = '{}' is not 'min,max,reason'", key, value));
  l.reason = value.substr(c2 + 1);
  return l;
}

// "[0, 17]": where element `flat` sits in a tensor of `shape`.
std::string position_of(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> at(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    at[d] = flat % shape[d];
    flat /= shape[d];
  }
  return fmt::format("[{}]", fmt::join(at, ", "));
}

template <typename T>
void check_values(const InputLimit& l, const Tensor& t) {
  const T* p = t.as<T>();
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    const auto v = static_cast<int64_t>(p[i]);
    if (v >= l.min && v <= l.max) continue;
    throw_user_error(
        fmt::format("input '{}' holds {} at {}, outside what the model takes: {} to "
                    "{} ({})",
                    l.input, v, position_of(i, t.shape()), l.min, l.max, l.reason));
  }
}

}  // namespace

void add_input_limit(Model& model, const InputLimit& limit) {
  model.metadata[key_of(limit)] = fmt::format("{},{},{}", limit.min, limit.max, limit.reason);
}

InputLimits input_limits(const Model& model) {
  InputLimits limits;
  for (auto it = model.metadata.lower_bound(kInputLimitPrefix);
       it != model.metadata.end() && it->first.rfind(kInputLimitPrefix, 0) == 0; ++it)
    limits.push_back(parse_limit(it->first, it->second));
  return limits;
}

void check_input_limits(const InputLimits& limits, const std::map<std::string, Tensor>& inputs) {
  for (const InputLimit& l : limits) {
    auto it = inputs.find(l.input);
    if (it == inputs.end()) continue;
    const Tensor& t = it->second;
    if (l.dim >= 0) {
      if (l.dim >= t.rank()) continue;  // a rank error is bind()'s to report
      const int64_t n = t.shape()[l.dim];
      if (n < l.min || n > l.max)
        throw_user_error(
            fmt::format("input '{}' {} has size {} in dim {}, outside what the model "
                        "takes: {} to {} ({})",
                        l.input, t.shape_str(), n, l.dim, l.min, l.max, l.reason));
      continue;
    }
    if (t.dtype() == DType::kI64)
      check_values<int64_t>(l, t);
    else if (t.dtype() == DType::kI32)
      check_values<int32_t>(l, t);
  }
}

}  // namespace rlx
