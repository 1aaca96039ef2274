// WordPiece as BERT's tokenizer runs it (HF BertTokenizer / llama.cpp's WPM):
//   1. clean: drop NUL, U+FFFD and control characters; whitespace separates words
//   2. lowercase (spec.lowercase) and strip accents (canonical decomposition, drop Mn)
//   3. punctuation (P*, and ASCII symbols such as $ + < = > ^ ` | ~) and CJK ideographs are
//      words of their own
//   4. each word: greedy longest match from the left; pieces after the first are "##piece";
//      a word with any unmatched position, or longer than 100 characters, is [UNK]
#include <fmt/format.h>

#include "rlx/core/error.h"
#include "tokenizer_impl.h"
#include "tokenizer_unicode.h"

namespace rlx::tok {

namespace {

constexpr size_t kMaxWordChars = 100;  // HF max_input_chars_per_word

// The CJK ideograph blocks BERT isolates (HF _is_chinese_char).
bool is_cjk(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool is_punct(uint32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
      (cp >= 123 && cp <= 126))
    return true;
  return cp_flags(cp) & kPunct;
}

std::vector<std::vector<uint32_t>> basic_split(std::string_view text, bool lowercase) {
  std::vector<std::vector<uint32_t>> words(1);
  std::vector<uint32_t> chars;
  auto close_word = [&] {
    if (!words.back().empty()) words.emplace_back();
  };
  for (uint32_t cp : utf8_decode(text)) {
    if (is_whitespace(cp)) {
      close_word();
      continue;
    }
    if (cp == 0 || cp == 0xFFFD || (cp_flags(cp) & kControl)) continue;
    chars.clear();
    if (lowercase) {
      decompose(to_lower(cp), chars);
      std::erase_if(chars, [](uint32_t c) { return cp_flags(c) & kNonspacing; });
      for (uint32_t& c : chars) c = to_lower(c);
    } else {
      chars.push_back(cp);
    }
    for (uint32_t c : chars) {
      if (is_punct(c) || is_cjk(c)) {
        close_word();
        words.back().push_back(c);
        words.emplace_back();
      } else {
        words.back().push_back(c);
      }
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

}  // namespace

void wordpiece_encode(const Tokenizer::Impl& t, std::string_view text, std::vector<int64_t>& out) {
  const int64_t unk = t.spec.unk;
  auto push_unk = [&] {
    if (unk < 0) throw_user_error("tokenizer: a word has no pieces and there is no [UNK] token");
    out.push_back(unk);
  };
  for (const std::vector<uint32_t>& word : basic_split(text, t.spec.lowercase)) {
    if (word.size() > kMaxWordChars) {
      push_unk();
      continue;
    }
    const size_t mark = out.size();
    bool ok = true;
    for (size_t start = 0; start < word.size() && ok;) {
      ok = false;
      for (size_t end = word.size(); end > start; --end) {
        std::string piece = start ? "##" : "";
        for (size_t k = start; k < end; ++k) utf8_append(word[k], piece);
        if (int64_t id = t.find(piece); id >= 0) {
          out.push_back(id);
          start = end;
          ok = true;
          break;
        }
      }
    }
    if (!ok) {
      out.resize(mark);
      push_unk();
    }
  }
}

}  // namespace rlx::tok
