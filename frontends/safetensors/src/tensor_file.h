// A lone .safetensors file holds tensors and no graph. It imports as a Model whose "main" graph
// takes no inputs and returns every tensor under its own name, so `rlx run` copies it and tools
// see its contents as the model's outputs; the tensors are also in Graph::weights.
#pragma once
#include <filesystem>

#include "rlx/core/model.h"

namespace rlx::frontends {

Model load_tensor_file(const std::filesystem::path& path);

}  // namespace rlx::frontends
