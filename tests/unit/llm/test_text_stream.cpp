// TextStream on a byte-level tokenizer built here (every byte a token, plus a few longer
// tokens): the pieces it gives out are whole UTF-8 characters, together the text of all the
// tokens, and stop strings cut the text before them while holding back only what could still
// begin one.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rlx/core/error.h"
#include "rlx/llm/text_stream.h"

namespace rlx::llm {
namespace {

// GPT-2's byte-level alphabet: printable bytes stand for themselves, the rest are shifted up.
std::string byte_char(int b) {
  auto printable = [](int x) {
    return (x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255);
  };
  int cp = b;
  if (!printable(b)) {
    cp = 256;
    for (int x = 0; x < b; ++x) cp += printable(x) ? 0 : 1;
  }
  std::string s;
  if (cp < 0x80) return std::string(1, static_cast<char>(cp));
  s += static_cast<char>(0xC0 | (cp >> 6));
  s += static_cast<char>(0x80 | (cp & 0x3F));
  return s;
}

// Ids 0..255 are the bytes; then "Hello", "Ġworld" (" world"), "!".
Tokenizer tokenizer() {
  TokenizerSpec spec;
  spec.kind = "bpe";
  spec.pre = "gpt2";
  for (int b = 0; b < 256; ++b) spec.tokens.push_back(byte_char(b));
  for (const char* t : {"Hello", "\xC4\xA0world", "!"}) spec.tokens.push_back(t);
  return Tokenizer(spec);
}
constexpr int64_t kHello = 256, kWorld = 257, kBang = 258;

std::vector<std::string> pieces(TextStream& s, const std::vector<int64_t>& ids) {
  std::vector<std::string> out;
  for (int64_t id : ids) out.push_back(s.add(id));
  out.push_back(s.finish());
  return out;
}

TEST(TextStream, PiecesAreWholeCharactersAndJoinToTheText) {
  Tokenizer t = tokenizer();
  TextStream s(t);
  // "é" is C3 A9, split over two byte tokens; it comes out with the second.
  EXPECT_EQ(pieces(s, {kHello, 0xC3, 0xA9, kWorld, kBang}),
            (std::vector<std::string>{"Hello", "", "\xC3\xA9", " world", "!", ""}));
  EXPECT_EQ(s.text(), "Hello\xC3\xA9 world!");
  EXPECT_FALSE(s.stopped());
}

TEST(TextStream, AnUnfinishedCharacterAtTheEndBecomesAReplacementCharacter) {
  Tokenizer t = tokenizer();
  TextStream s(t);
  EXPECT_EQ(pieces(s, {kHello, 0xE2, 0x82}),
            (std::vector<std::string>{"Hello", "", "", "\xEF\xBF\xBD\xEF\xBF\xBD"}));
}

TEST(TextStream, AStopStringEndsTheTextBeforeIt) {
  Tokenizer t = tokenizer();
  TextStream s(t, {"xyz", "o w"});
  // "Hello" ends in "o", which may begin "o w": held. " world" completes it, so the "o" is
  // never shown.
  EXPECT_EQ(s.add(kHello), "Hell");
  EXPECT_EQ(s.add(kWorld), "");
  EXPECT_EQ(s.stopped(), 1u);
  EXPECT_EQ(s.add(kBang), "");
  EXPECT_EQ(s.finish(), "");
  EXPECT_EQ(s.text(), "Hell");
}

TEST(TextStream, HeldTextIsGivenOutOnceItCannotBeAStopString) {
  Tokenizer t = tokenizer();
  TextStream s(t, {"!!"});
  EXPECT_EQ(s.add(kHello), "Hello");
  EXPECT_EQ(s.add(kBang), "");
  EXPECT_EQ(s.add('a'), "!a");
  EXPECT_EQ(s.add(kBang), "");
  EXPECT_EQ(s.finish(), "!");
  EXPECT_EQ(s.text(), "Hello!a!");
  EXPECT_FALSE(s.stopped());
  EXPECT_THROW(TextStream(t, {""}), Error);
}

}  // namespace
}  // namespace rlx::llm
