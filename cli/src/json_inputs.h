// A JSON inputs file (`--inputs IN.json`): one member per graph input, either the values as
// nested lists, whose nesting gives the shape (a bare number is a scalar):
//   {"input_ids": [[101, 2023, 102]], "temperature": 0.7}
// or an object that states the shape and dtype beside the values (flat or nested, row-major):
//   {"input_ids": {"dtype": "i64", "shape": [1, 3], "data": [101, 2023, 102]}}
// Without "dtype" the values take the graph input's dtype.
#pragma once
#include <map>
#include <string>

#include "written_values.h"

namespace rlx::cli {

std::map<std::string, WrittenValues> read_json_inputs(const std::string& path);

}  // namespace rlx::cli
