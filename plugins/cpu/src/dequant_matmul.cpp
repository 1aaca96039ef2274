#include "dequant_matmul.h"

#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "gemm.h"
#include "gemm_epilogue_fusion.h"
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

// An elementwise consumer fused into the product (gemm_epilogue_fusion.h): applied to each
// finished tile of y while it is in cache. Empty when none was fused.
GemmEpilogue fused_epilogue(const lir::CallKernel& k, const std::vector<void*>& ptrs,
                            const char* attr) {
  GemmEpilogue ep;
  auto it = k.attrs.find(attr);
  if (it == k.attrs.end()) return ep;
  std::vector<EpLoad> loads;
  decode_epilogue(std::get<std::string>(it->second), -1, ep,
                  [&](int32_t input, int64_t offset, int64_t rs, int64_t cs) {
                    loads.push_back({static_cast<const float*>(ptrs[k.inputs[input]]) + offset, rs, cs});
                  });
  for (size_t i = 0; i < loads.size(); ++i) ep.loads[i] = loads[i];
  return ep;
}

namespace {

// Rows of x from which a product packs the decoded weights as B (see run_dequant_matmul).
constexpr int64_t kManyRows = 512;

// Rows [0, M) x columns [n0, n1) of y finished.
void finish(const GemmEpilogue& ep, float* y, int64_t N, int64_t M, int64_t n0, int64_t n1) {
  if (!ep.empty()) apply_epilogue(ep, y + n0, N, 0, n0, M, n1 - n0);
}

bool q8_activations(const lir::CallKernel& k) {
  auto it = k.attrs.find("activations");
  return it != k.attrs.end() && std::get<std::string>(it->second) == "q8";
}

// {activations = "q8"}: each row of x is rounded to 8-bit blocks once, then every weight block
// meets it as an integer dot product (qdot.h). Rows of W are split over threads in chunks that
// keep a chunk's weights in cache while every row of x passes over them.
void run_q8(quant::QType t, const float* x, const uint8_t* w, int64_t row_bytes, int64_t M,
            int64_t N, int64_t K, float* y, const GemmEpilogue& ep) {
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
                      finish(ep, y, N, M, r.begin(), r.end());
                    });
}

}  // namespace

void run_dequant_matmul(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                        const std::vector<lir::Buffer>& out, const std::vector<void*>& ptrs) {
  const quant::QTypeInfo& q = *quant::find_qtype(std::get<std::string>(k.attrs.at("qtype")));
  const int64_t K = in[0].shape.back(), N = in[1].shape[0], row_bytes = in[1].shape[1];
  const int64_t M = K ? in[0].numel() / K : 0;
  const float* x = static_cast<const float*>(ptrs[k.inputs[0]]);  // rounded below for q8
  const auto* w = static_cast<const uint8_t*>(ptrs[k.inputs[1]]);
  auto* y = static_cast<float*>(ptrs[k.outputs[0]]);
  (void)out;
  const GemmEpilogue ep = fused_epilogue(k, ptrs);
  if (q8_activations(k)) {
    if (M < 4) return run_q8(q.type, x, w, row_bytes, M, N, K, y, ep);
    // Several rows: the rounded activations through the f32 GEMM below, whose register tiles
    // outrun integer dot products block by block (the same sums up to f32 rounding).
    thread_local std::vector<float> xr;
    xr.resize(static_cast<size_t>(M * K));
    float* rounded = xr.data();  // tasks on other threads must not name the thread_local
    tbb::parallel_for(int64_t{0}, M, [&](int64_t m) {
      qdot_round_row(q.type, x + m * K, K, rounded + m * K);
    });
    x = rounded;
  }
  if (M >= kManyRows) {
    // Many rows of x (a long prefill, a batch of sentences): Y = X W^T by blocks of W's rows
    // (columns of Y), W decoded and packed as the GEMM's B operand, x read in place as A, the
    // fused epilogue finishing each tile of y. Below kManyRows the packing of W per call costs
    // more than the transposes of the path below it (MiniLM int4, b1 s128: 26 against 19 ms;
    // b8: 86 against 133 ms).
    //
    // Rounds of W's rows whose decoded copy takes at most kRoundBytes (a vocabulary-sized W
    // goes in several): the round's rows decoded in chunks side by side, packed (pack_b splits
    // its columns over the threads), then one product over all of them. One product per round,
    // not per chunk of 128 rows: x was read again for every chunk, and each chunk's product was
    // a narrow one (MiniLM int4 b8: its products 16% slower than f32's).
    constexpr int64_t kChunk = 128, kRoundBytes = int64_t{4} << 20;
    const int64_t kRound = std::max<int64_t>(kChunk, kRoundBytes / (4 * K) / kChunk * kChunk);
    thread_local std::vector<float> wbuf;
    wbuf.resize(static_cast<size_t>(std::min(N, kRound) * K));
    float* decoded = wbuf.data();  // tasks on other threads must not name the thread_local
    for (int64_t n0 = 0; n0 < N; n0 += kRound) {
      const int64_t width = std::min(kRound, N - n0);
      tbb::parallel_for(int64_t{0}, (width + kChunk - 1) / kChunk, [&](int64_t c) {
        const int64_t r0 = c * kChunk, r1 = std::min(width, r0 + kChunk);
        qdot_decode_rows(q.type, w, row_bytes, n0 + r0, n0 + r1, K, decoded + r0 * K, K);
      });
      const PackedB packed = pack_b(MatView{decoded, DType::kF32, 1, K}, K, width, /*f64=*/false);
      GemmArgs g;
      g.M = M, g.N = width, g.K = K;
      g.a = MatView{x, DType::kF32, K, 1};
      g.packed = &packed;
      g.c = y + n0;
      g.ldc = N;
      // The epilogue's loads are indexed by the round's own columns.
      GemmEpilogue shifted = ep;
      for (int i = 0; i < shifted.num_loads; ++i) shifted.loads[i].data += n0 * shifted.loads[i].cs;
      if (!ep.empty()) g.epilogue = &shifted;
      gemm(g);
    }
    return;
  }
  if (M >= 4) {
    // Several rows of x (prefill): Y^T = W X^T by tiles of W's rows. X^T is packed once as the
    // GEMM's B operand and shared by every task; a task decodes its rows of W into a buffer the
    // GEMM reads in place as A (rows contiguous: no packing), so each decoded weight meets every
    // row of x in registers, and only the small result tile is transposed into y.
    const PackedB xt = pack_b(MatView{x, DType::kF32, 1, K}, K, M, /*f64=*/false);
    constexpr int64_t kRowsPerTask = 96;
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, N, kRowsPerTask),
                      [&](const tbb::blocked_range<int64_t>& r) {
                        thread_local std::vector<float> wbuf, ctile;
                        const int64_t n0 = r.begin(), nb = r.end() - r.begin();
                        wbuf.resize(static_cast<size_t>(nb * K));
                        ctile.resize(static_cast<size_t>(nb * M));
                        qdot_decode_rows(q.type, w, row_bytes, n0, n0 + nb, K, wbuf.data(), K);
                        GemmArgs g;
                        g.M = nb, g.N = M, g.K = K;
                        g.a = MatView{wbuf.data(), DType::kF32, K, 1};
                        g.b = MatView{x, DType::kF32, 1, K};
                        g.packed = &xt;
                        g.c = ctile.data();
                        g.ldc = M;
                        gemm_block(g, 0, nb, 0, M);
                        for (int64_t m = 0; m < M; ++m)
                          for (int64_t i = 0; i < nb; ++i) y[m * N + n0 + i] = ctile[i * M + m];
                        finish(ep, y, N, M, n0, n0 + nb);
                      });
    return;
  }
  // One to three rows (decode): a GEMV bound by reading W once; each weight block is decoded in
  // registers and meets every row of x there.
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, N, 64),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      qdot_rows_f32(q.type, w, row_bytes, r.begin(), r.end(), x, K, M, K, y, N);
                      finish(ep, y, N, M, r.begin(), r.end());
                    });
}

}  // namespace rlx::cpu
