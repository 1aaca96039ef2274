#include "tokenizer_unicode.h"

#include <algorithm>

namespace rlx::tok {

uint16_t cp_flags(uint32_t cp) {
  if (cp > 0x10FFFF) return 0;
  const CategoryRange* end = kCategoryRanges + kNumCategoryRanges;
  auto it = std::upper_bound(kCategoryRanges, end, cp,
                             [](uint32_t c, const CategoryRange& r) { return c < r.first; });
  return (it - 1)->flags;
}

bool is_whitespace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

uint32_t to_lower(uint32_t cp) {
  if (cp >= 'A' && cp <= 'Z') return cp + 32;
  if (cp < 0x80) return cp;
  const CaseMapping* end = kLowercase + kNumLowercase;
  auto it = std::lower_bound(kLowercase, end, cp,
                             [](const CaseMapping& m, uint32_t c) { return m.cp < c; });
  return it != end && it->cp == cp ? it->lower : cp;
}

void decompose(uint32_t cp, std::vector<uint32_t>& out) {
  // Hangul syllables decompose by formula (Unicode 3.12).
  constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
  constexpr uint32_t kVCount = 21, kTCount = 28, kSCount = 11172;
  if (cp >= kSBase && cp < kSBase + kSCount) {
    uint32_t s = cp - kSBase;
    out.push_back(kLBase + s / (kVCount * kTCount));
    out.push_back(kVBase + (s % (kVCount * kTCount)) / kTCount);
    if (s % kTCount) out.push_back(kTBase + s % kTCount);
    return;
  }
  if (cp < 0xC0) {
    out.push_back(cp);
    return;
  }
  const Decomposition* end = kDecompositions + kNumDecompositions;
  auto it = std::lower_bound(kDecompositions, end, cp,
                             [](const Decomposition& d, uint32_t c) { return d.cp < c; });
  if (it == end || it->cp != cp) {
    out.push_back(cp);
    return;
  }
  out.insert(out.end(), kDecompositionData + it->offset,
             kDecompositionData + it->offset + it->length);
}

std::vector<uint32_t> utf8_decode(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    auto b0 = static_cast<uint8_t>(s[i]);
    size_t n = utf8_len(b0);
    uint32_t cp = n == 1 ? b0 : b0 & (0x7F >> n);
    bool ok = (n > 1 || b0 < 0x80) && i + n <= s.size();
    for (size_t k = 1; ok && k < n; ++k) {
      auto b = static_cast<uint8_t>(s[i + k]);
      if ((b & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (b & 0x3F);
    }
    if (!ok) {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    out.push_back(cp);
    i += n;
  }
  return out;
}


std::string utf8_encode(const std::vector<uint32_t>& cps) {
  std::string out;
  for (uint32_t cp : cps) utf8_append(cp, out);
  return out;
}

}  // namespace rlx::tok
