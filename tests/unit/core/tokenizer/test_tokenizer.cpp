// Each tokenizer kind on a vocabulary small enough to work the expected ids out by hand.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "rlx/core/error.h"
#include "rlx/llm/tokenizer.h"

namespace rlx {
namespace {

using Ids = std::vector<int64_t>;
const std::string kSp = "\xE2\x96\x81";  // U+2581

// --- SentencePiece ----------------------------------------------------------------------------

// <unk> <s> </s>, 256 byte tokens (ids 3..258), then scored pieces from id 259.
TokenizerSpec spm_spec() {
  TokenizerSpec s;
  s.kind = "spm";
  s.tokens = {"<unk>", "<s>", "</s>"};
  s.types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    s.tokens.push_back(fmt::format("<0x{:02X}>", b));
    s.types.push_back(6);
  }
  s.scores.assign(s.tokens.size(), 0.f);
  auto piece = [&](std::string text, float score) {
    s.tokens.push_back(std::move(text));
    s.types.push_back(1);
    s.scores.push_back(score);
  };
  piece(kSp, -5);        // 259
  piece("a", -5);        // 260
  piece("b", -5);        // 261
  piece("c", -5);        // 262
  piece(kSp + "a", -1);  // 263
  piece("ab", -2);       // 264
  piece("bc", -0.5);     // 265
  piece(kSp + "b", -3);  // 266
  s.bos = 1, s.eos = 2, s.unk = 0;
  s.add_bos = true;
  return s;
}

TEST(SpmTokenizer, MergesHighestScoreFirst) {
  Tokenizer t(spm_spec());
  // "▁abc": bc (-0.5) beats ▁a (-1) and ab (-2); then ▁a; "▁abc" is no piece.
  EXPECT_EQ(t.encode("abc"), (Ids{263, 265}));
  // Equal scores merge leftmost first: "▁b b" -> ▁b (-3), then "bb" is no piece.
  EXPECT_EQ(t.encode("bb"), (Ids{266, 261}));
}

TEST(SpmTokenizer, SpacePrefixBosEosAndBytes) {
  TokenizerSpec s = spm_spec();
  Tokenizer t(s);
  EXPECT_EQ(t.encode("a", true), (Ids{1, 263}));
  // é is not a piece: its two UTF-8 bytes become byte tokens (0xC3 -> id 3 + 0xC3).
  EXPECT_EQ(t.encode("é"), (Ids{259, 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(t.decode({1, 263, 265, 259, 3 + 0xC3, 3 + 0xA9, 2}), "abc é");
  // As in llama.cpp: only a leading piece loses the space the encoder added.
  EXPECT_EQ(t.decode({1, 263}, /*skip_special=*/false), "<s> a");
  EXPECT_EQ(t.encode(""), Ids{});
  s.add_space_prefix = false;
  s.add_eos = true;
  Tokenizer gemma_like(s);
  EXPECT_EQ(gemma_like.encode("ab", true), (Ids{1, 264, 2}));
  // Special-token text splits the input, and the text after it gets the space prefix again.
  EXPECT_EQ(t.encode("a</s>a"), (Ids{263, 2, 263}));
  EXPECT_EQ(t.encode("a</s>a", false, /*parse_special=*/false),
            (Ids{263, 3 + '<', 3 + '/', 3 + 's', 3 + '>', 260}));
}

// --- byte-level BPE ---------------------------------------------------------------------------

// The 256 byte symbols (GPT-2 alphabet) as ids 0..255 in byte order, then merged tokens.
TokenizerSpec bpe_spec(std::vector<std::string> merges) {
  TokenizerSpec s;
  s.kind = "bpe";
  s.pre = "gpt2";
  auto cp_of = [](int b) -> uint32_t {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    if (printable) return b;
    int n = 0;
    for (int k = 0; k < b; ++k)
      if (!((k >= '!' && k <= '~') || (k >= 0xA1 && k <= 0xAC) || (k >= 0xAE))) ++n;
    return 256 + n;
  };
  for (int b = 0; b < 256; ++b) {
    uint32_t cp = cp_of(b);
    std::string u;
    if (cp < 0x80)
      u += static_cast<char>(cp);
    else
      u += static_cast<char>(0xC0 | (cp >> 6)), u += static_cast<char>(0x80 | (cp & 0x3F));
    s.tokens.push_back(u);
  }
  for (const std::string& m : merges) {
    std::string joined = m;
    joined.erase(joined.find(' '), 1);
    s.tokens.push_back(joined);
  }
  s.merges = std::move(merges);
  s.tokens.push_back("<|end|>");
  s.types.assign(s.tokens.size(), 1);
  s.types.back() = 3;
  s.eos = static_cast<int64_t>(s.tokens.size()) - 1;
  return s;
}

TEST(BpeTokenizer, MergesLowestRankFirst) {
  Tokenizer bc_first(bpe_spec({"b c", "a b"}));
  EXPECT_EQ(bc_first.encode("abc"), (Ids{'a', 256}));  // a + bc
  Tokenizer ab_first(bpe_spec({"a b", "b c"}));
  EXPECT_EQ(ab_first.encode("abc"), (Ids{256, 'c'}));  // ab + c
}

TEST(BpeTokenizer, WordsSpacesBytesAndDecode) {
  // "Ġ" (U+0120) is the space byte in GPT-2's alphabet.
  Tokenizer t(bpe_spec({"h e", "l l", "he ll", "hell o", "\xC4\xA0 w", "o r", "\xC4\xA0w or"}));
  // "hello world" -> "hello" (256..259: he, ll, hell, hello), " world" -> "Ġwor" + l + d
  EXPECT_EQ(t.encode("hello world"), (Ids{259, 262, 'l', 'd'}));
  std::string text = "hello wörld\t🦙<|end|>";
  Ids ids = t.encode(text);
  EXPECT_EQ(ids.back(), t.spec().eos);
  EXPECT_EQ(t.decode(ids, /*skip_special=*/false), text);
  EXPECT_EQ(t.decode(ids), "hello wörld\t🦙");
}

TEST(BpeTokenizer, RejectsUnknownPreTokenizerAndBadMerges) {
  TokenizerSpec s = bpe_spec({"a b"});
  s.pre = "deepseek-llm";  // not implemented (tests/frontends/gguf lists why)
  EXPECT_THROW(Tokenizer{s}, Error);
  s = bpe_spec({"a b"});
  s.merges.push_back("nospace");
  EXPECT_THROW(Tokenizer{s}, Error);
}

// --- WordPiece --------------------------------------------------------------------------------

TokenizerSpec wordpiece_spec(bool lowercase) {
  TokenizerSpec s;
  s.kind = "wordpiece";
  s.tokens = {"[PAD]", "[UNK]",  "[CLS]", "[SEP]", "[MASK]", "hello", "world", "##s",  "un",
              "##aff", "##able", ",",     "!",     "你",     "好",    "cafe",  "Hello"};
  s.pad = 0, s.unk = 1, s.cls = 2, s.sep = 3, s.mask = 4;
  s.lowercase = lowercase;
  return s;
}

TEST(WordpieceTokenizer, BasicTokenizationAndPieces) {
  Tokenizer t(wordpiece_spec(true));
  EXPECT_EQ(t.encode("Unaffable CAFÉ, HELLO worlds! 你好", true),
            (Ids{2, 8, 9, 10, 15, 11, 5, 6, 7, 12, 13, 14, 3}));
  EXPECT_EQ(t.encode("helloxyz world"), (Ids{1, 6}));    // one unmatched piece: the word is [UNK]
  EXPECT_EQ(t.encode(std::string(101, 'a')), (Ids{1}));  // longer than 100 characters
  EXPECT_EQ(t.encode(" \t\n"), Ids{});
  EXPECT_EQ(t.decode({2, 8, 9, 10, 11, 6, 7, 3}), "unaffable , worlds");
}

TEST(WordpieceTokenizer, CaseKeptWithoutLowercase) {
  Tokenizer t(wordpiece_spec(false));
  EXPECT_EQ(t.encode("Hello hello HELLO"), (Ids{16, 5, 1}));
}

TEST(Tokenizer, RejectsBadSpecsAndIds) {
  TokenizerSpec s = wordpiece_spec(true);
  s.kind = "unigram";
  EXPECT_THROW(Tokenizer{s}, Error);
  s = wordpiece_spec(true);
  s.types = {1, 2};
  EXPECT_THROW(Tokenizer{s}, Error);
  s = wordpiece_spec(true);
  s.unk = 99;
  EXPECT_THROW(Tokenizer{s}, Error);
  Tokenizer t(wordpiece_spec(true));
  EXPECT_THROW(t.decode({5, 17}), Error);
  EXPECT_THROW(t.decode({-1}), Error);
}

}  // namespace
}  // namespace rlx
