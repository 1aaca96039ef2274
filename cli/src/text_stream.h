// Text of generated tokens, given out as the tokens come (rlx generate --prompt). A byte-level
// token can end inside a UTF-8 sequence; its bytes are held until the token that completes the
// sequence arrives, so every piece given out is whole characters, and the pieces together are
// the text of all the tokens decoded at once.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "rlx/llm/tokenizer.h"

namespace rlx::cli {

// Like transformers' decode (errors = "replace"): each byte that does not start a valid UTF-8
// sequence becomes U+FFFD, so the text (and the JSON holding it) is valid.
std::string replace_invalid_utf8(std::string_view text);

class TokenTextStream {
 public:
  explicit TokenTextStream(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
  // The text `token` adds that can be shown now.
  std::string add(int64_t token);
  // What is still held (a sequence no token finished, as U+FFFD).
  std::string finish();

 private:
  const Tokenizer& tokenizer_;
  std::vector<int64_t> tokens_;
  std::string bytes_;  // the decoded tokens so far
  size_t given_ = 0;   // how many of bytes_ add() has given out
};

}  // namespace rlx::cli
