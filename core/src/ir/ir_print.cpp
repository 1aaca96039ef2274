#include <fmt/format.h>

#include "ir/text_cursor.h"

#include "rlx/core/ir_text.h"

namespace rlx {

namespace {

bool bare_name(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  return true;
}

using text::quote;

std::string value_ref(const Graph& g, ValueId v) {
  const std::string& n = g.values.at(v).name;
  return "%" + (bare_name(n) ? n : quote(n));
}

void print_into(const Graph& g, int indent, std::string& out);

std::string arg_list(const Graph& g, const std::vector<ValueId>& vs) {
  std::string s;
  for (size_t i = 0; i < vs.size(); ++i)
    s += fmt::format("{}{}: {}", i ? ", " : "", value_ref(g, vs[i]), g.type(vs[i]).str());
  return s;
}

void print_node(const Graph& g, const Node& n, int indent, std::string& out) {
  std::string pad(indent, ' ');
  out += pad;
  for (size_t i = 0; i < n.outputs.size(); ++i) out += (i ? ", " : "") + value_ref(g, n.outputs[i]);
  out += " = " + n.op + "(";
  for (size_t i = 0; i < n.inputs.size(); ++i) out += (i ? ", " : "") + value_ref(g, n.inputs[i]);
  out += ")";
  if (!n.attrs.empty()) {
    out += " {";
    bool first = true;
    for (auto& [k, v] : n.attrs) {
      out += fmt::format("{}{} = {}", first ? "" : ", ", k, attr_str(v));
      first = false;
    }
    out += "}";
  }
  out += " : ";
  for (size_t i = 0; i < n.outputs.size(); ++i) out += (i ? ", " : "") + g.type(n.outputs[i]).str();
  if (!n.loc.empty()) out += " loc(" + quote(n.loc) + ")";
  if (!n.regions.empty()) {
    out += " [\n";
    for (size_t r = 0; r < n.regions.size(); ++r) {
      print_into(*n.regions[r], indent + 2, out);
      if (r + 1 < n.regions.size()) out += ",";
      out += "\n";
    }
    out += pad + "]";
  }
  out += "\n";
}

void print_into(const Graph& g, int indent, std::string& out) {
  std::string pad(indent, ' ');
  out += pad + "graph @" + g.name + "(" + arg_list(g, g.inputs) + ")";
  if (!g.params.empty()) out += " params(" + arg_list(g, g.params) + ")";
  out += " {\n";
  for (const Node& n : g.nodes) print_node(g, n, indent + 2, out);
  out += pad + "  return";
  for (size_t i = 0; i < g.outputs.size(); ++i) out += (i ? ", " : " ") + value_ref(g, g.outputs[i]);
  out += "\n" + pad + "}";
}

}  // namespace

std::string print_graph(const Graph& g) {
  std::string out;
  print_into(g, 0, out);
  return out + "\n";
}

}  // namespace rlx
