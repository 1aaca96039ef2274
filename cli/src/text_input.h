// Text in place of token ids (--prompt, --text): the model's tokenizer, built by core from the
// TokenizerSpec the importer found in the model's files.
#pragma once
#include <string>
#include <vector>

#include "rlx/core/model.h"
#include "rlx/llm/tokenizer.h"

namespace rlx::cli {

// The model's tokenizer; a user error naming `option` (and suggesting `ids_option`) when the
// model carries none.
Tokenizer model_tokenizer(const Model& model, const std::string& option,
                          const std::string& ids_option);

// The non-empty lines of a text file of one sentence per line (a trailing \r dropped); a user
// error naming `option` when the file is missing, a folder, unreadable or empty.
std::vector<std::string> read_lines(const std::string& path, const std::string& option);

}  // namespace rlx::cli
