// Node attributes: a small closed set of value kinds, each with one textual form.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "rlx/core/shape.h"
#include "rlx/core/tensor.h"

namespace rlx {

using IntList = std::vector<int64_t>;
using AttrValue = std::variant<int64_t, double, bool, std::string, IntList, Shape, DType, Tensor>;
// Ordered so the textual form is deterministic.
using Attrs = std::map<std::string, AttrValue>;

std::string attr_str(const AttrValue& v);

}  // namespace rlx
