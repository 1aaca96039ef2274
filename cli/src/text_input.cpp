#include "text_input.h"

#include <fmt/format.h>

#include "errors.h"

namespace rlx::cli {

Tokenizer model_tokenizer(const Model& model, const std::string& option,
                          const std::string& ids_option) {
  if (!model.tokenizer) {
    const std::string hint = fmt::format("give token ids instead: {}", ids_option);
    if (auto it = model.metadata.find(kTokenizerProblemKey); it != model.metadata.end())
      throw CliError(fmt::format("--{} needs a tokenizer, and the {} model's is not supported: {}",
                                 option, model.architecture, it->second),
                     hint);
    throw CliError(fmt::format("--{} needs a tokenizer, and the {} model has none (no "
                               "tokenizer.json or vocab.txt beside its weights)",
                               option, model.architecture),
                   hint);
  }
  return Tokenizer(*model.tokenizer);
}

}  // namespace rlx::cli
