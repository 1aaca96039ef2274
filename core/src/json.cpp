#include "rlx/core/json.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include "utf8.h"

namespace rlx::json {
namespace {

constexpr int kMaxDepth = 128;

// Length of the valid UTF-8 sequence starting at s[i], or 0 if it is invalid (overlong forms,
// surrogates and code points above U+10FFFF are invalid).
size_t utf8_sequence_length(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  return len;
}

void append_utf8(std::string& out, uint32_t cp) { utf8_append(cp, out); }

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Decimal exponent of the leading digit of a well-formed JSON number (1e400 -> 400,
// 0.001 -> -3); only its sign matters, to tell overflow from underflow.
int64_t decimal_magnitude(std::string_view raw) {
  size_t e = raw.find_first_of("eE");
  int64_t exp = 0;
  if (e != std::string_view::npos) {
    std::string_view digits = raw.substr(e + 1);
    bool neg = !digits.empty() && digits[0] == '-';
    if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) digits.remove_prefix(1);
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), exp);
    if (ec != std::errc()) exp = INT64_MAX / 4;  // more digits than any double exponent
    if (neg) exp = -exp;
    raw = raw.substr(0, e);
  }
  if (!raw.empty() && raw[0] == '-') raw.remove_prefix(1);
  size_t dot = std::min(raw.find('.'), raw.size());
  size_t first = raw.find_first_of("123456789");
  if (first == std::string_view::npos) return INT64_MIN / 4;  // zero
  int64_t lead =
      first < dot ? static_cast<int64_t>(dot - first) - 1 : -static_cast<int64_t>(first - dot);
  return lead + exp;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  Value document() {
    skip_ws();
    Value v = value(0);
    skip_ws();
    if (pos_ != s_.size()) fail("unexpected data after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(
        fmt::format("{}{} at byte {}", what, at_end() ? " (unexpected end of input)" : "", pos_));
  }
  bool at_end() const { return pos_ >= s_.size(); }
  // NUL at the end matches no token, so callers need no separate end check.
  char peek() const { return at_end() ? '\0' : s_[pos_]; }

  void skip_ws() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r'))
      ++pos_;
  }

  bool consume(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!consume(c)) fail(fmt::format("expected '{}'", c));
  }
  void digits() {
    if (!is_digit(peek())) fail("invalid number: digit expected");
    while (is_digit(peek())) ++pos_;
  }

  void literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) fail("invalid literal");
    pos_ += word.size();
  }

  Value value(int depth) {
    if (depth > kMaxDepth) fail("nesting too deep");
    switch (peek()) {
      case '{':
        return Value{object(depth)};
      case '[':
        return Value{array(depth)};
      case '"':
        return Value{string()};
      case 't':
        literal("true");
        return Value{true};
      case 'f':
        literal("false");
        return Value{false};
      case 'n':
        literal("null");
        return Value{nullptr};
      default:
        if (peek() == '-' || is_digit(peek())) return Value{number()};
        fail("unexpected character");
    }
  }

  Object object(int depth) {
    Object members;
    expect('{');
    skip_ws();
    if (consume('}')) return members;
    do {
      skip_ws();
      if (peek() != '"') fail("expected a string key");
      std::string key = string();
      skip_ws();
      expect(':');
      skip_ws();
      members.emplace_back(std::move(key), value(depth + 1));
      skip_ws();
    } while (consume(','));
    expect('}');
    return members;
  }

  Array array(int depth) {
    Array items;
    expect('[');
    skip_ws();
    if (consume(']')) return items;
    do {
      skip_ws();
      items.push_back(value(depth + 1));
      skip_ws();
    } while (consume(','));
    expect(']');
    return items;
  }

  uint32_t hex4() {
    uint32_t v = 0;
    const char* p = s_.data() + pos_;
    auto [end, ec] = std::from_chars(p, p + std::min<size_t>(4, s_.size() - pos_), v, 16);
    if (ec != std::errc() || end != p + 4) fail("\\u must be followed by 4 hex digits");
    pos_ += 4;
    return v;
  }

  std::string string() {
    expect('"');
    std::string out;
    while (!consume('"')) {
      if (at_end()) fail("unterminated string");
      auto c = static_cast<unsigned char>(s_[pos_]);
      if (c < 0x20) fail("control character in string");
      if (c >= 0x80) {
        size_t len = utf8_sequence_length(s_, pos_);
        if (len == 0) fail("invalid UTF-8 in string");
        out.append(s_.substr(pos_, len));
        pos_ += len;
      } else if (consume('\\')) {
        escape(out);
      } else {
        out += static_cast<char>(c);
        ++pos_;
      }
    }
    return out;
  }

  void escape(std::string& out) {
    static constexpr std::string_view kFrom = "\"\\/bfnrt", kTo = "\"\\/\b\f\n\r\t";
    if (consume('u')) return append_utf8(out, unicode_escape());
    size_t k = at_end() ? std::string_view::npos : kFrom.find(peek());
    if (k == std::string_view::npos) fail("invalid escape");
    out += kTo[k];
    ++pos_;
  }

  // After "\u": one code point, joining a surrogate pair; lone surrogates are refused because
  // they have no UTF-8 encoding.
  uint32_t unicode_escape() {
    uint32_t cp = hex4();
    if (cp >= 0xDC00 && cp <= 0xDFFF) fail("lone low surrogate in \\u escape");
    if (cp < 0xD800 || cp > 0xDBFF) return cp;
    if (!consume('\\') || !consume('u')) fail("high surrogate not followed by a low surrogate");
    uint32_t lo = hex4();
    if (lo < 0xDC00 || lo > 0xDFFF) fail("high surrogate not followed by a low surrogate");
    return 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
  }

  Number number() {
    size_t start = pos_;
    consume('-');
    if (!consume('0')) digits();
    if (consume('.')) digits();
    if (consume('e') || consume('E')) {
      if (!consume('+')) consume('-');
      digits();
    }
    Number n;
    n.raw = std::string(s_.substr(start, pos_ - start));
    auto [end, ec] = std::from_chars(n.raw.data(), n.raw.data() + n.raw.size(), n.value);
    // JSON sets no range limit; saturate the way strtod does.
    if (ec == std::errc::result_out_of_range)
      n.value = std::copysign(decimal_magnitude(n.raw) > 0 ? HUGE_VAL : 0.0,
                              n.raw[0] == '-' ? -1.0 : 1.0);
    return n;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

std::optional<uint64_t> Number::as_u64() const {
  if (!is_integer() || raw.empty() || raw[0] == '-') return std::nullopt;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), v);
  if (ec != std::errc() || end != raw.data() + raw.size()) return std::nullopt;
  return v;
}

std::optional<int64_t> Number::as_i64() const {
  if (!is_integer()) return std::nullopt;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), v);
  if (ec != std::errc() || end != raw.data() + raw.size()) return std::nullopt;
  return v;
}

const Value* Value::find(std::string_view key) const {
  if (const Object* o = as_object())
    for (const auto& [k, val] : *o)
      if (k == key) return &val;
  return nullptr;
}

std::string_view Value::kind() const {
  static constexpr std::string_view kNames[] = {"null",   "bool",  "number",
                                                "string", "array", "object"};
  return kNames[v.index()];
}

Value parse(std::string_view text) {
  return Parser(text).document();
}

std::optional<size_t> utf8_error_offset(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t len = utf8_sequence_length(s, i);
    if (len == 0) return i;
    i += len;
  }
  return std::nullopt;
}

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20)
          out += fmt::format("\\u{:04x}", c);
        else
          out += ch;
    }
  }
  return out + "\"";
}

}  // namespace rlx::json
