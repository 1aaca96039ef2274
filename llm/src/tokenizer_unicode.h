// Unicode helpers for the tokenizers: UTF-8 <-> codepoints, category classes, canonical
// decomposition and lowercase. The Unicode data comes from utf8proc (Debian libutf8proc-dev,
// 2.8: Unicode 15). Private to core.
#pragma once
#include "utf8.h"
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rlx::tok {

// General-category classes of a codepoint (one of the first group, plus kNonspacing for Mn).
enum CpFlags : uint16_t {
  kNumber = 1 << 0,      // N*
  kLetter = 1 << 1,      // L*
  kSeparator = 1 << 2,   // Z*
  kMark = 1 << 3,        // M*
  kNonspacing = 1 << 4,  // Mn (the accents BERT strips)
  kPunct = 1 << 5,       // P*
  kSymbol = 1 << 6,      // S*
  kControl = 1 << 7,     // Cc Cf Co Cs
  kUndefined = 1 << 8,   // Cn
};

uint16_t cp_flags(uint32_t cp);  // 0 for values above U+10FFFF
// White_Space (PropList.txt): \t..\r, space, U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028,
// U+2029, U+202F, U+205F, U+3000. Spelled out: utf8proc has no White_Space property, and the
// set has not changed since Unicode 6.3.
bool is_whitespace(uint32_t cp);
// The simple lowercase mapping (UnicodeData.txt): one code point, U+0130 becomes plain i.
uint32_t to_lower(uint32_t cp);
// Full canonical decomposition of cp appended to out (cp itself when it has none).
void decompose(uint32_t cp, std::vector<uint32_t>& out);

// Length of the UTF-8 sequence a lead byte starts (1 for stray continuation bytes).
inline size_t utf8_len(uint8_t lead) {
  static constexpr size_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[lead >> 4];
}
// Decodes UTF-8; an invalid sequence becomes U+FFFD for its first byte, then decoding resumes.
std::vector<uint32_t> utf8_decode(std::string_view s);
using rlx::utf8_append;
std::string utf8_encode(const std::vector<uint32_t>& cps);

}  // namespace rlx::tok
