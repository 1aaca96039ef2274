// The lexer under both textual IR formats: the graph text (ir_parse.cpp) and the LIR text
// (lir_text.cpp). They share tokens, comments, string escapes, number forms, the attribute values
// rlx::attr_str prints, and "source:line:col: message" errors; keeping all of that here means the
// two formats cannot drift apart token by token. Private to rlx_core.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rlx/core/attr.h"
#include "rlx/core/dtype.h"
#include "rlx/core/tensor.h"

namespace rlx::text {

// The places where the two formats read the same construct differently. Each difference is older
// than the shared lexer and is kept so that every text reads and every message stays as it was.
struct Dialect {
  // The noun in "expected '%' before <noun>" and "expected <noun> after '%'".
  const char* value_noun;
  // The message when a number is expected and nothing of one is there.
  const char* no_number;
  // true: an integer is a number without fraction or exponent, so "+3" reads and an out-of-range
  // value is a "bad number". false: an optional '-' and decimal digits, and an out-of-range value
  // is said to be one.
  bool integers_as_numbers;
  // Whether attribute names may be quoted like other names ({"odd key" = 1}).
  bool quoted_attr_names;
  // Whether "N values for T, which holds M" points at the values' '[' or just past their ']'.
  bool count_error_at_values;
};

// The graph text (ir_parse.cpp).
inline constexpr Dialect kGraphText{
    .value_noun = "a value name",
    .no_number = "bad number ''",
    .integers_as_numbers = true,
    .quoted_attr_names = false,
    .count_error_at_values = false,
};

// The LIR text (lir_text.cpp).
inline constexpr Dialect kLirText{
    .value_noun = "a name",
    .no_number = "expected a number",
    .integers_as_numbers = false,
    .quoted_attr_names = true,
    .count_error_at_values = true,
};

// A position in one text plus the token readers. A parser derives from it and adds its grammar.
// Readers skip whitespace and comments (# and // to the end of the line) before a token, except
// where noted, and throw rlx::throw_user_error with "source:line:col: message".
class Cursor {
 public:
  Cursor(std::string_view text, std::string source, const Dialect& dialect)
      : s_(text), source_(std::move(source)), dialect_(dialect) {}
  virtual ~Cursor() = default;

 protected:
  [[noreturn]] void error(const std::string& msg) const { error_at(pos_, msg); }
  [[noreturn]] void error_at(size_t at, const std::string& msg) const;
  const std::string& source() const { return source_; }

  // Raw position, for parsers that point errors at the start of a construct or re-read a token.
  size_t pos() const { return pos_; }
  void seek(size_t at) { pos_ = at; }
  bool at_end() const { return pos_ >= s_.size(); }
  // The next character as it stands, without skipping whitespace; '\0' at the end.
  char cur() const { return at_end() ? '\0' : s_[pos_]; }
  void advance() { ++pos_; }

  void skip_ws();
  size_t here() {
    skip_ws();
    return pos_;
  }
  // Fails with "unexpected text after <what>" unless only whitespace and comments are left.
  void expect_end(std::string_view what);

  bool peek(char c) { return here() < s_.size() && s_[pos_] == c; }
  bool accept(char c);
  void expect(char c, std::string_view context);
  // A whole word: "loc" does not match the start of "local".
  bool accept_word(std::string_view w);
  void expect_word(std::string_view w, std::string_view context);

  static bool ident_char(char c);
  std::string ident(std::string_view what, bool allow_colon = false);
  // "text" with \n for a newline and \X for any other X (the inverse of quote below).
  std::string string_lit();
  // A name printed bare when it is a plain identifier and quoted otherwise.
  std::string name(std::string_view what, bool allow_colon = false);
  // %name or %"any text".
  std::string value_name();
  // A run of decimal digits right here, possibly empty; no whitespace is skipped.
  std::string_view digits();

  // Integers, decimals, exponents, inf and nan with an optional sign. *is_int says whether the
  // token had neither fraction nor exponent.
  double number(bool* is_int);
  int64_t integer(std::string_view what = "an integer");
  DType dtype();

  // The attribute forms rlx::attr_str prints: {key = value, ...}, or nothing when no '{' follows.
  Attrs attrs();
  AttrValue attr_value();
  // What follows the word "dense": <type: [values]>.
  Tensor dense();
  // An optional loc("text"); "" when there is none.
  std::string loc();

  // The "f32[2,3]" of a dense constant: each format spells static types its own way.
  virtual std::pair<DType, std::vector<int64_t>> dense_type() = 0;

 private:
  AttrValue list_attr();
  void dense_element(Tensor& t, int64_t i);

  std::string_view s_;
  std::string source_;
  Dialect dialect_;
  size_t pos_ = 0;
};

// A string literal that string_lit reads back as `s`.
std::string quote(std::string_view s);

}  // namespace rlx::text
