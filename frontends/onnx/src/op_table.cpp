#include "op_util.h"

namespace rlx::onnx {

const OpTable& op_table() {
  static const OpTable table = [] {
    OpTable t;
    register_elementwise_ops(t);
    register_activation_ops(t);
    register_shape_ops(t);
    register_slice_ops(t);
    register_index_ops(t);
    register_reduce_ops(t);
    register_nn_ops(t);
    register_norm_ops(t);
    register_conv_ops(t);
    register_loss_ops(t);
    register_attention_ops(t);
    register_resize_ops(t);
    register_quant_ops(t);
    register_control_ops(t);
    register_rnn_ops(t);
    register_signal_ops(t);
    register_misc_ops(t);
    register_grid_sample_ops(t);
    register_training_ops(t);
    return t;
  }();
  return table;
}

}  // namespace rlx::onnx
