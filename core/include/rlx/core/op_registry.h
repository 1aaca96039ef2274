// Every op is defined once here: name, level, arity, type/shape inference, verifier (inference
// that throws), MIR decomposition, gradient rule, and a sample signature used to build legality
// tables. Ops are referred to by these stable names across the plugin boundary. The definitions
// live in op families (core/src/ops), each added by one line in op_registry.cpp.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "rlx/core/graph.h"

namespace rlx {

class GraphBuilder;

enum class OpLevel { kHir, kMir };

// How the MIR -> LIR lowering treats a primitive.
enum class OpClass {
  kOpaque,       // HIR ops, and MIR ops lowered as library calls (dot_general, gather, ...)
  kElementwise,  // fuses into loop kernels
  kIndexMap,     // broadcast_in_dim, transpose, slice, reshape: becomes an affine load map
  kReduce,       // reduce_* : a loop kernel with reduced dims
  kConstant,
};

using InferFn =
    std::function<std::vector<TensorType>(const std::vector<TensorType>& in, const Node& node)>;
using DecomposeFn = std::function<std::vector<ValueId>(GraphBuilder& b, const Node& node,
                                                       const std::vector<ValueId>& inputs)>;
// Reverse mode: given the node, its inputs and the cotangents of its outputs, adds the graph
// that computes the cotangent of each input (an invalid ValueId for inputs without one).
using GradientFn = std::function<std::vector<ValueId>(GraphBuilder& b, const Node& node,
                                                      const std::vector<ValueId>& inputs,
                                                      const std::vector<ValueId>& output_cotangents)>;

struct OpSample {
  std::vector<TensorType> inputs;
  Attrs attrs;
};
// A representative signature of the op at one dtype; nullopt when the op has no meaning there
// (e.g. exp on i32), in which case the legality table records it as not applicable.
using SampleFn = std::function<std::optional<OpSample>(DType dtype)>;

struct OpDef {
  std::string name;
  OpLevel level = OpLevel::kMir;
  OpClass cls = OpClass::kOpaque;
  int min_inputs = 0;
  int max_inputs = 0;  // -1: variadic
  int num_outputs = 1; // -1: as many as inputs (while)
  InferFn infer;
  DecomposeFn decompose;  // HIR only; empty when only a rewrite or a native claim can lower it
  SampleFn sample;
  std::string summary;
  GradientFn gradient;  // empty until the op has a rule (autodiff refuses it, naming the op)
  // Exchanges data with other ranks (the collectives): two such nodes with the same inputs are
  // two exchanges, never merged into one by common-subexpression elimination.
  bool communicates = false;
};

class OpRegistry {
 public:
  static const OpRegistry& instance();
  const OpDef* find(const std::string& name) const;
  const OpDef& get(const std::string& name) const;  // throws a user error for unknown ops
  const std::vector<OpDef>& ops() const { return ops_; }

 private:
  OpRegistry();
  void add(OpDef def);
  std::vector<OpDef> ops_;
  std::map<std::string, size_t> index_;
};

// Infers output types of `node` from its input types; throws a user error naming the node.
std::vector<TensorType> infer_node(const Graph& g, int32_t node);
// Checks every node: op known, arity, declared output types equal inferred ones, SSA order.
void verify_graph(const Graph& g);

}  // namespace rlx
