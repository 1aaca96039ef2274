// "Did you mean": the name a slip most likely meant, for options, commands, input names and
// targets alike (the CLI and the registry share it).
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlx {

// Edit distance: insertions, deletions and substitutions of one character, and swaps of two
// neighbouring ones (optimal string alignment).
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `name` within two edits, and no more edits than half its length
// (farther is not a typo), or nullopt.
std::optional<std::string> closest_name(std::string_view name,
                                        const std::vector<std::string>& candidates);

}  // namespace rlx
