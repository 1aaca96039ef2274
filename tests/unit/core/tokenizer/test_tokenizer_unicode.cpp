// The Unicode facts the tokenizers look up, as utf8proc gives them (Unicode 15.0).
#include <gtest/gtest.h>

#include "tokenizer_unicode.h"

namespace rlx::tok {
namespace {

std::vector<uint32_t> decomposed(uint32_t cp) {
  std::vector<uint32_t> out = {0x2A};  // decompose() appends
  decompose(cp, out);
  out.erase(out.begin());
  return out;
}

TEST(TokenizerUnicode, CategoryClasses) {
  EXPECT_EQ(cp_flags('a'), kLetter);
  EXPECT_EQ(cp_flags('7'), kNumber);
  EXPECT_EQ(cp_flags('!'), kPunct);
  EXPECT_EQ(cp_flags('+'), kSymbol);
  EXPECT_EQ(cp_flags(0x3000), kSeparator);
  EXPECT_EQ(cp_flags(0x0301), kMark | kNonspacing);  // combining acute accent (Mn)
  EXPECT_EQ(cp_flags(0x0903), kMark);                // Devanagari visarga (Mc)
  EXPECT_EQ(cp_flags(0x00AD), kControl);             // soft hyphen (Cf)
  EXPECT_EQ(cp_flags(0xE000), kControl);             // private use (Co)
  EXPECT_EQ(cp_flags(0x0378), kUndefined);
  EXPECT_EQ(cp_flags(0x1E4D0), kLetter);  // Nag Mundari, assigned in Unicode 15.0
  EXPECT_EQ(cp_flags(0x110000), 0);
}

TEST(TokenizerUnicode, LowercaseAndCanonicalDecomposition) {
  EXPECT_EQ(to_lower('Q'), uint32_t{'q'});
  EXPECT_EQ(to_lower(0x0130), uint32_t{'i'});  // the simple mapping of a two-character one
  EXPECT_EQ(to_lower(0x0391), 0x03B1u);
  EXPECT_EQ(to_lower(0x03B1), 0x03B1u);
  EXPECT_EQ(decomposed('a'), std::vector<uint32_t>{'a'});
  EXPECT_EQ(decomposed(0x00E9), (std::vector<uint32_t>{'e', 0x0301}));
  EXPECT_EQ(decomposed(0x1F82), (std::vector<uint32_t>{0x03B1, 0x0313, 0x0300, 0x0345}));
  EXPECT_EQ(decomposed(0xAC01), (std::vector<uint32_t>{0x1100, 0x1161, 0x11A8}));  // Hangul
  EXPECT_EQ(decomposed(0xFB01), std::vector<uint32_t>{0xFB01});  // compatibility only: kept
  EXPECT_EQ(decomposed(0x110000), std::vector<uint32_t>{0x110000});
}

}  // namespace
}  // namespace rlx::tok
