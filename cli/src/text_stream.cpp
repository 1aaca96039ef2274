#include "text_stream.h"

#include "rlx/core/json.h"

namespace rlx::cli {
namespace {

constexpr const char* kReplacementCharacter = "\xEF\xBF\xBD";

// Bytes a sequence with this lead byte has (a stray byte counts as one).
size_t sequence_length(unsigned char lead) {
  return lead < 0xC0 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

// Whether the bytes from `at` to the end are the start of a sequence that more bytes could
// complete.
bool unfinished_at(std::string_view s, size_t at) {
  const auto lead = static_cast<unsigned char>(s[at]);
  if (lead < 0xC0 || at + sequence_length(lead) <= s.size()) return false;
  for (size_t i = at + 1; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) return false;
  return true;
}

// Where such a sequence starts at the end of `s`, or s.size(); invalid bytes before it are
// stepped over one at a time, as replace_invalid_utf8 steps.
size_t unfinished_tail(std::string_view s) {
  size_t start = 0;
  while (auto bad = json::utf8_error_offset(s.substr(start))) {
    const size_t at = start + *bad;
    if (unfinished_at(s, at)) return at;
    start = at + 1;
  }
  return s.size();
}

}  // namespace

std::string replace_invalid_utf8(std::string_view text) {
  std::string out;
  while (auto bad = json::utf8_error_offset(text)) {
    out.append(text.substr(0, *bad));
    out += kReplacementCharacter;
    text.remove_prefix(*bad + 1);
  }
  out.append(text);
  return out;
}

std::string TokenTextStream::add(int64_t token) {
  tokens_.push_back(token);
  // The whole sequence is decoded again: a tokenizer's decoder may join pieces (a leading space
  // dropped, SentencePiece's byte tokens), so only the text of all the tokens is certain. The
  // pieces are cut where the whole text's UTF-8 walk passes, so replacing invalid bytes piece by
  // piece gives what replacing them in the whole text gives.
  bytes_ = tokenizer_.decode(tokens_);
  if (bytes_.size() <= given_) return {};
  std::string_view fresh = std::string_view(bytes_).substr(given_);
  size_t ready = unfinished_tail(fresh);
  given_ += ready;
  return replace_invalid_utf8(fresh.substr(0, ready));
}

std::string TokenTextStream::finish() {
  if (bytes_.size() <= given_) return {};
  std::string rest = replace_invalid_utf8(std::string_view(bytes_).substr(given_));
  given_ = bytes_.size();
  return rest;
}

}  // namespace rlx::cli
