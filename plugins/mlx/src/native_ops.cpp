#include "native_ops.h"

#include <fmt/format.h>
#include <mlx/fast.h>
#include <mlx/ops.h>

#include <cmath>
#include <limits>

#include "mlx_dtypes.h"

namespace rlx::mlx_target {

namespace mx = mlx::core;

bool is_native_op(const std::string& op) {
  return op == "LayerNorm" || op == "RMSNorm" || op == "Attention";
}

Verdict claim(const NodeSignature& s) {
  if (s.op == "RoPE")
    return Verdict::no(
        "mlx::core::fast::rope rotates from a start offset, rlx's RoPE by a positions tensor; "
        "its MIR decomposition runs instead");
  if (!is_native_op(s.op))
    return Verdict::no(
        fmt::format("MLX has no fused kernel for {}; its MIR decomposition runs", s.op));
  std::vector<TensorType> all = s.inputs;
  all.insert(all.end(), s.outputs.begin(), s.outputs.end());
  if (std::string why = dtype_refusal(s.op, all); !why.empty()) return Verdict::no(why);
  // MLX's cpu computes exp in f32 even for f64 arrays, so f64 softmax would lose precision.
  if (s.op == "Attention" && s.outputs.at(0).dtype == DType::kF64)
    return Verdict::no(fmt::format(
        "{} computes exp in f32 only, so mlx cannot compute Attention in f64", kLanguage));
  if (s.op == "Attention") return Verdict{true, "mlx::core::fast::scaled_dot_product_attention"};
  return Verdict{true,
                 s.op == "LayerNorm" ? "mlx::core::fast::layer_norm" : "mlx::core::fast::rms_norm"};
}

namespace {

double lowest(DType d) {
  switch (d) {
    case DType::kF16:
      return -65504.0;
    case DType::kBF16:
      return -3.3895313892515355e38;
    case DType::kF32:
      return static_cast<double>(std::numeric_limits<float>::lowest());
    default:
      return std::numeric_limits<double>::lowest();
  }
}

// Every MLX call below is RLX_MX's (mlx_calls.h): run, and written when writing the program.
#define MX(fn, ...) RLX_MX(calls, fn, __VA_ARGS__)

// rlx's Attention (ops_hir_nn.cpp): k and v read as q's dtype; causal aligns the last query with
// the last key (MLX's causal mode does too); a padding mask [B, Sk] makes masked scores the
// dtype's lowest finite value, so a row with every key masked averages V instead of giving NaN.
mx::array attention(const Node& n, const Graph& g, const MlxCalls& calls,
                    const std::function<mx::array(size_t)>& in) {
  const TensorType& tq = g.type(n.inputs[0]);
  const mx::Dtype qd = to_mlx(tq.dtype);
  mx::array q = in(0), k = MX(astype, in(1), qd), v = MX(astype, in(2), qd);
  const int64_t d = tq.shape[3].value;
  const float scale =
      static_cast<float>(n.attr_float("scale", 1.0 / std::sqrt(static_cast<double>(d))));
  const std::string mask = n.attr_string("mask", "none");
  if (mask == "causal")
    return MX(fast::scaled_dot_product_attention, q, k, v, scale, std::string("causal"));
  if (mask == "padding") {
    mx::array m = in(3);
    mx::array keep = m.dtype() == mx::bool_ ? m : MX(not_equal, m, MX(zeros_like, m));
    mx::array add = MX(where, keep, MX(astype, MX(array, 0.0), qd),
                       MX(astype, MX(array, lowest(tq.dtype)), qd));
    add = MX(expand_dims, add, std::vector<int>{1, 2});  // [B, 1, 1, Sk]
    return MX(fast::scaled_dot_product_attention, q, k, v, scale, std::string("array"), add);
  }
  return MX(fast::scaled_dot_product_attention, q, k, v, scale);
}

}  // namespace

mx::array build_native(const Node& n, const Graph& g, const MlxCalls& calls,
                       const std::function<mx::array(size_t)>& in) {
  if (n.op == "Attention") return attention(n, g, calls, in);
  std::optional<mx::array> w, b;
  if (n.inputs.size() > 1) w = in(1);
  if (n.inputs.size() > 2) b = in(2);
  if (n.op == "LayerNorm")
    return MX(fast::layer_norm, in(0), w, b, static_cast<float>(n.attr_float("epsilon", 1e-5)));
  return MX(fast::rms_norm, in(0), w, static_cast<float>(n.attr_float("epsilon", 1e-6)));
}

#undef MX

}  // namespace rlx::mlx_target
