// Plain-text tables for terminal listings: columns padded to their widest cell, except the last,
// which is free text (a reason) and is never padded.
#pragma once
#include <string>
#include <vector>

namespace rlx::cli {

std::string format_table(const std::vector<std::vector<std::string>>& rows, int indent = 2);

}  // namespace rlx::cli
