// How a model builder names a param that holds several checkpoint tensors' rows concatenated
// (products that read the same input, fused into one: a decoder's q, k and v): their names
// joined by kFusedWeightSeparator. Whoever maps params back to checkpoint tensors (`rlx
// quantize`) splits the name into its parts.
#pragma once
#include <string>
#include <vector>

namespace rlx {

inline constexpr char kFusedWeightSeparator = '+';

inline std::string fused_weight_name(const std::vector<std::string>& parts) {
  std::string name;
  for (const std::string& p : parts)
    name += (name.empty() ? "" : std::string(1, kFusedWeightSeparator)) + p;
  return name;
}

// The checkpoint tensors behind param `name`: the parts of a fused name, else the name itself.
inline std::vector<std::string> fused_weight_parts(const std::string& name) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t at; (at = name.find(kFusedWeightSeparator, start)) != std::string::npos;
       start = at + 1)
    parts.push_back(name.substr(start, at - start));
  parts.push_back(name.substr(start));
  return parts;
}

}  // namespace rlx
