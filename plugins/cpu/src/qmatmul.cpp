#include "qmatmul.h"

#include <fmt/format.h>
#include <algorithm>

#include "dequant_matmul.h"
#include "rlx/core/error.h"

namespace rlx::cpu {

Verdict claim_qmatmul(const NodeSignature& s) {
  const size_t n = s.inputs.size();
  if (n < 3 || n > 6 || s.inputs[0].dtype != DType::kF32 || s.inputs[1].dtype != DType::kI8 ||
      s.inputs[2].dtype != DType::kF32)
    return Verdict::no("cpu's QMatMul takes f32 activations, i8 weights and f32 scales");
  // The claim's note is the dispatch report's record of the precision change.
  return Verdict{true, fmt::format("int8 GEMM u8 x s8 -> i32 ({}), activations rounded to u8 {}, "
                                   "dequantized to f32 in the epilogue",
                                   int8_isa_name(int8_isa()),
                                   n < 5 ? "per row at run time" : "with a calibrated scale")};
}

namespace {

// The node's own inputs: a fused prologue, then a fused epilogue, append their operands after
// them (gemm_epilogue_fusion.h).
size_t own_inputs(const lir::CallKernel& k) {
  size_t own = k.inputs.size();
  for (const char* from : {"prologue_inputs_from", "epilogue_inputs_from"}) {
    auto it = k.attrs.find(from);
    if (it != k.attrs.end())
      own = std::min(own, static_cast<size_t>(std::get<int64_t>(it->second)));
  }
  return own;
}

}  // namespace

QMatMulCall::QMatMulCall(const lir::CallKernel& k, const lir::Program& p) : k_(k) {
  const lir::Buffer& x = p.buffers[k.inputs[0]];
  const lir::Buffer& w = p.buffers[k.inputs[1]];
  N_ = w.shape[0], K_ = w.shape[1];
  M_ = K_ ? x.numel() / K_ : 0;
  auto constant = [&](int32_t b) {
    return p.buffers[p.storage_of(b)].kind == lir::BufferKind::kConstant;
  };
  const size_t own = own_inputs(k);
  has_bias_ = own == 4 || own == 6;
  bias_ = static_cast<int>(own) - 1;
  weights_constant_ = constant(k.inputs[1]) && constant(k.inputs[2]) &&
                      (!has_bias_ || constant(k.inputs[bias_]));
}

void QMatMulCall::forget_packed() const {
  std::lock_guard<std::mutex> lock(cache_->mu);
  cache_->packed.reset();
  cache_->source = nullptr;
}

std::shared_ptr<const PackedInt8W> QMatMulCall::packed(const void* w, const void* scale,
                                                       const void* bias) const {
  auto pack = [&] {
    return std::make_shared<const PackedInt8W>(
        pack_int8_weights(static_cast<const int8_t*>(w), static_cast<const float*>(scale),
                          static_cast<const float*>(bias), N_, K_));
  };
  if (!weights_constant_) return pack();
  std::lock_guard<std::mutex> lock(cache_->mu);
  if (!cache_->packed || cache_->source != w) {
    cache_->packed = pack();
    cache_->source = w;
  }
  return cache_->packed;
}

void QMatMulCall::run(const std::vector<void*>& ptrs) const {
  if (M_ == 0 || N_ == 0) return;
  const auto* x = static_cast<const float*>(ptrs[k_.inputs[0]]);
  auto* y = static_cast<float*>(ptrs[k_.outputs[0]]);
  std::shared_ptr<const PackedInt8W> w =
      packed(ptrs[k_.inputs[1]], ptrs[k_.inputs[2]], has_bias_ ? ptrs[k_.inputs[bias_]] : nullptr);
  const bool fixed = own_inputs(k_) >= 5;
  const auto* xs = fixed ? static_cast<const float*>(ptrs[k_.inputs[3]]) : nullptr;
  const auto* xz = fixed ? static_cast<const uint8_t*>(ptrs[k_.inputs[4]]) : nullptr;

  // A buffer per call, not per thread: while this thread waits for its tasks below, TBB may
  // hand it another kernel's QMatMul, which would overwrite a thread_local in use.
  U8RowBuffer rows;
  const GemmEpilogue ep = fused_epilogue(k_, ptrs);
  const GemmEpilogue pro_ep = fused_epilogue(k_, ptrs, "prologue");
  // SmoothQuant's Mul by a vector, the prologue rlx quantize makes, runs as a vector loop: the
  // program's interpreter costs more than the loop it replaces at short rows.
  RowPrologue pro_row;
  pro_row.col_scale = pro_ep.column_scale();
  if (!pro_row.col_scale)
    pro_row.other = [&](int64_t m, const float* in, float* out) {
      apply_epilogue(pro_ep, in, K_, m, 0, 1, K_, out, K_);
    };
  const RowPrologue* pro = pro_ep.empty() ? nullptr : &pro_row;
  if (ep.empty())
    return int8_matmul_f32(*w, x, K_, M_, xs, xz, rows, y, N_, nullptr, Int8SinkAt::kScratch, pro);
  // With a fused epilogue whose operand shares y's storage (a residual the planner let the
  // result overwrite) each tile comes in a scratch tile first, as the operand must still hold
  // its value when read; otherwise the tile is finished in place.
  if (!ep.reads_within(M_, N_, y, y + M_ * N_)) {
    const Int8TileSink sink = [&](float* t, int64_t ld, int64_t m0, int64_t n0, int64_t rows_n,
                                  int64_t cols) {
      apply_epilogue(ep, t, ld, m0, n0, rows_n, cols);
    };
    return int8_matmul_f32(*w, x, K_, M_, xs, xz, rows, y, N_, &sink, Int8SinkAt::kResult, pro);
  }
  const Int8TileSink sink = [&](float* t, int64_t ld, int64_t m0, int64_t n0, int64_t rows_n,
                                int64_t cols) {
    apply_epilogue(ep, t, ld, m0, n0, rows_n, cols, y + m0 * N_ + n0, N_);
  };
  int8_matmul_f32(*w, x, K_, M_, xs, xz, rows, y, N_, &sink, Int8SinkAt::kScratch, pro);
}

}  // namespace rlx::cpu
