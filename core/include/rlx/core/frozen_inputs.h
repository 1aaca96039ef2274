// The Model::metadata key under which an importer lists the graph inputs it froze: those of the
// values offered in ImportOptions::input_values that an op needed at compile time (a Reshape's
// shape, a Slice's starts, a TopK's k...). Its own header rather than a field of ImportOptions or
// Model, so no type crossing the importer boundary changes (decision 27's rule; ABI stays 2.0).
#pragma once
#include <string>
#include <vector>

namespace rlx {

// Value: the frozen inputs' names, in the order the importer froze them, joined by newlines
// (an ONNX name may hold a comma). Absent when none was frozen.
inline constexpr const char* kFrozenInputsKey = "frozen_inputs";

inline std::vector<std::string> split_frozen_inputs(const std::string& value) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start < value.size()) {
    size_t end = value.find('\n', start);
    if (end == std::string::npos) end = value.size();
    names.push_back(value.substr(start, end - start));
    start = end + 1;
  }
  return names;
}

}  // namespace rlx
