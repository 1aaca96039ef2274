#include "ir/text_cursor.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "rlx/core/error.h"
#include "rlx/core/half.h"

namespace rlx::text {

void Cursor::error_at(size_t at, const std::string& msg) const {
  int line = 1, col = 1;
  for (size_t i = 0; i < at && i < s_.size(); ++i) {
    if (s_[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  throw_user_error(fmt::format("{}:{}:{}: {}", source_, line, col, msg));
}

void Cursor::skip_ws() {
  while (!at_end()) {
    char c = s_[pos_];
    if (c == '#' || (c == '/' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '/')) {
      while (!at_end() && s_[pos_] != '\n') ++pos_;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++pos_;
    } else {
      break;
    }
  }
}

void Cursor::expect_end(std::string_view what) {
  skip_ws();
  if (!at_end()) error(fmt::format("unexpected text after {}", what));
}

bool Cursor::accept(char c) {
  if (!peek(c)) return false;
  ++pos_;
  return true;
}

void Cursor::expect(char c, std::string_view context) {
  if (!accept(c)) error(fmt::format("expected '{}' {}", c, context));
}

bool Cursor::accept_word(std::string_view w) {
  skip_ws();
  if (s_.substr(pos_, w.size()) != w) return false;
  if (pos_ + w.size() < s_.size() && ident_char(s_[pos_ + w.size()])) return false;
  pos_ += w.size();
  return true;
}

void Cursor::expect_word(std::string_view w, std::string_view context) {
  if (!accept_word(w)) error(fmt::format("expected '{}' {}", w, context));
}

bool Cursor::ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

std::string Cursor::ident(std::string_view what, bool allow_colon) {
  size_t b = here();
  while (!at_end() && (ident_char(s_[pos_]) || (allow_colon && s_[pos_] == ':'))) ++pos_;
  if (b == pos_) error(fmt::format("expected {}", what));
  return std::string(s_.substr(b, pos_ - b));
}

std::string Cursor::string_lit() {
  expect('"', "to open a string");
  std::string out;
  while (!at_end() && s_[pos_] != '"') {
    char c = s_[pos_++];
    if (c == '\\' && !at_end()) {
      char e = s_[pos_++];
      out += e == 'n' ? '\n' : e;
    } else {
      out += c;
    }
  }
  if (at_end()) error("unterminated string");
  ++pos_;
  return out;
}

std::string Cursor::name(std::string_view what, bool allow_colon) {
  if (peek('"')) return string_lit();
  return ident(what, allow_colon);
}

std::string Cursor::value_name() {
  expect('%', fmt::format("before {}", dialect_.value_noun));
  if (cur() == '"') return string_lit();
  size_t b = pos_;
  while (!at_end() && ident_char(s_[pos_])) ++pos_;
  if (b == pos_) error(fmt::format("expected {} after '%'", dialect_.value_noun));
  return std::string(s_.substr(b, pos_ - b));
}

std::string_view Cursor::digits() {
  size_t b = pos_;
  while (!at_end() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  return s_.substr(b, pos_ - b);
}

double Cursor::number(bool* is_int) {
  size_t b = here();
  if (cur() == '-' || cur() == '+') ++pos_;
  if (accept_word("inf")) {
    *is_int = false;
    return s_[b] == '-' ? -INFINITY : INFINITY;
  }
  if (accept_word("nan")) {
    *is_int = false;
    return NAN;
  }
  while (!at_end() &&
         (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.' ||
          ((s_[pos_] == '-' || s_[pos_] == '+') && (s_[pos_ - 1] == 'e' || s_[pos_ - 1] == 'E'))))
    ++pos_;
  std::string tok(s_.substr(b, pos_ - b));
  *is_int = tok.find_first_of(".eE") == std::string::npos;
  try {
    size_t used = 0;
    double v = *is_int ? static_cast<double>(std::stoll(tok, &used)) : std::stod(tok, &used);
    if (used != tok.size()) throw std::invalid_argument(tok);
    return v;
  } catch (...) {
    error_at(b, tok.empty() ? dialect_.no_number : "bad number '" + tok + "'");
  }
}

int64_t Cursor::integer(std::string_view what) {
  size_t b = here();
  if (dialect_.integers_as_numbers) {
    bool is_int = false;
    number(&is_int);
    if (!is_int) error_at(b, fmt::format("expected {}", what));
    // Re-read exactly: doubles lose precision above 2^53.
    return std::stoll(std::string(s_.substr(b, pos_ - b)));
  }
  if (cur() == '-') ++pos_;
  digits();
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s_.data() + b, s_.data() + pos_, v);
  if (b == pos_ || end != s_.data() + pos_ || ec == std::errc::invalid_argument) {
    pos_ = b;
    error(fmt::format("expected {}", what));
  }
  if (ec == std::errc::result_out_of_range)
    error_at(b, fmt::format("integer {} is out of range", s_.substr(b, pos_ - b)));
  return v;
}

DType Cursor::dtype() {
  size_t at = here();
  std::string n = ident("a dtype");
  auto d = parse_dtype(n);
  if (!d) error_at(at, fmt::format("unknown dtype '{}'", n));
  return *d;
}

Attrs Cursor::attrs() {
  Attrs out;
  if (!accept('{')) return out;
  if (accept('}')) return out;
  do {
    size_t at = here();
    std::string key =
        dialect_.quoted_attr_names ? name("an attribute name") : ident("an attribute name");
    expect('=', "after an attribute name");
    if (out.count(key)) error_at(at, "attribute '" + key + "' is given twice");
    out[key] = attr_value();
  } while (accept(','));
  expect('}', "to close the attribute list");
  return out;
}

AttrValue Cursor::attr_value() {
  if (peek('"')) return string_lit();
  if (peek('[')) return list_attr();
  if (accept_word("true")) return true;
  if (accept_word("false")) return false;
  if (accept_word("dense")) return dense();
  std::string_view rest = s_.substr(here());
  if (std::isalpha(static_cast<unsigned char>(cur())) && rest.substr(0, 3) != "inf" &&
      rest.substr(0, 3) != "nan")
    return dtype();
  size_t b = pos_;
  bool is_int = false;
  double v = number(&is_int);
  if (!is_int) return v;
  pos_ = b;
  return integer();
}

// [1, 2] is an IntList; a list with any symbol is a Shape. A symbolic entry may be a product
// ("B*S", "4*S"), as flattened dims print.
AttrValue Cursor::list_attr() {
  IntList ints;
  Shape shape;
  bool symbolic = false;
  expect('[', "to open a list");
  if (accept(']')) return ints;
  do {
    skip_ws();
    std::string product;
    bool entry_symbolic = false;
    int64_t v = 0;
    do {
      skip_ws();
      if (std::isalpha(static_cast<unsigned char>(cur())) || cur() == '_') {
        entry_symbolic = true;
        product += (product.empty() ? "" : "*") + ident("a symbol");
      } else {
        v = integer();
        product += (product.empty() ? "" : "*") + std::to_string(v);
      }
    } while (accept('*'));
    if (entry_symbolic) {
      symbolic = true;
      shape.push_back(Dim::symbol(product));
    } else {
      if (product.find('*') != std::string::npos) error("a product of sizes must be written as one size");
      ints.push_back(v);
      shape.push_back(Dim(v));
    }
  } while (accept(','));
  expect(']', "to close a list");
  if (symbolic) return shape;
  return ints;
}

Tensor Cursor::dense() {
  expect('<', "after 'dense'");
  auto [dt, shape] = dense_type();
  expect(':', "after a dense constant's type");
  Tensor out(dt, shape);
  std::string type = fmt::format("{}{}", dtype_name(dt), out.shape_str());
  size_t values_at = here();
  expect('[', "to open a dense constant's values");
  int64_t n = out.numel(), i = 0;
  if (!peek(']')) {
    do {
      if (i >= n) error(fmt::format("more than {} values for {}", n, type));
      dense_element(out, i++);
    } while (accept(','));
  }
  expect(']', "to close a dense constant's values");
  if (i != n)
    error_at(dialect_.count_error_at_values ? values_at : pos_,
             fmt::format("{} values for {}, which holds {}", i, type, n));
  expect('>', "to close 'dense<'");
  return out;
}

void Cursor::dense_element(Tensor& t, int64_t i) {
  skip_ws();
  if (t.dtype() == DType::kBool) {
    if (accept_word("true")) {
      t.as<uint8_t>()[i] = 1;
    } else if (accept_word("false")) {
      t.as<uint8_t>()[i] = 0;
    } else {
      error("expected true or false");
    }
    return;
  }
  bool is_int = false;
  if (t.dtype() == DType::kC64) {
    expect('(', "to open a complex value");
    auto re = static_cast<float>(number(&is_int));
    expect(',', "between real and imaginary parts");
    auto im = static_cast<float>(number(&is_int));
    expect(')', "to close a complex value");
    t.as<float>()[2 * i] = re;
    t.as<float>()[2 * i + 1] = im;
    return;
  }
  if (t.dtype() == DType::kU64) {  // above INT64_MAX: read as unsigned
    size_t b = here();
    digits();
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(s_.data() + b, s_.data() + pos_, v);
    if (b == pos_ || end != s_.data() + pos_ || ec != std::errc()) {
      pos_ = b;
      error("expected an unsigned 64-bit integer");
    }
    t.as<uint64_t>()[i] = v;
    return;
  }
  if (is_integer(t.dtype())) {
    int64_t v = integer();
    switch (t.dtype()) {
      case DType::kI8:
        t.as<int8_t>()[i] = static_cast<int8_t>(v);
        break;
      case DType::kU8:
        t.as<uint8_t>()[i] = static_cast<uint8_t>(v);
        break;
      case DType::kI16:
        t.as<int16_t>()[i] = static_cast<int16_t>(v);
        break;
      case DType::kI32:
        t.as<int32_t>()[i] = static_cast<int32_t>(v);
        break;
      case DType::kU16:
        t.as<uint16_t>()[i] = static_cast<uint16_t>(v);
        break;
      case DType::kU32:
        t.as<uint32_t>()[i] = static_cast<uint32_t>(v);
        break;
      default:
        t.as<int64_t>()[i] = v;
        break;
    }
    return;
  }
  double v = number(&is_int);
  switch (t.dtype()) {
    case DType::kF16:
      t.as<uint16_t>()[i] = f32_to_f16(static_cast<float>(v));
      break;
    case DType::kBF16:
      t.as<uint16_t>()[i] = f32_to_bf16(static_cast<float>(v));
      break;
    case DType::kF32:
      t.as<float>()[i] = static_cast<float>(v);
      break;
    default:
      t.as<double>()[i] = v;
      break;
  }
}

std::string Cursor::loc() {
  if (!accept_word("loc")) return "";
  expect('(', "after 'loc'");
  std::string out = string_lit();
  expect(')', "to close loc(");
  return out;
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out + "\"";
}

}  // namespace rlx::text
