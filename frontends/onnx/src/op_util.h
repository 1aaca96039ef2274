// Helpers shared by the op tables: numpy broadcasting, dtype checks, host folding of small
// integer tensors.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "context.h"

namespace rlx::onnx {

// Registration functions, one per op family; op_table.cpp calls each once.
void register_elementwise_ops(OpTable& t);
void register_activation_ops(OpTable& t);
void register_shape_ops(OpTable& t);
void register_slice_ops(OpTable& t);
void register_index_ops(OpTable& t);
void register_reduce_ops(OpTable& t);
void register_nn_ops(OpTable& t);
void register_norm_ops(OpTable& t);
void register_conv_ops(OpTable& t);
void register_quant_ops(OpTable& t);
void register_loss_ops(OpTable& t);
void register_attention_ops(OpTable& t);
void register_resize_ops(OpTable& t);
void register_control_ops(OpTable& t);
void register_rnn_ops(OpTable& t);
void register_signal_ops(OpTable& t);
void register_misc_ops(OpTable& t);
void register_grid_sample_ops(OpTable& t);
// Ops of other domains are keyed "<domain>.<op>".
void register_training_ops(OpTable& t);

inline bool float_dtype(DType d) {
  return is_float(d);
}
inline bool int_dtype(DType d) {
  return is_integer(d);
}

// numpy broadcasting of both operands to their common shape.
std::pair<ValueId, ValueId> broadcast2(GraphBuilder& b, ValueId x, ValueId y);
ValueId broadcast_binary(GraphBuilder& b, const std::string& prim, ValueId x, ValueId y);
ValueId iota(GraphBuilder& b, const Shape& s, int64_t dim, DType dt = DType::kI64);
// Static dims of an operand; fails naming the op when a dim is symbolic.
std::vector<int64_t> static_shape(const NodeCtx& n, const TensorType& t, const char* what);
Shape shape_from_syms(const NodeCtx& n, const std::vector<SymInt>& v, const char* what);
// Elementwise op on host-known integer tensors with numpy broadcasting; nullopt when a result
// is not expressible (symbolic arithmetic that is not a monomial).
using SymBinary = std::function<std::optional<SymInt>(const SymInt&, const SymInt&)>;
std::optional<SymTensor> fold_binary(const SymTensor& a, const SymTensor& b, DType out,
                                     const SymBinary& f);
// Stores v (wrapped to the width) as element i of an integer or bool tensor.
void set_int(Tensor& t, int64_t i, int64_t v);
// The result of an integer op wrapped to the width of dtype d.
int64_t wrap_int(DType d, int64_t v);
// Keeps `x` along `axis` at `indices` (a constant index list): strided slices where possible.
ValueId take(GraphBuilder& b, ValueId x, int64_t axis, const std::vector<int64_t>& indices);
// Host take() on a known integer tensor.
SymTensor sym_take_axis(const SymTensor& s, int64_t axis, const std::vector<int64_t>& idx);
// Normalised, de-duplicated axes; fails on out-of-range ones.
std::vector<int64_t> norm_axes(const NodeCtx& n, std::vector<int64_t> axes, int64_t rank);
// A float scalar constant broadcast to v's shape, in v's dtype.
ValueId full_like(GraphBuilder& b, ValueId v, double value);
// numpy.matmul (1-D operands promoted and the added dim removed again).
ValueId onnx_matmul(NodeCtx& n, ValueId a, ValueId b);
// numpy.take_along_axis (ONNX GatherElements) for static shapes.
ValueId gather_along(NodeCtx& n, ValueId data, ValueId idx, int64_t axis);
// Adds a batch of leading unit dims to reach rank r (for numpy-style rank promotion).
ValueId to_rank(GraphBuilder& b, ValueId v, int64_t r);

}  // namespace rlx::onnx
