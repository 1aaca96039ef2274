#include "rlx/core/json.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace rlx::json {
namespace {

namespace od = simdjson::ondemand;

// Refused before the recursion below can run out of stack; a document this deep is no header or
// tokenizer, and simdjson's own limit (1024) is far above it.
constexpr int kMaxDepth = 128;

constexpr std::string_view kWhitespace = " \t\n\r";

// simdjson's On-Demand parser reads the text; this class copies what it finds into the Value
// tree. On-Demand rather than simdjson's DOM because only On-Demand hands back the source text
// of a number (Number::raw keeps every digit of integers beyond 2^53) and where an error is.
class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text), padded_(text.data(), text.size()) {}

  Value document() {
    od::document doc;
    if (auto error = parser_.iterate(padded_).get(doc)) fail(error, stage1_error_offset(error));
    doc_ = &doc;
    Value v = value(doc, 0);
    // simdjson checks what follows a root number, boolean or null, not what follows a root
    // string, array or object: a root string's token runs up to the next token, if any, and
    // after an array or object the iterator is at the end or at what follows.
    if (v.as_string()) {
      std::string_view token = raw_token(doc);
      if (size_t end = offset(token.data() + token.size()); end < text_.size())
        fail("unexpected data after the JSON value", end);
    } else if (!v.is_null() && !v.as_bool() && !v.as_number() && where() < text_.size()) {
      fail("unexpected data after the JSON value", where());
    }
    return v;
  }

 private:
  [[noreturn]] void fail(std::string_view what, size_t at) const {
    throw std::runtime_error(fmt::format(
        "{}{} at byte {}", what, at >= text_.size() ? " (unexpected end of input)" : "", at));
  }
  [[noreturn]] void fail(simdjson::error_code error, size_t at) const {
    if (error == simdjson::DEPTH_ERROR) fail("nesting too deep", at);
    std::string_view what = simdjson::error_message(error);
    if (what.ends_with('.')) what.remove_suffix(1);
    // An array or object that never closes is found before the walk reaches the end (the last
    // token does not close the first), so no token position says where it ends early.
    fail(what, error == simdjson::INCOMPLETE_ARRAY_OR_OBJECT ? text_.size() : at);
  }
  // A failed value: at its token, or just after it when simdjson found something following a
  // root scalar. simdjson answers a scalar that is not what type() announced (tru, nulll, -)
  // with the generic INCORRECT_TYPE; `kind_error` names the kind of token instead.
  template <class V>
  void check(simdjson::error_code error, V& v,
             simdjson::error_code kind_error = simdjson::INCORRECT_TYPE) const {
    if (!error) return;
    if (error == simdjson::INCORRECT_TYPE) error = kind_error;
    std::string_view token = raw_token(v);
    if (token.empty()) fail(error, where());
    fail(error,
         offset(error == simdjson::TRAILING_CONTENT ? token.data() + token.size() : token.data()));
  }
  // A failed step between values (a missing comma, colon or key).
  void check(simdjson::error_code error) const {
    if (error) fail(error, where());
  }
  // The token the iterator holds: the last one read when an error stopped it, the end of the
  // text when it has used up the document.
  size_t where() const {
    const char* at = nullptr;
    return doc_->current_location().get(at) == simdjson::SUCCESS ? offset(at) : text_.size();
  }
  size_t offset(const char* p) const {
    return std::min(static_cast<size_t>(p - padded_.data()), text_.size());
  }

  // simdjson's first pass (strings, UTF-8) reports what is wrong but not where.
  size_t stage1_error_offset(simdjson::error_code error) {
    if (error == simdjson::UTF8_ERROR) return utf8_error_offset(text_).value_or(0);
    if (error != simdjson::UNESCAPED_CHARS) return text_.size();  // an unclosed string, no JSON
    // The first control character inside a string is the last byte of the shortest prefix in
    // which simdjson finds one. Only failing documents pay for this search.
    size_t lo = 0, hi = text_.size();  // the prefix of length lo is clean, hi's is not
    while (hi - lo > 1) {
      size_t mid = lo + (hi - lo) / 2;
      (has_unescaped_chars(text_.substr(0, mid)) ? hi : lo) = mid;
    }
    return lo;
  }
  // simdjson reports an unclosed string before unescaped characters, and a prefix often ends
  // inside a string: one quote closes it, two when the prefix ends in an escaping backslash, and
  // two add a closed empty string to a prefix that ends outside strings.
  bool has_unescaped_chars(std::string_view prefix) {
    for (std::string_view tail : {"", "\"", "\"\""}) {
      simdjson::padded_string text(std::string(prefix) + std::string(tail));
      od::document ignored;
      if (parser_.iterate(text).get(ignored) == simdjson::UNESCAPED_CHARS) return true;
    }
    return false;
  }

  // The root goes through od::document, everything below it through od::value: simdjson
  // checks that nothing follows a root scalar.
  template <class V>
  Value value(V& v, int depth) {
    od::json_type type;
    check(v.type().get(type), v);
    switch (type) {
      case od::json_type::object: {
        if (depth > kMaxDepth) check(simdjson::DEPTH_ERROR, v);
        od::object o;
        check(v.get_object().get(o), v);
        return Value{object(o, depth)};
      }
      case od::json_type::array: {
        if (depth > kMaxDepth) check(simdjson::DEPTH_ERROR, v);
        od::array a;
        check(v.get_array().get(a), v);
        return Value{array(a, depth)};
      }
      case od::json_type::string: {
        std::string_view s;
        check(v.get_string().get(s), v, simdjson::STRING_ERROR);
        return Value{std::string(s)};
      }
      case od::json_type::boolean: {
        bool b = false;
        check(v.get_bool().get(b), v,
              raw_token(v).starts_with('f') ? simdjson::F_ATOM_ERROR : simdjson::T_ATOM_ERROR);
        return Value{b};
      }
      case od::json_type::null: {
        bool null = false;
        check(v.is_null().get(null), v, simdjson::N_ATOM_ERROR);
        if (!null) check(simdjson::N_ATOM_ERROR, v);
        return Value{nullptr};
      }
      case od::json_type::number: {
        std::string_view raw = raw_token(v);
        Number n;
        n.raw = std::string(raw.substr(0, raw.find_last_not_of(kWhitespace) + 1));
        check(v.get_double().get(n.value), v, simdjson::NUMBER_ERROR);
        return Value{std::move(n)};
      }
    }
    check(simdjson::TAPE_ERROR, v);
    return Value{};
  }

  Object object(od::object& o, int depth) {
    Object members;
    for (auto field : o) {
      od::field f;
      check(std::move(field).get(f));
      std::string_view key;
      check(f.unescaped_key().get(key));
      std::string k(key);
      od::value v = f.value();
      members.emplace_back(std::move(k), value(v, depth + 1));
    }
    return members;
  }

  Array array(od::array& a, int depth) {
    Array items;
    for (auto item : a) {
      od::value v;
      check(std::move(item).get(v));
      items.push_back(value(v, depth + 1));
    }
    return items;
  }

  // The value's token and the whitespace after it; empty when simdjson has none to give.
  template <class V>
  static std::string_view raw_token(V& v) {
    // od::value hands back the view as is, od::document wrapped in a result.
    simdjson::simdjson_result<std::string_view> token = v.raw_json_token();
    std::string_view raw;
    return std::move(token).get(raw) == simdjson::SUCCESS ? raw : std::string_view();
  }

  std::string_view text_;
  simdjson::padded_string padded_;
  od::parser parser_;
  od::document* doc_ = nullptr;
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
  return Reader(text).document();
}

std::optional<size_t> utf8_error_offset(std::string_view s) {
  if (simdjson::validate_utf8(s.data(), s.size())) return std::nullopt;
  // simdjson says whether, not where: walk the sequences, letting simdjson judge each one
  // (overlong forms, surrogates, values above U+10FFFF), until the first it refuses.
  for (size_t i = 0; i < s.size();) {
    auto lead = static_cast<unsigned char>(s[i]);
    size_t len = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    if (i + len > s.size() || !simdjson::validate_utf8(s.data() + i, len)) return i;
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
