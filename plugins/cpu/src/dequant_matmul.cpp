#include "dequant_matmul.h"

#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "gemm.h"
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

// Eight partial sums: the compiler vectorises this without reassociating one chain.
float dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  float s = 0;
  for (; i < n; ++i) s += a[i] * b[i];
  for (float v : acc) s += v;
  return s;
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
                        for (int64_t n = 0; n < nb; ++n)
                          quant::dequantize(q.type, w + (n0 + n) * row_bytes, wbuf.data() + n * K, K);
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
  // One to three rows (decode): a GEMV bound by reading W; rows of W in chunks, each task
  // decodes its rows once and uses them for every row of x.
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, N, 16),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      std::vector<float> row(K);
                      for (int64_t n = r.begin(); n < r.end(); ++n) {
                        quant::dequantize(q.type, w + n * row_bytes, row.data(), K);
                        for (int64_t m = 0; m < M; ++m)
                          y[m * N + n] = dot(x + m * K, row.data(), K);
                      }
                    });
}

}  // namespace rlx::cpu
