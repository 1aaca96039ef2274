// The hand-written pre-tokenizers against the regexes they stand for. Expected splits were
// produced by Python's `regex` module (PyPI) with the gpt2, llama3 and qwen2 patterns quoted in
// tokenizer_bpe_split.cpp.
#include <gtest/gtest.h>

#include "tokenizer_impl.h"

namespace rlx::tok {
namespace {

using Pre = Tokenizer::Impl::Pre;
using Words = std::vector<std::string>;

struct Case {
  Pre pre;
  std::string text;
  Words want;
};

TEST(BpePreSplit, MatchesTheRegexes) {
  const std::vector<Case> cases = {
      {Pre::kGpt2, "Hello world", {"Hello", " world"}},
      {Pre::kGpt2, "  leading and trailing  ", {" ", " leading", " and", " trailing", "  "}},
      {Pre::kGpt2,
       "I'm here, don't you'LL SEE?",
       {"I", "'m", " here", ",", " don", "'t", " you", "'", "LL", " SEE", "?"}},
      {Pre::kGpt2, "12345678 x1y22", {"12345678", " x", "1", "y", "22"}},
      {Pre::kGpt2,
       "tabs\tand\n\nnewlines \n  \r\n end",
       {"tabs", "\t", "and", "\n", "\n", "newlines", " \n  \r\n", " end"}},
      {Pre::kGpt2, "ünïcödé 你好世界 🦙.cpp", {"ünïcödé", " 你好世界", " 🦙.", "cpp"}},
      {Pre::kGpt2, "a!!!b ...  ?c", {"a", "!!!", "b", " ...", " ", " ?", "c"}},
      {Pre::kGpt2, "3.14159 -42", {"3", ".", "14159", " -", "42"}},
      {Pre::kGpt2, "'s'S 'Re", {"'s", "'", "S", " '", "Re"}},
      {Pre::kLlama3,
       "I'm here, don't you'LL SEE?",
       {"I", "'m", " here", ",", " don", "'t", " you", "'LL", " SEE", "?"}},
      {Pre::kLlama3, "12345678 x1y22", {"123", "456", "78", " x", "1", "y", "22"}},
      {Pre::kLlama3,
       "tabs\tand\n\nnewlines \n  \r\n end",
       {"tabs", "\tand", "\n\n", "newlines", " \n  \r\n", " end"}},
      {Pre::kLlama3,
       "ünïcödé 你好世界 🦙.cpp",
       {"ünïcödé", " 你好世界", " 🦙.", "cpp"}},
      {Pre::kLlama3, "a!!!b ...  ?c", {"a", "!!!", "b", " ...", " ", " ?", "c"}},
      {Pre::kLlama3, "3.14159 -42", {"3", ".", "141", "59", " -", "42"}},
      {Pre::kLlama3, "'s'S 'Re", {"'s", "'S", " '", "Re"}},
      {Pre::kLlama3, "  leading and trailing  ", {" ", " leading", " and", " trailing", "  "}},
      {Pre::kQwen2,
       "12345678 x1y22",
       {"1", "2", "3", "4", "5", "6", "7", "8", " x", "1", "y", "2", "2"}},
      {Pre::kQwen2, "3.14159 -42", {"3", ".", "1", "4", "1", "5", "9", " -", "4", "2"}},
      {Pre::kQwen2,
       "tabs\tand\n\nnewlines \n  \r\n end",
       {"tabs", "\tand", "\n\n", "newlines", " \n  \r\n", " end"}},
  };
  for (const Case& c : cases) EXPECT_EQ(bpe_pre_split(c.text, c.pre), c.want) << c.text;
}

TEST(BpePreSplit, InvalidUtf8KeepsEveryByte) {
  std::string text = "ab\xFF\xC3 c\xE2\x82";
  std::string joined;
  for (const std::string& w : bpe_pre_split(text, Pre::kGpt2)) joined += w;
  EXPECT_EQ(joined, text);
  joined.clear();
  for (const std::string& w : bpe_pre_split(text, Pre::kLlama3)) joined += w;
  EXPECT_EQ(joined, text);
}

}  // namespace
}  // namespace rlx::tok
