// The graph shared by HIR and MIR: values in SSA form, nodes in topological order. Which level a
// node belongs to is a property of its op (see op_registry.h), so a graph may mix both while it
// is being lowered.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "rlx/core/attr.h"
#include "rlx/core/shape.h"
#include "rlx/core/tensor.h"

namespace rlx {

using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;

struct Value {
  std::string name;   // textual name without '%'; unique within a graph
  TensorType type;
  int32_t producer = -1;  // node index; -1 for graph inputs and params
};

struct Graph;

struct Node {
  std::string op;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  Attrs attrs;
  std::string loc;  // source name (an ONNX node, a builder's layer name); may be empty
  std::vector<std::shared_ptr<Graph>> regions;  // bodies of while/scan

  // Attribute accessors that throw a user error naming the attribute when it is missing or of
  // the wrong kind.
  int64_t attr_int(const std::string& key) const;
  int64_t attr_int(const std::string& key, int64_t fallback) const;
  double attr_float(const std::string& key, double fallback) const;
  std::string attr_string(const std::string& key, const std::string& fallback) const;
  const IntList& attr_ints(const std::string& key) const;
  Shape attr_shape(const std::string& key) const;  // accepts an IntList too
  DType attr_dtype(const std::string& key) const;
  const Tensor& attr_tensor(const std::string& key) const;
  bool has_attr(const std::string& key) const { return attrs.count(key) != 0; }
};

struct Graph {
  std::string name = "main";
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<ValueId> inputs;   // runtime inputs, by name
  std::vector<ValueId> params;   // weights, bound from `weights` by value name
  std::vector<ValueId> outputs;
  std::map<std::string, Tensor> weights;

  ValueId add_value(std::string name, TensorType type, int32_t producer = -1);
  ValueId add_input(std::string name, TensorType type);
  ValueId add_param(std::string name, TensorType type, Tensor data = {});
  // Appends a node whose outputs are created with the given types; returns its index.
  int32_t add_node(std::string op, std::vector<ValueId> inputs, std::vector<TensorType> out_types,
                   Attrs attrs = {}, std::string loc = {});
  const TensorType& type(ValueId v) const { return values.at(v).type; }
  std::optional<ValueId> find_value(const std::string& name) const;
  // Keeps `name` from being handed out by fresh_name (names about to be copied in).
  void reserve_name(const std::string& name) { names_.insert(name); }
  // A fresh value name not used in this graph ("t12").
  std::string fresh_name(const std::string& hint = "t");
  // Name shown in messages: "%h (Linear 'fc1')".
  std::string describe_node(int32_t node) const;
  // Symbols used by input shapes, in first-seen order.
  std::vector<std::string> symbols() const;

 private:
  int64_t name_counter_ = 0;
  std::unordered_set<std::string> names_;  // every name given out by add_value
};

}  // namespace rlx
