// The conversion state shared by the op tables: ONNX value name -> Val, the graph being built,
// and NodeCtx, the view one op handler gets of its node (inputs, attributes, outputs, errors).
#pragma once
#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "rlx/core/builder.h"
#include "rlx/onnx/import.h"
#include "sym_int.h"

namespace rlx::onnx {

// One ONNX value. Host-known values (initializers, Constant outputs, folded shape arithmetic)
// enter the graph only when an op consumes them as data, so shape subgraphs leave no trace.
struct Val {
  TensorType type;
  ValueId id = kNoValue;         // the graph value, once materialized
  std::optional<Tensor> konst;   // fully known on the host
  std::optional<SymTensor> sym;  // an integer tensor known up to the model's symbolic dims
  std::string onnx_name;
  bool initializer = false;  // materializes as a param (weights), not a constant node
  bool bound_input = false;  // a graph input specialised through ImportOptions::input_values
  int onnx_type = 0;  // an ONNX type rlx carries in type.dtype (carried_types.h); 0 otherwise
};
using ValPtr = std::shared_ptr<Val>;

class Converter;

class NodeCtx {
 public:
  NodeCtx(Converter& cv, const ::onnx::NodeProto& node, int opset);

  Converter& cv;
  const ::onnx::NodeProto& node;
  const int opset;
  GraphBuilder& b;

  // Inputs. `i` counts the node's listed inputs; an empty name is an omitted optional input.
  int num_inputs() const { return node.input_size(); }
  bool has(int i) const { return i < node.input_size() && !node.input(i).empty(); }
  ValPtr in(int i) const;
  ValueId x(int i);  // the input as a graph value
  const TensorType& type(int i) const { return in(i)->type; }
  DType dtype(int i) const { return type(i).dtype; }
  int64_t rank(int i) const { return type(i).rank(); }
  const Shape& shape(int i) const { return type(i).shape; }
  // Host views of an input, when known.
  std::optional<SymTensor> sym(int i) const;
  std::optional<Tensor> konst(int i) const;
  // Values the op needs at compile time; the error says which operand and why.
  Tensor need_const(int i, const char* what);
  std::vector<int64_t> need_ints(int i, const char* what);
  std::vector<SymInt> need_syms(int i, const char* what);
  double need_scalar(int i, const char* what);
  // An integer-valued scalar operand (a float one must hold a finite integer in int64 range).
  int64_t need_int(int i, const char* what);

  // Attributes.
  const ::onnx::AttributeProto* attr(const char* name) const;
  bool has_attr(const char* name) const { return attr(name) != nullptr; }
  int64_t attr_i(const char* name, int64_t fallback) const;
  float attr_f(const char* name, float fallback) const;
  std::string attr_s(const char* name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const char* name) const;  // empty when absent
  std::vector<float> attr_floats(const char* name) const;
  Tensor attr_tensor(const char* name) const;

  // Outputs. A handler sets every output the node names (wants(k)).
  int num_outputs() const { return node.output_size(); }
  bool wants(int k) const { return k < node.output_size() && !node.output(k).empty(); }
  void out(int k, ValueId v);
  void out_val(int k, Val v);  // a host-known result; type must be set
  void out_sym(int k, SymTensor s);
  void out_const(int k, Tensor t);

  [[noreturn]] void fail(const std::string& message) const;
  template <typename... A>
  [[noreturn]] void failf(fmt::format_string<A...> f, A&&... a) const {
    fail(fmt::format(f, std::forward<A>(a)...));
  }
  // Fails unless input i has a rank in [lo, hi].
  void expect_rank(int i, int64_t lo, int64_t hi) const;
  // Fails when a table or index list the importer would build on the host has more than
  // 2^26 entries (a malformed or hostile model asking for terabytes).
  void check_count(int64_t count, const char* what) const;
  // Rejects attributes a handler does not implement when they hold a non-default value.
  void reject_attr(const char* name, const char* why) const;

  // Shorthands.
  ValueId scalar(DType d, double v) { return b.scalar(d, v); }
  ValueId full(DType d, const Shape& s, double v) {
    return b.broadcast_in_dim(b.scalar(d, v), s, {});
  }
  ValueId dim_size(ValueId v, int64_t d);  // i64 scalar; a constant when the dim is static
  int64_t axis_attr(const char* name, int64_t fallback, int64_t rank) const;  // normalised
  int64_t norm_axis(int64_t axis, int64_t rank) const;
};

using OpFn = std::function<void(NodeCtx&)>;
using OpTable = std::map<std::string, OpFn>;
// Each op family registers its handlers (ops_*.cpp); the table is built once.
const OpTable& op_table();

class Converter {
 public:
  Converter(const ::onnx::ModelProto& model, std::string display_name,
            std::filesystem::path base_dir, const ImportOptions& options);
  Model run();

  GraphBuilder& builder() { return b_; }
  Graph& graph() { return g_; }
  const std::string& file() const { return file_; }
  const std::filesystem::path& base_dir() const { return base_dir_; }

  ValPtr lookup(const std::string& name) const;  // throws naming the value
  bool defined(const std::string& name) const { return values_.count(name) != 0; }
  void define(const std::string& name, ValPtr v);
  ValueId materialize(Val& v);
  ValueId sym_to_graph(const SymTensor& s);
  // A symbolic dim as an i64 scalar computed from a graph input's shape.
  ValueId sym_int_value(const SymInt& s);
  // Gives graph value v the ONNX name (values keep their source names in the IR).
  void name_value(ValueId v, const std::string& onnx_name);
  [[noreturn]] void need_input_values(const NodeCtx& n, const std::string& what, int operand);

  // Converts a subgraph (a Loop or Scan body, an If branch) with its inputs bound to `args`;
  // returns its outputs. Names the body defines get a unique prefix, so a body converted many
  // times (an unrolled loop) never redefines one; names it does not define are outer values.
  std::vector<ValPtr> convert_subgraph(const ::onnx::GraphProto& body,
                                       const std::vector<ValPtr>& args);
  // Converts a node list (the main graph, an If branch, an inlined function body).
  void convert_nodes(const google::protobuf::RepeatedPtrField<::onnx::NodeProto>& nodes);
  void convert_node(const ::onnx::NodeProto& node);
  Tensor tensor(const ::onnx::TensorProto& t, const std::string& where) const;
  std::string node_desc(const ::onnx::NodeProto& node) const;

 private:
  void add_graph_inputs();
  void fold_if_constant(const ::onnx::NodeProto& node, int32_t first);
  void add_graph_outputs();
  void inline_function(const ::onnx::FunctionProto& fn, const ::onnx::NodeProto& call);
  std::vector<std::string> runtime_inputs_behind(const ValPtr& v) const;

  const ::onnx::ModelProto& model_;
  std::string file_;
  std::filesystem::path base_dir_;
  const ImportOptions& options_;
  Graph g_;
  GraphBuilder b_;
  std::map<std::string, ValPtr> values_;
  std::map<std::string, int> opsets_;
  std::map<std::pair<std::string, std::string>, const ::onnx::FunctionProto*> functions_;
  std::map<std::string, std::pair<ValueId, int64_t>> sym_sources_;
  std::map<std::string, int64_t> fixed_dims_;  // symbols made static from options_
  std::set<ValueId> named_;
  int inline_counter_ = 0;
  int depth_ = 0;
};

// dim_param names become rlx symbols: identifier characters only.
std::string symbol_name(const std::string& raw);

}  // namespace rlx::onnx
