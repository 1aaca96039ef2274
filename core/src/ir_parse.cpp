// Recursive-descent parser for the textual IR (grammar in ir_text.h). Errors carry
// source:line:column and say what was expected.
#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "rlx/core/error.h"
#include "rlx/core/half.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/op_registry.h"
#include "rlx/core/safetensors.h"

namespace rlx {

namespace {

class Parser {
 public:
  Parser(std::string_view text, std::string source) : s_(text), source_(std::move(source)) {}

  Graph parse_top() {
    Graph g = parse_graph_body();
    skip_ws();
    if (pos_ < s_.size()) error("unexpected text after the graph");
    return g;
  }

 private:
  std::string_view s_;
  std::string source_;
  size_t pos_ = 0;

  [[noreturn]] void error(const std::string& msg) const { error_at(pos_, msg); }
  [[noreturn]] void error_at(size_t at, const std::string& msg) const {
    int line = 1, col = 1;
    for (size_t i = 0; i < at && i < s_.size(); ++i) {
      if (s_[i] == '\n') ++line, col = 1;
      else ++col;
    }
    throw_user_error(fmt::format("{}:{}:{}: {}", source_, line, col, msg));
  }

  void skip_ws() {
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == '#' || (c == '/' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '/')) {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++pos_;
      } else {
        break;
      }
    }
  }
  bool peek(char c) { skip_ws(); return pos_ < s_.size() && s_[pos_] == c; }
  bool accept(char c) {
    if (!peek(c)) return false;
    ++pos_;
    return true;
  }
  void expect(char c, const char* context) {
    if (!accept(c)) error(fmt::format("expected '{}' {}", c, context));
  }
  static bool ident_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  }
  std::string ident(const char* what) {
    skip_ws();
    size_t b = pos_;
    while (pos_ < s_.size() && ident_char(s_[pos_])) ++pos_;
    if (b == pos_) error(fmt::format("expected {}", what));
    return std::string(s_.substr(b, pos_ - b));
  }
  bool accept_word(std::string_view w) {
    skip_ws();
    if (s_.substr(pos_, w.size()) != w) return false;
    if (pos_ + w.size() < s_.size() && ident_char(s_[pos_ + w.size()])) return false;
    pos_ += w.size();
    return true;
  }
  std::string string_lit() {
    expect('"', "to open a string");
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c == '\\' && pos_ < s_.size()) {
        char e = s_[pos_++];
        out += e == 'n' ? '\n' : e;
      } else {
        out += c;
      }
    }
    if (pos_ >= s_.size()) error("unterminated string");
    ++pos_;
    return out;
  }
  std::string value_name() {
    expect('%', "before a value name");
    if (pos_ < s_.size() && s_[pos_] == '"') return string_lit();
    size_t b = pos_;
    while (pos_ < s_.size() && ident_char(s_[pos_])) ++pos_;
    if (b == pos_) error("expected a value name after '%'");
    return std::string(s_.substr(b, pos_ - b));
  }

  DType dtype() {
    size_t at = (skip_ws(), pos_);
    std::string name = ident("a dtype");
    auto d = parse_dtype(name);
    if (!d) error_at(at, fmt::format("unknown dtype '{}'", name));
    return *d;
  }
  Dim dim() {
    skip_ws();
    if (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])))) {
      size_t at = pos_;
      std::string num = ident("a dim");
      try {
        return Dim(std::stoll(num));
      } catch (...) {
        error_at(at, "bad dim '" + num + "'");
      }
    }
    return Dim::symbol(ident("a dim size or symbol"));
  }
  TensorType type() {
    TensorType t;
    t.dtype = dtype();
    expect('[', "to open a shape");
    if (!accept(']')) {
      do t.shape.push_back(dim());
      while (accept(','));
      expect(']', "to close a shape");
    }
    return t;
  }

  double number_token(bool* is_int) {
    skip_ws();
    size_t b = pos_;
    if (pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '+')) ++pos_;
    if (accept_word("inf")) { *is_int = false; return s_[b] == '-' ? -INFINITY : INFINITY; }
    if (accept_word("nan")) { *is_int = false; return NAN; }
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.' ||
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
      error_at(b, "bad number '" + tok + "'");
    }
  }
  int64_t int_token() {
    skip_ws();
    size_t b = pos_;
    bool is_int = false;
    double v = number_token(&is_int);
    if (!is_int) error_at(b, "expected an integer");
    // Re-read exactly: doubles lose precision above 2^53.
    return std::stoll(std::string(s_.substr(b, pos_ - b)));
  }

  Tensor dense() {
    expect('<', "after 'dense'");
    TensorType t = type();
    if (!is_static(t.shape)) error("a dense constant needs a static shape");
    expect(':', "after a dense constant's type");
    Tensor out(t.dtype, static_dims(t.shape));
    expect('[', "to open a dense constant's values");
    int64_t n = out.numel(), i = 0;
    if (!peek(']')) {
      do {
        if (i >= n) error(fmt::format("more than {} values for {}", n, t.str()));
        store_element(out, i++);
      } while (accept(','));
    }
    expect(']', "to close a dense constant's values");
    if (i != n) error(fmt::format("{} values for {}, which holds {}", i, t.str(), n));
    expect('>', "to close 'dense<'");
    return out;
  }
  void store_element(Tensor& t, int64_t i);

  AttrValue attr_value() {
    skip_ws();
    if (peek('"')) return string_lit();
    if (peek('[')) {
      ++pos_;
      IntList ints;
      Shape shape;
      bool symbolic = false;
      if (!accept(']')) {
        do {
          skip_ws();
          if (pos_ < s_.size() && (std::isalpha(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) {
            symbolic = true;
            shape.push_back(Dim::symbol(ident("a symbol")));
          } else {
            int64_t v = int_token();
            ints.push_back(v);
            shape.push_back(Dim(v));
          }
        } while (accept(','));
        expect(']', "to close a list");
      }
      if (symbolic) return shape;
      return ints;
    }
    if (accept_word("true")) return true;
    if (accept_word("false")) return false;
    if (accept_word("dense")) return dense();
    skip_ws();
    if (pos_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[pos_])) &&
        s_.substr(pos_, 3) != "inf" && s_.substr(pos_, 3) != "nan") {
      return dtype();
    }
    bool is_int = false;
    size_t b = pos_;
    double v = number_token(&is_int);
    if (is_int) {
      pos_ = b;
      return int_token();
    }
    return v;
  }

  Attrs attrs() {
    Attrs out;
    if (!accept('{')) return out;
    if (accept('}')) return out;
    do {
      size_t at = (skip_ws(), pos_);
      std::string key = ident("an attribute name");
      expect('=', "after an attribute name");
      if (out.count(key)) error_at(at, "attribute '" + key + "' is given twice");
      out[key] = attr_value();
    } while (accept(','));
    expect('}', "to close the attribute list");
    return out;
  }

  ValueId lookup(Graph& g, const std::string& name, size_t at) {
    auto it = names_.back().find(name);
    if (it == names_.back().end()) error_at(at, "use of undefined value %" + name);
    return it->second;
  }
  ValueId define(Graph& g, const std::string& name, TensorType t, size_t at, int32_t producer) {
    if (names_.back().count(name)) error_at(at, "value %" + name + " is defined twice");
    ValueId v = g.add_value(name, std::move(t), producer);
    names_.back()[name] = v;
    return v;
  }

  std::vector<std::pair<std::string, TensorType>> typed_args(std::vector<size_t>* where) {
    std::vector<std::pair<std::string, TensorType>> out;
    expect('(', "to open an argument list");
    if (accept(')')) return out;
    do {
      skip_ws();
      where->push_back(pos_);
      std::string name = value_name();
      expect(':', "after an argument name");
      out.emplace_back(name, type());
    } while (accept(','));
    expect(')', "to close an argument list");
    return out;
  }

  Graph parse_graph_body() {
    if (!accept_word("graph")) error("expected 'graph'");
    expect('@', "before the graph name");
    Graph g;
    g.name = ident("a graph name");
    names_.emplace_back();
    std::vector<size_t> at;
    for (auto& [n, t] : typed_args(&at)) g.inputs.push_back(define(g, n, t, at[g.inputs.size()], -1));
    if (accept_word("params")) {
      at.clear();
      for (auto& [n, t] : typed_args(&at)) g.params.push_back(define(g, n, t, at[g.params.size()], -1));
    }
    expect('{', "to open the graph body");
    for (;;) {
      skip_ws();
      if (accept_word("return")) break;
      parse_node(g);
    }
    if (!peek('}')) {
      do {
        skip_ws();
        size_t a = pos_;
        g.outputs.push_back(lookup(g, value_name(), a));
      } while (accept(','));
    }
    expect('}', "to close the graph body");
    names_.pop_back();
    return g;
  }

  void parse_node(Graph& g) {
    size_t start = pos_;
    std::vector<std::pair<std::string, size_t>> results;
    do {
      skip_ws();
      size_t a = pos_;
      results.emplace_back(value_name(), a);
    } while (accept(','));
    expect('=', "after the result names");
    skip_ws();
    size_t op_at = pos_;
    Node n;
    n.op = ident("an op name");
    if (!OpRegistry::instance().find(n.op)) error_at(op_at, "unknown op '" + n.op + "'");
    expect('(', "to open the operand list");
    if (!accept(')')) {
      do {
        skip_ws();
        size_t a = pos_;
        n.inputs.push_back(lookup(g, value_name(), a));
      } while (accept(','));
      expect(')', "to close the operand list");
    }
    n.attrs = attrs();
    expect(':', "before the result types");
    std::vector<TensorType> types;
    do types.push_back(type());
    while (accept(','));
    if (types.size() != results.size())
      error(fmt::format("{} results but {} types", results.size(), types.size()));
    if (accept_word("loc")) {
      expect('(', "after 'loc'");
      n.loc = string_lit();
      expect(')', "to close loc(");
    }
    if (accept('[')) {
      do n.regions.push_back(std::make_shared<Graph>(parse_graph_body()));
      while (accept(','));
      expect(']', "to close the region list");
    }
    auto idx = static_cast<int32_t>(g.nodes.size());
    for (size_t i = 0; i < results.size(); ++i)
      n.outputs.push_back(define(g, results[i].first, types[i], results[i].second, idx));
    g.nodes.push_back(std::move(n));
    try {
      auto inferred = infer_node(g, idx);
      if (inferred.size() != types.size())
        error_at(start, fmt::format("{} gives {} results, {} declared", g.nodes[idx].op,
                                    inferred.size(), types.size()));
      for (size_t i = 0; i < types.size(); ++i)
        if (!(inferred[i] == types[i]))
          error_at(start, fmt::format("%{} is declared {} but {} gives {}", results[i].first,
                                      types[i].str(), g.nodes[idx].op, inferred[i].str()));
    } catch (const Error& e) {
      if (std::string(e.what()).rfind(source_ + ":", 0) == 0) throw;
      error_at(start, e.what());
    }
  }

  std::vector<std::map<std::string, ValueId>> names_;
};

void Parser::store_element(Tensor& t, int64_t i) {
  skip_ws();
  if (t.dtype() == DType::kBool) {
    if (accept_word("true")) { t.as<uint8_t>()[i] = 1; return; }
    if (accept_word("false")) { t.as<uint8_t>()[i] = 0; return; }
    error("expected true or false");
  }
  if (t.dtype() == DType::kC64) {
    bool d;
    expect('(', "to open a complex value");
    float re = static_cast<float>(number_token(&d));
    expect(',', "between real and imaginary parts");
    float im = static_cast<float>(number_token(&d));
    expect(')', "to close a complex value");
    t.as<float>()[2 * i] = re, t.as<float>()[2 * i + 1] = im;
    return;
  }
  if (is_integer(t.dtype())) {
    int64_t v = int_token();
    switch (t.dtype()) {
      case DType::kI8: t.as<int8_t>()[i] = static_cast<int8_t>(v); break;
      case DType::kU8: t.as<uint8_t>()[i] = static_cast<uint8_t>(v); break;
      case DType::kI16: t.as<int16_t>()[i] = static_cast<int16_t>(v); break;
      case DType::kI32: t.as<int32_t>()[i] = static_cast<int32_t>(v); break;
      default: t.as<int64_t>()[i] = v; break;
    }
    return;
  }
  bool is_int = false;
  double v = number_token(&is_int);
  switch (t.dtype()) {
    case DType::kF16: t.as<uint16_t>()[i] = f32_to_f16(static_cast<float>(v)); break;
    case DType::kBF16: t.as<uint16_t>()[i] = f32_to_bf16(static_cast<float>(v)); break;
    case DType::kF32: t.as<float>()[i] = static_cast<float>(v); break;
    default: t.as<double>()[i] = v; break;
  }
}

}  // namespace

Graph parse_graph(std::string_view text, const std::string& source) {
  return Parser(text, source).parse_top();
}

Graph load_graph_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_user_error(fmt::format("{}: cannot open the model file", path.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  Graph g = parse_graph(ss.str(), path.string());
  if (g.params.empty()) return g;
  auto weights_path = path;
  weights_path.replace_extension(".safetensors");
  if (!std::filesystem::exists(weights_path))
    throw_user_error(fmt::format("{}: the graph has {} params but the weights file {} does not exist",
                                 path.string(), g.params.size(), weights_path.string()));
  TensorMap weights = read_safetensors(weights_path);
  for (ValueId p : g.params) {
    const Value& v = g.values[p];
    auto it = weights.find(v.name);
    if (it == weights.end())
      throw_user_error(fmt::format("{}: param %{} is missing from {}", path.string(), v.name,
                                   weights_path.string()));
    const Tensor& t = it->second;
    Shape s(t.shape().begin(), t.shape().end());
    if (t.dtype() != v.type.dtype || !(s == v.type.shape))
      throw_user_error(fmt::format("{}: param %{} is declared {} but {} holds {}{}", path.string(),
                                   v.name, v.type.str(), weights_path.string(),
                                   dtype_name(t.dtype()), shape_str(s)));
    g.weights[v.name] = t;
  }
  return g;
}

}  // namespace rlx
