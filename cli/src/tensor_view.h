// How `rlx run` shows an output tensor when it writes no file: every value of a small one, a
// summary (min, max, mean, the first values) of a large one, as text or as JSON. Integers are
// printed exactly and floats as the shortest text that reads back to the same value.
#pragma once
#include <cstdint>
#include <string>

#include "rlx/core/json.h"
#include "rlx/core/tensor.h"

namespace rlx::cli {

// Tensors of up to this many elements are shown whole.
inline constexpr int64_t kShownWhole = 64;
// A summary shows this many values from the start.
inline constexpr int64_t kSummaryFirst = 8;

// "  y f32[2,3]:\n    [[2, 6, 12],\n     [20, 30, 42]]\n" or the summary lines of a large one.
std::string tensor_text(const std::string& name, const Tensor& t);

// {"values": nested lists as numpy's tolist() gives them (a number for a scalar)} or
// {"summary": {"min", "max", "mean", "first", and "nans" when some are NaN}}. Non-finite floats
// are the strings "nan", "inf" and "-inf" (JSON has no numbers for them); complex values are
// [real, imaginary] pairs, and their summary has only "first".
json::Object tensor_json(const Tensor& t);

}  // namespace rlx::cli
