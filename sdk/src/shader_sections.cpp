#include <string>
#include <utility>
#include <vector>

#include "rlx/sdk/render.h"

namespace rlx::sdk {

std::vector<std::pair<std::string, std::string>> shader_sections(const std::string& source) {
  const std::string marker = kShaderKernelMarker;
  std::vector<std::pair<std::string, std::string>> out;
  size_t first = source.find(marker);
  const std::string prelude = source.substr(0, first);
  for (size_t at = first; at != std::string::npos;) {
    size_t name_end = source.find('\n', at);
    if (name_end == std::string::npos) break;
    std::string symbol = source.substr(at + marker.size(), name_end - at - marker.size());
    size_t next = source.find(marker, name_end);
    std::string body = source.substr(
        name_end + 1, next == std::string::npos ? std::string::npos : next - name_end - 1);
    out.emplace_back(symbol, prelude + body);
    at = next;
  }
  return out;
}

}  // namespace rlx::sdk
