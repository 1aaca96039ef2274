// Reading the JSON files of a model folder, with the file named in every error.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include "rlx/core/json.h"

namespace rlx::frontends {

json::Value read_json_file(const std::filesystem::path& path);

}  // namespace rlx::frontends
