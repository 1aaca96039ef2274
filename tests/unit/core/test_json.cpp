// rlx::json::parse on what simdjson alone does not decide for us: positions of first-pass
// errors, text after a root value, the depth limit, number text and duplicate keys.
#include <gtest/gtest.h>

#include <string>

#include "rlx/core/json.h"

namespace rlx::json {
namespace {

std::string error_of(std::string_view text) {
  try {
    parse(text);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(parsed)";
}

TEST(Json, KeepsNumberTextDuplicateKeysAndOrder) {
  Value v = parse(R"({"b": 18446744073709551616, "a": -0.5e1, "b": [true, null, "\u00e9"]})");
  const Object& o = *v.as_object();
  ASSERT_EQ(o.size(), 3u);
  EXPECT_EQ(o[0].first, "b");
  EXPECT_EQ(o[0].second.as_number()->raw, "18446744073709551616");
  EXPECT_FALSE(o[0].second.as_number()->as_u64());
  EXPECT_EQ(o[1].second.as_number()->value, -5.0);
  EXPECT_EQ(o[1].second.as_number()->raw, "-0.5e1");
  EXPECT_EQ(*o[2].second.as_array()->at(2).as_string(), "\xC3\xA9");
  EXPECT_EQ(parse(" 42 ").as_number()->raw, "42");
}

TEST(Json, ErrorsSayWhere) {
  // Found by simdjson's first pass, which reports no position.
  EXPECT_EQ(error_of("[\"ok\", \"a\tb\"]"),
            "Within strings, some characters must be escaped, we found unescaped characters at "
            "byte 9");
  EXPECT_EQ(error_of("[\"\xC3\xA9\", \"\xC0\xAF\"]"), "The input is not valid UTF-8 at byte 8");
  EXPECT_EQ(error_of("[\"abc"),
            "A string is opened, but never closed (unexpected end of input) at byte 5");
  // Found while walking: at the offending token.
  EXPECT_EQ(error_of("[1, tru]"),
            "Problem while parsing an atom starting with the letter 't' at byte 4");
  EXPECT_EQ(error_of("[1, 1e400]"), "Problem while parsing a number at byte 4");
}

TEST(Json, RefusesTextAfterTheValue) {
  EXPECT_EQ(error_of("\"a\": 1"), "unexpected data after the JSON value at byte 3");
  EXPECT_EQ(error_of("[1] [2]"), "unexpected data after the JSON value at byte 4");
  EXPECT_EQ(error_of("1 2"), "Unexpected trailing content in the JSON input at byte 2");
  EXPECT_EQ(parse("\"a\"\n").as_string()->size(), 1u);
}

TEST(Json, NestingLimit) {
  EXPECT_TRUE(parse(std::string(129, '[') + std::string(129, ']')).as_array());
  EXPECT_EQ(error_of(std::string(130, '[') + std::string(130, ']')),
            "nesting too deep at byte 129");
}

TEST(Json, Utf8ErrorOffset) {
  EXPECT_EQ(utf8_error_offset("plain \xF0\x9F\x98\x80"), std::nullopt);
  EXPECT_EQ(utf8_error_offset("ab\xE2\x82"), 2u);        // truncated
  EXPECT_EQ(utf8_error_offset("a\xED\xA0\x80"), 1u);     // a surrogate
  EXPECT_EQ(utf8_error_offset("\xC3\xA9\xC1\xBF"), 2u);  // overlong
  EXPECT_EQ(utf8_error_offset("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(utf8_error_offset("x\x80"), 1u);             // a stray continuation byte
}

}  // namespace
}  // namespace rlx::json
