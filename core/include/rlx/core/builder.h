// Appends typed nodes to a graph. Decompositions, rewrites, model builders and API users all
// build graphs through this one class; output types always come from the op's inference.
#pragma once
#include <string>
#include <vector>

#include "rlx/core/graph.h"

namespace rlx {

enum class ReduceKind { kSum, kMax, kMin, kProd };

class GraphBuilder {
 public:
  explicit GraphBuilder(Graph& g) : g_(g) {}
  Graph& graph() { return g_; }
  // By value: building appends values, which may move the graph's value storage.
  TensorType type(ValueId v) const { return g_.type(v); }
  // Source name attached to every node added until changed (a decomposed node keeps its origin).
  void set_loc(std::string loc) { loc_ = std::move(loc); }

  ValueId input(const std::string& name, TensorType t) { return g_.add_input(name, std::move(t)); }
  ValueId param(const std::string& name, Tensor data);
  std::vector<ValueId> op_n(const std::string& op, std::vector<ValueId> inputs, Attrs attrs = {});
  ValueId op(const std::string& op, std::vector<ValueId> inputs, Attrs attrs = {});
  void output(ValueId v) { g_.outputs.push_back(v); }

  // MIR shorthands.
  ValueId constant(Tensor value);
  ValueId scalar(DType dtype, double value);  // rank-0 constant
  ValueId full_like(ValueId like, double value);  // scalar broadcast to like's shape
  ValueId unary(const std::string& op, ValueId x) { return this->op(op, {x}); }
  ValueId binary(const std::string& op, ValueId a, ValueId b) { return this->op(op, {a, b}); }
  ValueId add(ValueId a, ValueId b) { return binary("add", a, b); }
  ValueId sub(ValueId a, ValueId b) { return binary("sub", a, b); }
  ValueId mul(ValueId a, ValueId b) { return binary("mul", a, b); }
  ValueId div(ValueId a, ValueId b) { return binary("div", a, b); }
  ValueId convert(ValueId x, DType to);
  ValueId broadcast_in_dim(ValueId x, Shape shape, IntList dims);
  // numpy-style broadcast of x to `shape` (trailing alignment).
  ValueId broadcast_to(ValueId x, const Shape& shape);
  ValueId reshape(ValueId x, Shape shape);
  ValueId transpose(ValueId x, IntList perm);
  ValueId reduce(ValueId x, IntList axes, ReduceKind kind);
  // Reduces over `axes` then broadcasts back to x's shape (keepdims + broadcast).
  ValueId reduce_keep(ValueId x, IntList axes, ReduceKind kind);
  ValueId dot_general(ValueId a, ValueId b, IntList lhs_batch, IntList rhs_batch,
                      IntList lhs_contract, IntList rhs_contract);
  ValueId select(ValueId pred, ValueId on_true, ValueId on_false);
  ValueId slice(ValueId x, IntList start, IntList limit, IntList strides = {});
  ValueId concat(std::vector<ValueId> xs, int64_t axis);

 private:
  Graph& g_;
  std::string loc_;
};

// numpy broadcasting of two shapes; throws a user error when they do not broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b);
std::string reduce_op_name(ReduceKind k);  // "reduce_sum"

}  // namespace rlx
