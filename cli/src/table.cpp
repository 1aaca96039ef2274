#include "table.h"

#include <algorithm>

namespace rlx::cli {

std::string format_table(const std::vector<std::vector<std::string>>& rows, int indent) {
  std::vector<size_t> width;
  for (const auto& row : rows)
    for (size_t c = 0; c + 1 < row.size(); ++c) {
      if (width.size() <= c) width.resize(c + 1, 0);
      width[c] = std::max(width[c], row[c].size());
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line(indent, ' ');
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace rlx::cli
