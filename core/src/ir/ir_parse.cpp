// Recursive-descent parser for the textual IR (grammar in ir_text.h). Tokens, attribute values
// and the source:line:column errors come from the lexer it shares with the LIR text
// (text_cursor.h); this file holds the graph grammar and its checks.
#include <fmt/format.h>

#include <cctype>
#include <fstream>
#include <sstream>

#include "rlx/core/error.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/op_registry.h"
#include "rlx/core/safetensors.h"
#include "ir/text_cursor.h"

namespace rlx {

namespace {

class Parser : private text::Cursor {
 public:
  Parser(std::string_view input, std::string source)
      : Cursor(input, std::move(source), text::kGraphText) {}

  Graph parse_top() {
    Graph g = parse_graph_body();
    expect_end("the graph");
    return g;
  }

 private:
  // A dim is a size, a symbol, or a product of factors ("batch*seq", "4*seq") as the printer
  // writes a flattened symbolic dim.
  Dim dim() {
    size_t at = here();
    std::string text;
    bool symbolic = false;
    do {
      if (!text.empty()) text += '*';
      size_t factor_at = here();
      if (std::isdigit(static_cast<unsigned char>(cur()))) {
        std::string num = ident("a dim");
        try {
          (void)std::stoll(num);
        } catch (...) {
          error_at(factor_at, "bad dim '" + num + "'");
        }
        text += num;
      } else {
        text += ident("a dim size or symbol");
        symbolic = true;
      }
    } while (accept('*'));
    if (symbolic) return Dim::symbol(text);
    try {
      if (text.find('*') == std::string::npos) return Dim(std::stoll(text));
    } catch (...) {
      error_at(at, "bad dim '" + text + "'");
    }
    error_at(at, "a product of sizes must be written as one size, got '" + text + "'");
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
  std::pair<DType, std::vector<int64_t>> dense_type() override {
    TensorType t = type();
    if (!is_static(t.shape)) error("a dense constant needs a static shape");
    return {t.dtype, static_dims(t.shape)};
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
      where->push_back(here());
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
    while (!accept_word("return")) parse_node(g);
    if (!peek('}')) {
      do {
        size_t a = here();
        g.outputs.push_back(lookup(g, value_name(), a));
      } while (accept(','));
    }
    expect('}', "to close the graph body");
    names_.pop_back();
    return g;
  }

  void parse_node(Graph& g) {
    size_t start = pos();
    std::vector<std::pair<std::string, size_t>> results;
    do {
      size_t a = here();
      results.emplace_back(value_name(), a);
    } while (accept(','));
    expect('=', "after the result names");
    size_t op_at = here();
    Node n;
    n.op = ident("an op name");
    if (!OpRegistry::instance().find(n.op)) error_at(op_at, "unknown op '" + n.op + "'");
    expect('(', "to open the operand list");
    if (!accept(')')) {
      do {
        size_t a = here();
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
    n.loc = loc();
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
      if (std::string(e.what()).rfind(source() + ":", 0) == 0) throw;
      error_at(start, e.what());
    }
  }

  std::vector<std::map<std::string, ValueId>> names_;
};

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
