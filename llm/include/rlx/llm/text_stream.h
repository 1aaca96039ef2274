// Text of generated tokens, given out as the tokens come. A byte-level token can end inside a
// UTF-8 sequence; its bytes are held until the token that completes the sequence arrives, so
// every piece given out is whole characters, and the pieces together are the text of all the
// tokens decoded at once. With stop strings, the text is also cut before the first stop string
// it contains, and text that could still be the start of one is held until it is known not to be.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rlx/llm/tokenizer.h"

namespace rlx::llm {

// Like transformers' decode (errors = "replace"): each byte that does not start a valid UTF-8
// sequence becomes U+FFFD, so the text (and the JSON holding it) is valid.
std::string replace_invalid_utf8(std::string_view text);

class TextStream {
 public:
  // An empty stop string is a user error (it would stop before the first character).
  explicit TextStream(const Tokenizer& tokenizer, std::vector<std::string> stop_strings = {});
  // The text `token` adds that can be shown now; nothing once a stop string was found.
  std::string add(int64_t token);
  // What is still held (a sequence no token finished, as U+FFFD; the start of a stop string
  // that never completed). Call once, after the last token.
  std::string finish();
  // Index in stop_strings() of the stop string found, once add() found one.
  std::optional<size_t> stopped() const { return stopped_; }
  const std::vector<std::string>& stop_strings() const { return stops_; }
  // Everything add() and finish() gave out so far.
  const std::string& text() const { return text_; }

 private:
  std::string utf8_piece(int64_t token);  // whole characters, before stop strings
  std::string give(std::string piece);    // records and returns `piece`
  std::string window(size_t end) const;   // decode(tokens_[prefix_, end))

  const Tokenizer& tokenizer_;
  std::vector<std::string> stops_;
  std::vector<int64_t> tokens_;
  // Tokens are decoded in a window, not from the first token: decode(tokens_[prefix_, end))
  // minus decode(tokens_[prefix_, read_)) is what the new tokens add. Both decodes start at the
  // same token, so what a decoder does to the first token of its input (SentencePiece drops its
  // leading space) cancels out, and each token costs a few tokens' decoding instead of the
  // whole sequence's.
  size_t prefix_ = 0, read_ = 0;
  size_t given_ = 0;     // bytes past decode(tokens_[prefix_, read_)) already passed on
  std::string pending_;  // whole characters that could be the start of a stop string
  std::string text_;
  std::optional<size_t> stopped_;
};

}  // namespace rlx::llm
