// config.json (and generation_config.json) of a Hugging Face folder -> TransformerConfig.
#pragma once
#include <filesystem>

#include "rlx/frontends/builders.h"

namespace rlx::frontends {

// Reads folder/config.json; the family comes from model_type, else from architectures[0].
// Throws a user error naming the file, the key and what is wrong (missing, wrong type, an
// unsupported value such as rope scaling or sliding-window attention).
TransformerConfig read_hf_config(const std::filesystem::path& folder);

}  // namespace rlx::frontends
