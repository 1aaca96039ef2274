#include "rlx/core/graph.h"

#include <fmt/format.h>

#include <algorithm>

#include "rlx/core/error.h"

namespace rlx {

namespace {
[[noreturn]] void bad_attr(const Node& n, const std::string& key, const char* want) {
  throw_user_error(fmt::format("{}: attribute '{}' {}", n.op, key,
                               n.has_attr(key) ? std::string("must be ") + want : "is missing"));
}
}  // namespace

int64_t Node::attr_int(const std::string& key) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) bad_attr(*this, key, "an integer");
  if (auto* v = std::get_if<int64_t>(&it->second)) return *v;
  if (auto* b = std::get_if<bool>(&it->second)) return *b;
  bad_attr(*this, key, "an integer");
}

int64_t Node::attr_int(const std::string& key, int64_t fallback) const {
  return has_attr(key) ? attr_int(key) : fallback;
}

double Node::attr_float(const std::string& key, double fallback) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (auto* v = std::get_if<double>(&it->second)) return *v;
  if (auto* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  bad_attr(*this, key, "a number");
}

std::string Node::attr_string(const std::string& key, const std::string& fallback) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (auto* v = std::get_if<std::string>(&it->second)) return *v;
  bad_attr(*this, key, "a string");
}

const IntList& Node::attr_ints(const std::string& key) const {
  static const IntList kEmpty;
  auto it = attrs.find(key);
  if (it == attrs.end()) bad_attr(*this, key, "a list of integers");
  if (auto* v = std::get_if<IntList>(&it->second)) return *v;
  // An empty list prints as [] and parses back as an empty shape.
  if (auto* s = std::get_if<Shape>(&it->second); s && s->empty()) return kEmpty;
  bad_attr(*this, key, "a list of integers");
}

Shape Node::attr_shape(const std::string& key) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) bad_attr(*this, key, "a shape");
  if (auto* s = std::get_if<Shape>(&it->second)) return *s;
  if (auto* v = std::get_if<IntList>(&it->second)) return Shape(v->begin(), v->end());
  bad_attr(*this, key, "a shape");
}

DType Node::attr_dtype(const std::string& key) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) bad_attr(*this, key, "a dtype");
  if (auto* v = std::get_if<DType>(&it->second)) return *v;
  bad_attr(*this, key, "a dtype");
}

const Tensor& Node::attr_tensor(const std::string& key) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) bad_attr(*this, key, "a dense tensor");
  if (auto* v = std::get_if<Tensor>(&it->second)) return *v;
  bad_attr(*this, key, "a dense tensor");
}

ValueId Graph::add_value(std::string name, TensorType type, int32_t producer) {
  if (name.empty()) name = fresh_name();
  names_.insert(name);
  values.push_back(Value{std::move(name), std::move(type), producer});
  return static_cast<ValueId>(values.size() - 1);
}

ValueId Graph::add_input(std::string name, TensorType type) {
  ValueId v = add_value(std::move(name), std::move(type));
  inputs.push_back(v);
  return v;
}

ValueId Graph::add_param(std::string name, TensorType type, Tensor data) {
  ValueId v = add_value(name, std::move(type));
  params.push_back(v);
  if (data.defined() && data.numel() > 0) weights[name] = std::move(data);
  return v;
}

int32_t Graph::add_node(std::string op, std::vector<ValueId> ins, std::vector<TensorType> out_types,
                        Attrs attrs, std::string loc) {
  auto idx = static_cast<int32_t>(nodes.size());
  Node n;
  n.op = std::move(op);
  n.inputs = std::move(ins);
  n.attrs = std::move(attrs);
  n.loc = std::move(loc);
  for (auto& t : out_types) n.outputs.push_back(add_value({}, std::move(t), idx));
  nodes.push_back(std::move(n));
  return idx;
}

std::optional<ValueId> Graph::find_value(const std::string& name) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == name) return static_cast<ValueId>(i);
  return std::nullopt;
}

std::string Graph::fresh_name(const std::string& hint) {
  for (;;) {
    std::string n = fmt::format("{}{}", hint, name_counter_++);
    if (!names_.count(n)) return n;
  }
}

std::string Graph::describe_node(int32_t node) const {
  const Node& n = nodes.at(node);
  std::string out = n.outputs.empty() ? std::string("<no result>") : "%" + values[n.outputs[0]].name;
  out += " (" + n.op;
  if (!n.loc.empty()) out += " '" + n.loc + "'";
  return out + ")";
}

std::vector<std::string> Graph::symbols() const {
  std::vector<std::string> out;
  for (ValueId v : inputs)
    for (const Dim& d : values[v].type.shape)
      if (!d.is_static() && std::find(out.begin(), out.end(), d.sym) == out.end())
        out.push_back(d.sym);
  return out;
}

}  // namespace rlx
