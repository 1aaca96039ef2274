// Pre-tokenizer regexes of byte-level BPE models, written out by hand over codepoint classes
// (as llama.cpp's unicode_regex_split_custom_* do) instead of through a regex engine:
//   gpt2:   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   llama3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//           ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   qwen2:  llama3 with \p{N} (one digit per word) instead of \p{N}{1,3}
//   qwen35: qwen2 with [\p{L}\p{M}]+ words and marks out of ?[^\s\p{L}\p{M}\p{N}]+
// and, as llama.cpp chains regexes (each splits the pieces of the one before; text between
// matches stays a piece of its own):
//   starcoder: \p{N} then gpt2
//   falcon:    [\p{P}$+<=>^~|`]+ then gpt2 then [0-9][0-9][0-9]
//   deepseek-coder: [\r\n] then \s?\p{L}+ then \s?\p{P}+ then [一-龥ࠀ-一가-퟿]+ then \p{N}
#include "tokenizer_impl.h"
#include "tokenizer_unicode.h"

namespace rlx::tok {

namespace {

constexpr uint32_t kEnd = 0xFFFFFFFF;  // "past the text"

class Splitter {
 public:
  // marks: \p{M} counts with letters (qwen35's [\p{L}\p{M}]+).
  explicit Splitter(std::string_view text, bool marks = false)
      : text_(text), cps_(utf8_decode(text)), marks_(marks) {
    // Byte offset of each codepoint (invalid bytes decode to one U+FFFD each).
    offsets_.reserve(cps_.size() + 1);
    size_t at = 0;
    for (size_t i = 0; i < cps_.size(); ++i) {
      offsets_.push_back(at);
      auto b0 = static_cast<uint8_t>(text[at]);
      size_t n = utf8_len(b0);
      at += cps_[i] == 0xFFFD && !valid_at(at, n) ? 1 : n;
    }
    offsets_.push_back(text.size());
  }

  size_t size() const { return cps_.size(); }
  uint32_t cp(size_t i) const { return i < cps_.size() ? cps_[i] : kEnd; }
  bool letter(size_t i) const {
    return i < size() && (cp_flags(cps_[i]) & (marks_ ? kLetter | kMark : kLetter));
  }
  // \p{L} alone, for the optional prefix [^\r\n\p{L}\p{N}] (which a mark may be).
  bool strict_letter(size_t i) const { return i < size() && (cp_flags(cps_[i]) & kLetter); }
  bool number(size_t i) const { return i < size() && (cp_flags(cps_[i]) & kNumber); }
  bool space(size_t i) const { return i < size() && is_whitespace(cps_[i]); }
  // Any codepoint class at all: false only past the end.
  bool exists(size_t i) const { return i < size(); }
  bool other(size_t i) const { return exists(i) && !space(i) && !letter(i) && !number(i); }


  void emit(size_t from, size_t to, std::vector<std::string>& out) const {
    if (to > from) out.emplace_back(text_.substr(offsets_[from], offsets_[to] - offsets_[from]));
  }

 private:
  bool valid_at(size_t at, size_t n) const {
    if (n == 1) return static_cast<uint8_t>(text_[at]) < 0x80;
    if (at + n > text_.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<uint8_t>(text_[at + k]) & 0xC0) != 0x80) return false;
    return true;
  }
  std::string_view text_;
  std::vector<uint32_t> cps_;
  std::vector<size_t> offsets_;
  bool marks_;
};

uint32_t lower_ascii(uint32_t c) {
  return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

// 's 't 're 've 'm 'll 'd at pos: length matched (0 if none).
size_t contraction(const Splitter& s, size_t pos, bool any_case) {
  if (s.cp(pos) != '\'') return 0;
  auto low = [&](size_t i) { return any_case ? lower_ascii(s.cp(i)) : s.cp(i); };
  uint32_t c1 = low(pos + 1), c2 = low(pos + 2);
  if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
  if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
  return 0;
}

// \s+(?!\S)|\s+ at pos (which is whitespace): a run followed by more text leaves its last
// whitespace to start the next word.
size_t whitespace_run(const Splitter& s, size_t pos) {
  size_t n = 0;
  while (s.space(pos + n)) ++n;
  if (n > 1 && s.exists(pos + n)) --n;
  return n;
}

std::vector<std::string> split_gpt2(const Splitter& s) {
  std::vector<std::string> out;
  for (size_t pos = 0; pos < s.size();) {
    size_t start = pos;
    if (size_t n = contraction(s, pos, false)) {
      pos += n;
    } else {
      size_t p = s.cp(pos) == ' ' ? pos + 1 : pos;  // optional leading space
      if (s.letter(p)) {
        for (pos = p; s.letter(pos);) ++pos;
      } else if (s.number(p)) {
        for (pos = p; s.number(pos);) ++pos;
      } else if (s.other(p)) {
        for (pos = p; s.other(pos);) ++pos;
      } else if (s.space(pos)) {
        pos += whitespace_run(s, pos);
      } else {
        ++pos;
      }
    }
    s.emit(start, pos, out);
  }
  return out;
}

std::vector<std::string> split_llama3(const Splitter& s, size_t max_digits) {
  std::vector<std::string> out;
  auto crlf = [&](size_t i) { return s.cp(i) == '\r' || s.cp(i) == '\n'; };
  for (size_t pos = 0; pos < s.size();) {
    size_t start = pos;
    uint32_t c = s.cp(pos);
    if (size_t n = contraction(s, pos, true)) {
      pos += n;
    } else if (s.letter(pos) || (s.exists(pos) && !crlf(pos) && !s.strict_letter(pos) &&
                                 !s.number(pos) && s.letter(pos + 1))) {
      // [^\r\n\p{L}\p{N}]?\p{L}+
      for (++pos; s.letter(pos);) ++pos;
    } else if (s.number(pos)) {
      // \p{N}{1,max}
      while (s.number(pos) && pos - start < max_digits) ++pos;
    } else if (s.other(c == ' ' ? pos + 1 : pos)) {
      // ' '?[^\s\p{L}\p{N}]+[\r\n]*
      pos += c == ' ';
      while (s.other(pos)) ++pos;
      while (crlf(pos)) ++pos;
    } else if (s.space(pos)) {
      // \s*[\r\n]+ | \s+(?!\S) | \s+
      size_t n = 0, last_crlf = 0;
      for (; s.space(pos + n); ++n)
        if (crlf(pos + n)) last_crlf = n + 1;
      if (last_crlf)
        pos += last_crlf;
      else
        pos += whitespace_run(s, pos);
    } else {
      ++pos;
    }
    s.emit(start, pos, out);
  }
  return out;
}

// One step of a regex chain: each piece becomes its matches and the text between them.
// match(s, pos) is the length of the match starting at codepoint pos (0: none).
template <typename Match>
std::vector<std::string> chain(const std::vector<std::string>& pieces, Match match) {
  std::vector<std::string> out;
  for (const std::string& piece : pieces) {
    Splitter s(piece);
    size_t gap = 0;
    for (size_t pos = 0; pos < s.size();) {
      size_t n = match(s, pos);
      if (!n) {
        ++pos;
        continue;
      }
      s.emit(gap, pos, out);
      s.emit(pos, pos + n, out);
      gap = pos += n;
    }
    s.emit(gap, s.size(), out);
  }
  return out;
}

std::vector<std::string> chain_gpt2(const std::vector<std::string>& pieces) {
  std::vector<std::string> out;
  for (const std::string& piece : pieces) {
    std::vector<std::string> words = split_gpt2(Splitter(piece));
    out.insert(out.end(), words.begin(), words.end());
  }
  return out;
}

bool ascii_digit(uint32_t c) {
  return c >= '0' && c <= '9';
}

std::vector<std::string> split_starcoder(std::string_view text) {
  auto digit = [](const Splitter& s, size_t pos) -> size_t { return s.number(pos) ? 1 : 0; };
  return chain_gpt2(chain({std::string(text)}, digit));
}

std::vector<std::string> split_falcon(std::string_view text) {
  auto punct = [](const Splitter& s, size_t i) {
    uint32_t c = s.cp(i);
    return (i < s.size() && (cp_flags(c) & kPunct)) ||
           (c < 0x80 && std::string_view("$+<=>^~|`").find(static_cast<char>(c)) !=
                            std::string_view::npos);
  };
  auto punct_run = [&](const Splitter& s, size_t pos) {
    size_t n = 0;
    while (punct(s, pos + n)) ++n;
    return n;
  };
  auto three_digits = [](const Splitter& s, size_t pos) -> size_t {
    return ascii_digit(s.cp(pos)) && ascii_digit(s.cp(pos + 1)) && ascii_digit(s.cp(pos + 2))
               ? 3
               : 0;
  };
  return chain(chain_gpt2(chain({std::string(text)}, punct_run)), three_digits);
}

std::vector<std::string> split_deepseek_coder(std::string_view text) {
  auto newline = [](const Splitter& s, size_t pos) -> size_t {
    return s.cp(pos) == '\r' || s.cp(pos) == '\n' ? 1 : 0;
  };
  // \s?X+ where X is a codepoint class.
  auto space_then = [](auto in_class) {
    return [in_class](const Splitter& s, size_t pos) -> size_t {
      size_t p = pos + (s.space(pos) && in_class(s, pos + 1) ? 1 : 0), n = p;
      while (in_class(s, n)) ++n;
      return n > p ? n - pos : 0;
    };
  };
  auto letter = [](const Splitter& s, size_t i) { return s.letter(i); };
  auto punct = [](const Splitter& s, size_t i) {
    return i < s.size() && (cp_flags(s.cp(i)) & kPunct) != 0;
  };
  // U+4E00..U+9FA5, U+0800..U+4E00, U+AC00..U+D7FF.
  auto cjk_run = [](const Splitter& s, size_t pos) -> size_t {
    auto cjk = [&](size_t i) {
      uint32_t c = s.cp(i);
      return i < s.size() && ((c >= 0x0800 && c <= 0x9FA5) || (c >= 0xAC00 && c <= 0xD7FF));
    };
    size_t n = 0;
    while (cjk(pos + n)) ++n;
    return n;
  };
  auto digit = [](const Splitter& s, size_t pos) -> size_t { return s.number(pos) ? 1 : 0; };
  std::vector<std::string> pieces = chain({std::string(text)}, newline);
  pieces = chain(pieces, space_then(letter));
  pieces = chain(pieces, space_then(punct));
  return chain(chain(pieces, cjk_run), digit);
}

}  // namespace

std::vector<std::string> bpe_pre_split(std::string_view text, Tokenizer::Impl::Pre pre) {
  using Pre = Tokenizer::Impl::Pre;
  switch (pre) {
    case Pre::kLlama3:
      return split_llama3(Splitter(text), 3);
    case Pre::kQwen2:
      return split_llama3(Splitter(text), 1);
    case Pre::kQwen35:
      return split_llama3(Splitter(text, /*marks=*/true), 1);
    case Pre::kStarcoder:
      return split_starcoder(text);
    case Pre::kFalcon:
      return split_falcon(text);
    case Pre::kDeepseekCoder:
      return split_deepseek_coder(text);
    default:
      return split_gpt2(Splitter(text));
  }
}

}  // namespace rlx::tok
