// safetensors files: how the CLI exchanges tensors with users. Reading validates the header the
// way the reference reader does and names the file and tensor in every error.
#pragma once
#include <filesystem>
#include <map>
#include <string>

#include "rlx/core/tensor.h"

namespace rlx {

using TensorMap = std::map<std::string, Tensor>;

TensorMap read_safetensors(const std::filesystem::path& path);
void write_safetensors(const std::filesystem::path& path, const TensorMap& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace rlx
