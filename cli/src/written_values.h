// Numbers a person wrote for an input (`--input ids=1,2,3`, a JSON inputs file), kept as written
// until the model says which dtype they take. Converting them never rounds a number to fit:
// 3.5 for an integer input, 300 for u8 or 1e39 for f32 is a user error naming the value.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rlx/core/dtype.h"
#include "rlx/core/tensor.h"

namespace rlx::cli {

struct WrittenValues {
  std::vector<std::string> literals;  // "1", "-0.5", "1e-3", "true", "nan"; row-major order
  // nullopt: one axis of all the values (a single value for an input of rank 0 is a scalar).
  std::optional<std::vector<int64_t>> shape;
  std::optional<DType> dtype;  // when written beside the values; otherwise the input's
  std::string where;           // "--input ids", "in.json entry 'ids'": what errors name
};

// "1, 2,3" -> {"1", "2", "3"}; an empty item is a user error naming `where`.
std::vector<std::string> split_values(const std::string& list, const std::string& where);

// "2x8" -> {2, 8}; "" (nothing after '=') is a scalar's shape {}.
std::vector<int64_t> parse_shape(const std::string& text, const std::string& where);

// The shape the values have for an input of rank `input_rank` (see WrittenValues::shape).
std::vector<int64_t> shape_of(const WrittenValues& values, int64_t input_rank);

// The tensor of `dtype` the values make, in shape_of(values, input_rank). A count that does not
// fill the shape, a value that is not a number of the dtype, or one outside its range is a
// user error.
Tensor make_tensor(const WrittenValues& values, DType dtype, int64_t input_rank);

}  // namespace rlx::cli
