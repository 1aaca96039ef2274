#include "tokenizer_unicode.h"

#include <utf8proc.h>

namespace rlx::tok {

uint16_t cp_flags(uint32_t cp) {
  if (cp > 0x10FFFF) return 0;
  // The two-letter general category ("Lu", "Mn", "Cn", ...); the classes follow its first letter.
  const char* category = utf8proc_category_string(static_cast<utf8proc_int32_t>(cp));
  switch (category[0]) {
    case 'L':
      return kLetter;
    case 'M':
      return category[1] == 'n' ? kMark | kNonspacing : kMark;
    case 'N':
      return kNumber;
    case 'P':
      return kPunct;
    case 'S':
      return kSymbol;
    case 'Z':
      return kSeparator;
    default:  // C*: Cn is unassigned, Cc Cf Cs Co are control
      return category[1] == 'n' ? kUndefined : kControl;
  }
}

bool is_whitespace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

uint32_t to_lower(uint32_t cp) {
  if (cp >= 'A' && cp <= 'Z') return cp + 32;
  if (cp < 0x80) return cp;
  return static_cast<uint32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)));
}

void decompose(uint32_t cp, std::vector<uint32_t>& out) {
  if (cp < 0xC0) {  // nothing below U+00C0 has a canonical decomposition
    out.push_back(cp);
    return;
  }
  // Written straight into `out` (int32_t and uint32_t may alias). 4 code points is the longest
  // canonical decomposition in Unicode 15 (U+1F82 and others); utf8proc says if it needs more.
  const size_t at = out.size();
  int boundclass = 0;  // read only with UTF8PROC_CHARBOUND
  auto decompose_into = [&](utf8proc_ssize_t room) {
    out.resize(at + static_cast<size_t>(room));
    return utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp),
                                   reinterpret_cast<utf8proc_int32_t*>(out.data() + at), room,
                                   UTF8PROC_DECOMPOSE, &boundclass);
  };
  utf8proc_ssize_t n = decompose_into(4);
  if (n > 4) n = decompose_into(n);
  if (n < 0) {  // not a code point: kept as it is
    out.resize(at);
    out.push_back(cp);
    return;
  }
  out.resize(at + static_cast<size_t>(n));
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
