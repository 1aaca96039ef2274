// tokenizer.ggml.* metadata -> rlx::TokenizerSpec, with llama.cpp's defaults for missing keys.
#pragma once
#include <optional>
#include <string>

#include "gguf_reader.h"
#include "rlx/core/model.h"

namespace rlx::gguf {

// nullopt when the file has no tokenizer; `why_not` then says so (no tokenizer.ggml.model, or a
// tokenizer model rlx does not implement such as "t5"). Malformed tokenizer data is a user error
// naming the file and key.
std::optional<TokenizerSpec> tokenizer_spec(const GgufFile& f, std::string* why_not = nullptr);

}  // namespace rlx::gguf
