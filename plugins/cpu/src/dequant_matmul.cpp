#include "dequant_matmul.h"

#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "gemm.h"
#include "qdot.h"
#include "rlx/core/quant.h"

namespace rlx::cpu {

Verdict claim_block_op(const NodeSignature& s) {
  auto it = s.attrs.find("qtype");
  const std::string* name = it == s.attrs.end() ? nullptr : std::get_if<std::string>(&it->second);
  if (!name || !quant::find_qtype(*name))
    return Verdict::no(
        fmt::format("cpu's {} needs a qtype attribute naming a known block format", s.op));
  if (s.op == "DequantizeRows") {
    if (s.inputs.size() == 1 && s.inputs[0].dtype == DType::kU8) return Verdict::yes();
    return Verdict::no("cpu's DequantizeRows takes u8 block rows");
  }
  if (s.inputs.size() != 2 || s.inputs[0].dtype != DType::kF32 || s.inputs[1].dtype != DType::kU8)
    return Verdict::no("cpu's DequantMatMul takes f32 activations and u8 block rows");
  auto act = s.attrs.find("activations");
  if (act != s.attrs.end()) {
    const auto* a = std::get_if<std::string>(&act->second);
    const int64_t block = quant::find_qtype(*name)->block_size;
    if (!a || (*a != "f32" && *a != "q8"))
      return Verdict::no("cpu's DequantMatMul knows activations \"f32\" and \"q8\"");
    if (*a == "q8" && block != 32 && block != 256)
      return Verdict::no(fmt::format("cpu's DequantMatMul rounds activations to 8 bits only for "
                                     "block formats of 32 or 256 elements, not {}",
                                     *name));
  }
  return Verdict::yes();
}

void run_dequantize_rows(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                         const std::vector<void*>& ptrs) {
  const quant::QTypeInfo& q = *quant::find_qtype(std::get<std::string>(k.attrs.at("qtype")));
  const int64_t K = std::get<int64_t>(k.attrs.at("k")), row_bytes = in[0].shape.back();
  const int64_t rows = row_bytes ? in[0].nbytes() / row_bytes : 0;
  const auto* w = static_cast<const uint8_t*>(ptrs[k.inputs[0]]);
  auto* y = static_cast<float*>(ptrs[k.outputs[0]]);
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, rows, 64),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      for (int64_t i = r.begin(); i < r.end(); ++i)
                        quant::dequantize(q.type, w + i * row_bytes, y + i * K, K);
                    });
}

namespace {

bool q8_activations(const lir::CallKernel& k) {
  auto it = k.attrs.find("activations");
  return it != k.attrs.end() && std::get<std::string>(it->second) == "q8";
}

// {activations = "q8"}: each row of x is rounded to 8-bit blocks once, then every weight block
// meets it as an integer dot product (qdot.h). Rows of W are split over threads in chunks that
// keep a chunk's weights in cache while every row of x passes over them.
void run_q8(quant::QType t, const float* x, const uint8_t* w, int64_t row_bytes, int64_t M,
            int64_t N, int64_t K, float* y) {
  const auto stride = static_cast<int64_t>(qdot_act_row_bytes(t, K));
  thread_local std::vector<uint8_t> xq;
  xq.resize(static_cast<size_t>(M * stride));
  uint8_t* xs = xq.data();  // tasks on other threads must not name the thread_local
  if (M > 1)
    tbb::parallel_for(int64_t{0}, M, [&](int64_t m) {
      qdot_quantize_row(t, x + m * K, K, xs + m * stride);
    });
  else
    qdot_quantize_row(t, x, K, xs);
  const int64_t grain = M > 1 ? 16 : 64;
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, N, grain),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      qdot_rows(t, w, row_bytes, r.begin(), r.end(), xs, stride, M, K, y, N);
                    });
}

}  // namespace

void run_dequant_matmul(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                        const std::vector<lir::Buffer>& out, const std::vector<void*>& ptrs) {
  const quant::QTypeInfo& q = *quant::find_qtype(std::get<std::string>(k.attrs.at("qtype")));
  const int64_t K = in[0].shape.back(), N = in[1].shape[0], row_bytes = in[1].shape[1];
  const int64_t M = K ? in[0].numel() / K : 0;
  const auto* x = static_cast<const float*>(ptrs[k.inputs[0]]);
  const auto* w = static_cast<const uint8_t*>(ptrs[k.inputs[1]]);
  auto* y = static_cast<float*>(ptrs[k.outputs[0]]);
  (void)out;
  if (q8_activations(k)) return run_q8(q.type, x, w, row_bytes, M, N, K, y);
  if (M >= 4) {
    // Several rows of x (prefill): decode a block of W's rows to f32 once per task and run the
    // packed GEMM on it, y[:, n0:n1] = x W[n0:n1]^T, so each decoded weight meets every row of x
    // in registers instead of one dot product at a time.
    constexpr int64_t kRowsPerTask = 128;
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, N, kRowsPerTask),
                      [&](const tbb::blocked_range<int64_t>& r) {
                        thread_local std::vector<float> wbuf;
                        const int64_t n0 = r.begin(), nb = r.end() - r.begin();
                        wbuf.resize(static_cast<size_t>(nb * K));
                        qdot_decode_rows(q.type, w, row_bytes, n0, n0 + nb, K, wbuf.data(), K);
                        GemmArgs g;
                        g.M = M, g.N = nb, g.K = K;
                        g.a = MatView{x, DType::kF32, K, 1};
                        g.b = MatView{wbuf.data(), DType::kF32, 1, K};
                        g.c = y + n0;
                        g.ldc = N;
                        gemm_block(g, 0, M, 0, nb);
                      });
    return;
  }
  // One to three rows (decode): a GEMV bound by reading W once; each weight block is decoded in
  // registers and meets every row of x there.
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, N, 64),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      qdot_rows_f32(q.type, w, row_bytes, r.begin(), r.end(), x, K, M, K, y, N);
                    });
}

}  // namespace rlx::cpu
