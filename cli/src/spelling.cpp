#include "spelling.h"

#include <algorithm>

namespace rlx::cli {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::optional<std::string> closest_name(std::string_view name,
                                        const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  size_t best_distance = 3;
  for (const std::string& c : candidates)
    // Two edits of a three-letter name are a different name, not a slip.
    if (size_t d = edit_distance(name, c);
        d < best_distance && 2 * d <= std::max(name.size(), c.size()))
      best_distance = d, best = c;
  return best;
}

}  // namespace rlx::cli
