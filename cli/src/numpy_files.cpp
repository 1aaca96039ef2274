#include "numpy_files.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string_view>

#include "errors.h"
#include "zip_reader.h"

namespace rlx::cli {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr int64_t kMaxElements = int64_t{1} << 40;
constexpr const char* kNpyHint =
    "save the array with numpy's np.save (np.savez for several), little-endian and in C order: "
    "np.save(path, np.ascontiguousarray(a, dtype=a.dtype.newbyteorder('<')))";

[[noreturn]] void fail(const std::string& where, const std::string& why,
                       const std::string& hint = kNpyHint) {
  throw CliError(fmt::format("{} {}", where, why), hint);
}

// The header is a Python dict literal written by numpy:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& where) : text_(text), where_(where) {}

  Header parse() {
    Header h;
    bool has_descr = false, has_order = false, has_shape = false;
    expect('{');
    while (!take('}')) {
      const std::string key = string();
      expect(':');
      if (key == "descr") {
        has_descr = true;
        skip_space();
        if (pos_ < text_.size() && text_[pos_] == '[')
          fail(where_, "holds a structured array (fields), not one of numbers",
               "save each field as an array of its own");
        h.descr = string();
      } else if (key == "fortran_order") {
        has_order = true;
        h.fortran_order = boolean();
      } else if (key == "shape") {
        has_shape = true;
        h.shape = tuple();
      } else {
        bad(fmt::format("an unknown key '{}'", key));
      }
      if (!take(',')) {
        expect('}');
        break;
      }
    }
    if (!has_descr || !has_order || !has_shape) bad("no 'descr', 'fortran_order' or 'shape' key");
    return h;
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    fail(where_, fmt::format("has a malformed .npy header ({})", what));
  }
  void skip_space() {
    while (pos_ < text_.size() && std::strchr(" \t\n", text_[pos_])) ++pos_;
  }
  bool take(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) return ++pos_, true;
    return false;
  }
  void expect(char c) {
    if (!take(c)) bad(fmt::format("expected '{}' at character {}", c, pos_));
  }
  std::string string() {
    skip_space();
    const char quote = pos_ < text_.size() ? text_[pos_] : '\0';
    if (quote != '\'' && quote != '"') bad(fmt::format("expected a string at character {}", pos_));
    const size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) bad("an unterminated string");
    std::string s(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return s;
  }
  bool boolean() {
    skip_space();
    for (auto [word, value] : {std::pair{"True", true}, std::pair{"False", false}})
      if (text_.substr(pos_).starts_with(word)) return pos_ += std::strlen(word), value;
    bad("fortran_order is neither True nor False");
  }
  std::vector<int64_t> tuple() {
    std::vector<int64_t> dims;
    expect('(');
    int64_t elements = 1;
    while (!take(')')) {
      skip_space();
      int64_t d = 0;
      size_t digits = 0;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        d = d * 10 + (text_[pos_++] - '0');
        if (d > kMaxElements) fail(where_, "has a dim over 2^40");
        ++digits;
      }
      if (digits == 0) bad(fmt::format("expected a dim at character {}", pos_));
      if (d > 0 && elements > kMaxElements / d) fail(where_, "has more than 2^40 elements");
      elements *= d;
      dims.push_back(d);
      if (!take(',')) {
        expect(')');
        break;
      }
    }
    return dims;
  }

  std::string_view text_;
  const std::string& where_;
  size_t pos_ = 0;
};

// The dtypes an input can have, as numpy spells them little-endian ('|' for one byte, where
// order means nothing; numpy writes '|' there but reads '<' too).
std::optional<DType> dtype_of(const std::string& descr) {
  static const std::pair<const char*, DType> kTypes[] = {
      {"b1", DType::kBool}, {"i1", DType::kI8},  {"u1", DType::kU8},  {"i2", DType::kI16},
      {"u2", DType::kU16},  {"i4", DType::kI32}, {"u4", DType::kU32}, {"i8", DType::kI64},
      {"u8", DType::kU64},  {"f2", DType::kF16}, {"f4", DType::kF32}, {"f8", DType::kF64},
      {"c8", DType::kC64}};
  if (descr.size() != 3) return std::nullopt;
  for (const auto& [code, dtype] : kTypes)
    if (descr.substr(1) == code) {
      const bool one_byte = dtype_size(dtype) == 1;
      if (descr[0] == '<' || (one_byte && descr[0] == '|')) return dtype;
    }
  return std::nullopt;
}

std::string read_file(const std::string& path, const char* what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw CliError(fmt::format("{} file '{}' does not exist", what, path),
                   "check the path (it is relative to the current folder)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CliError(fmt::format("cannot read {}", path), "check that the file is readable");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

Tensor parse_npy(const std::string& bytes, const std::string& where) {
  if (!std::string_view(bytes).starts_with(kMagic) || bytes.size() < kMagic.size() + 4)
    fail(where, "is not a .npy file (it does not start with numpy's magic \\x93NUMPY)");
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(bytes[i]); };
  const int major = byte(6);
  if (major < 1 || major > 3)
    fail(where, fmt::format("has .npy format version {}.{}; rlx reads 1.0 to 3.0", major, byte(7)));
  // Version 1 gives the header length in two bytes, versions 2 and 3 in four.
  size_t header_at = 10, header_length = byte(8) | (byte(9) << 8);
  if (major >= 2) {
    if (bytes.size() < 12) fail(where, "is truncated inside its header");
    header_at = 12;
    header_length = byte(8) | (byte(9) << 8) | (byte(10) << 16) | (size_t{byte(11)} << 24);
  }
  if (bytes.size() - header_at < header_length) fail(where, "is truncated inside its header");
  const Header h =
      HeaderParser(std::string_view(bytes).substr(header_at, header_length), where).parse();

  const std::optional<DType> dtype = dtype_of(h.descr);
  if (!dtype) {
    if (h.descr.size() > 1 && h.descr[0] == '>')
      fail(where, fmt::format("is big-endian ('{}'); rlx reads little-endian arrays", h.descr),
           "convert it before saving: a.astype(a.dtype.newbyteorder('<'))");
    fail(
        where,
        fmt::format("has dtype '{}', which rlx does not take (it takes <f2 <f4 <f8 <c8 |b1 |i1 |u1 "
                    "<i2 <u2 <i4 <u4 <i8 <u8)",
                    h.descr),
        "convert the array to a numeric dtype the model's input has (a.astype(np.float32))");
  }
  // A one-dimensional array reads the same in either order; numpy only writes True for 2-D+.
  if (h.fortran_order && h.shape.size() > 1)
    fail(where, "is in Fortran (column-major) order; rlx reads C order",
         "save np.ascontiguousarray(a) instead of a");

  Tensor t(*dtype, h.shape);
  const size_t data_at = header_at + header_length;
  if (bytes.size() - data_at != t.nbytes())
    fail(where, fmt::format("holds {} bytes of data; a {} array of shape ({}) takes {}",
                            bytes.size() - data_at, h.descr, fmt::join(h.shape, ", "), t.nbytes()));
  std::memcpy(t.data(), bytes.data() + data_at, t.nbytes());
  if (*dtype == DType::kBool)  // numpy reads any nonzero byte as True; rlx's bool is 0 or 1
    for (int64_t i = 0; i < t.numel(); ++i) t.as<uint8_t>()[i] = t.as<uint8_t>()[i] != 0;
  return t;
}

Tensor read_npy(const std::string& path) {
  return parse_npy(read_file(path, ".npy"), path);
}

TensorMap read_npz(const std::string& path) {
  ZipReader zip(path, read_file(path, "inputs"));
  TensorMap tensors;
  for (const ZipMember& m : zip.members()) {
    const std::string where = fmt::format("{} member '{}'", path, m.name);
    if (!m.name.ends_with(".npy"))
      fail(where, "is not a .npy array (np.savez names each member <name>.npy)");
    const std::string name = m.name.substr(0, m.name.size() - 4);
    if (!tensors.emplace(name, parse_npy(zip.read(m), where)).second)
      fail(where, fmt::format("repeats the name '{}'", name), "give each input once");
  }
  return tensors;
}

}  // namespace rlx::cli
