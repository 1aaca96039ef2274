#include "rlx/llm/text_stream.h"

#include <algorithm>

#include "rlx/core/error.h"
#include "rlx/core/json.h"

namespace rlx::llm {
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

// Length of the longest end of `text` that is the start of some stop string (and not a whole
// one: whole ones were looked for first).
size_t possible_stop_start(std::string_view text, const std::vector<std::string>& stops) {
  size_t longest = 0;
  for (const std::string& stop : stops)
    for (size_t n = std::min(text.size(), stop.size() - 1); n > longest; --n)
      if (text.substr(text.size() - n) == std::string_view(stop).substr(0, n)) {
        longest = n;
        break;
      }
  return longest;
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

TextStream::TextStream(const Tokenizer& tokenizer, std::vector<std::string> stop_strings)
    : tokenizer_(tokenizer), stops_(std::move(stop_strings)) {
  for (const std::string& s : stops_)
    if (s.empty()) throw_user_error("a stop string is empty: it would match before any text");
}

std::string TextStream::utf8_piece(int64_t token) {
  tokens_.push_back(token);
  const std::string before = window(read_), all = window(tokens_.size());
  const size_t from = std::min(all.size(), before.size() + given_);
  std::string_view fresh = std::string_view(all).substr(from);
  const size_t ready = unfinished_tail(fresh);
  std::string piece = replace_invalid_utf8(fresh.substr(0, ready));
  if (ready == fresh.size()) {
    // Nothing held: the next window starts at the tokens this one added to.
    prefix_ = read_;
    read_ = tokens_.size();
    given_ = 0;
  } else {
    given_ += ready;
  }
  return piece;
}

std::string TextStream::add(int64_t token) {
  if (stopped_) return {};
  std::string piece = utf8_piece(token);
  if (stops_.empty()) return give(std::move(piece));
  pending_ += piece;
  size_t first = std::string::npos;
  for (size_t i = 0; i < stops_.size(); ++i)
    if (size_t at = pending_.find(stops_[i]); at < first) {
      first = at;
      stopped_ = i;
    }
  if (stopped_) {
    std::string shown = pending_.substr(0, first);
    pending_.clear();
    return give(std::move(shown));
  }
  const size_t hold = possible_stop_start(pending_, stops_);
  std::string shown = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return give(std::move(shown));
}

std::string TextStream::finish() {
  if (stopped_) return {};
  std::string rest = std::move(pending_);
  pending_.clear();
  if (read_ < tokens_.size()) {
    // A sequence no token finished: its bytes, replaced.
    const std::string all = window(tokens_.size());
    const size_t from = std::min(all.size(), window(read_).size() + given_);
    rest += replace_invalid_utf8(std::string_view(all).substr(from));
    prefix_ = read_ = tokens_.size();
    given_ = 0;
  }
  return give(std::move(rest));
}

std::string TextStream::window(size_t end) const {
  return tokenizer_.decode(std::vector<int64_t>(tokens_.begin() + static_cast<ptrdiff_t>(prefix_),
                                                tokens_.begin() + static_cast<ptrdiff_t>(end)));
}

std::string TextStream::give(std::string piece) {
  text_ += piece;
  return piece;
}

}  // namespace rlx::llm
