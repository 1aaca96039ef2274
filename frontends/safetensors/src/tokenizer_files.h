// The tokenizer files of a Hugging Face folder -> rlx::TokenizerSpec (core builds the tokenizer):
//   tokenizer.json  WordPiece -> "wordpiece"; byte-level BPE -> "bpe" (pre-tokenizer from its
//                   split regex: gpt2, llama3 or qwen2); BPE with byte fallback (converted
//                   SentencePiece models) -> "spm"
//   vocab.txt       (no tokenizer.json) -> "wordpiece"
//   tokenizer_config.json  special tokens, add_bos_token / add_eos_token, do_lower_case,
//                          chat_template (or a chat_template.jinja file)
#pragma once
#include <filesystem>
#include <optional>

#include "rlx/core/model.h"
#include "rlx/frontends/builders.h"

namespace rlx::frontends {

struct TokenizerFiles {
  std::optional<TokenizerSpec> spec;
  // Why `spec` is empty although there is a tokenizer file: its model type has no rlx equivalent
  // (Unigram). Names the file and the type; empty otherwise.
  std::string unsupported;
  // The Jinja chat template (chat_template.jinja or tokenizer_config.json); empty when none.
  std::string chat_template;
};

// No spec when the folder has no tokenizer files, or an unsupported kind (then `unsupported`
// says so). `config` supplies bos/eos/pad ids the tokenizer files leave out.
TokenizerFiles read_tokenizer_files(const std::filesystem::path& folder,
                                    const TransformerConfig& config);

}  // namespace rlx::frontends
