#include "rlx/core/spelling.h"

#include <algorithm>

namespace rlx {

size_t edit_distance(std::string_view a, std::string_view b) {
  // Rows i - 2, i - 1 and i of the table: swapped neighbours ("rnu" for "run") are one slip.
  std::vector<size_t> before(b.size() + 1), prev(b.size() + 1), row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      row[j] =
          std::min({prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        row[j] = std::min(row[j], before[j - 2] + 1);
    }
    std::swap(before, prev);
    std::swap(prev, row);
  }
  return prev[b.size()];
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

}  // namespace rlx
