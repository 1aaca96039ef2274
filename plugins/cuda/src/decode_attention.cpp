// Scores, softmax and the weighted sum are f32 whatever the storage, in the HIR op's order:
// scale, mask (the lowest finite value, so a row with every key masked averages V as the
// decomposition does), max, exp, sum, and the sum of p * v divided by the total.
#include "decode_attention.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "attention_text.h"

namespace rlx::cuda {

namespace {

constexpr int64_t kMaxKeys = 8192;  // 32 KB of f32 scores in shared memory
constexpr int64_t kMaxRow = 256;

// Latency, not arithmetic, bounds this kernel: a batch-1 step has one block per head, so each
// warp must keep many loads in flight. Scores: a warp takes 8 keys at once, lanes across the
// head dimension (coalesced rows, 8 independent sums; one key at a time waited on every row:
// 100 us a call at 576 keys of 64 on an H200, and a thread per key read its row uncoalesced:
// 40 us). Weighted sum: a thread per value column and group of keys, the key loop unrolled so
// its loads issue together. Masked keys are not read for the scores.
const char* const kKernel = R"(// @SYM@: decode attention, one block of 256 threads per query row, B @B@, heads @H@ (kv @HKV@), Sq @SQ@, Sk @SK@, D @D@, Dv @DV@, mask @MASK@
extern "C" __global__ void __launch_bounds__(256) @SYM@(@PARAMS@) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const long long row = blockIdx.x % @SQ@, bh = blockIdx.x / @SQ@;
  const long long b = bh / @H@, h = bh % @H@, hk = h / (@H@ / @HKV@);
  __shared__ float qs[@D@];
  __shared__ float ps[@SK@];
  __shared__ float red[8];
  __shared__ float part[256];
  for (int d = tid; d < @D@; d += 256) qs[d] = @QLOAD@;
  __syncthreads();
  // Each warp scores 8 keys at a time, lanes across the head dimension: the rows are read
  // coalesced and the 8 dot products (loads, then shuffle sums) are independent of each other.
  float m = -__int_as_float(0x7F800000);
  for (long long k0 = warp * 8; k0 < @SK@; k0 += 64) {
    float dot[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const long long key = k0 + i;
      dot[i] = 0.0f;
      if (key < @SK@ && !(@MASKED@))
        for (int d = lane; d < @D@; d += 32) dot[i] += qs[d] * @KLOAD@;
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const long long key = k0 + i;
      for (int off = 16; off > 0; off >>= 1) dot[i] += __shfl_xor_sync(0xffffffffu, dot[i], off);
      if (key < @SK@) {
        const float score = @MASKED@ ? -3.402823466e38f : dot[i] * @SCALE@f;
        if (lane == 0) ps[key] = score;
        m = fmaxf(m, score);
      }
    }
  }
  for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  if (lane == 0) red[warp] = m;
  __syncthreads();
  m = red[0];
  for (int w = 1; w < 8; ++w) m = fmaxf(m, red[w]);
  __syncthreads();
  float l = 0.0f;
  for (long long j = tid; j < @SK@; j += 256) {
    const float p = expf(ps[j] - m);
    ps[j] = p;
    l += p;
  }
  for (int off = 16; off > 0; off >>= 1) l += __shfl_xor_sync(0xffffffffu, l, off);
  if (lane == 0) red[warp] = l;
  __syncthreads();
  l = 0.0f;
  for (int w = 0; w < 8; ++w) l += red[w];
  // @G@ groups of threads split the keys; in each, a thread per value column (more columns than
  // threads loop).
  const int group = tid / @GW@, col = tid % @GW@;
  for (int d0 = 0; d0 < @DV@; d0 += @GW@) {
    const int d = d0 + col;
    float acc = 0.0f;
    if (group < @G@ && d < @DV@) {
#pragma unroll 16
      for (long long key = group; key < @SK@; key += @G@) {
        // Loaded whatever p is, so the unrolled loads issue together; a masked key's value
        // (p == 0) is still not added, even where it is not finite.
        const float p = ps[key], v = @VLOAD@;
        acc += p != 0.0f ? p * v : 0.0f;
      }
    }
    part[tid] = acc;
    __syncthreads();
    if (tid < @GW@ && d < @DV@) {
      float total = 0.0f;
      for (int g = 0; g < @G@; ++g) total += part[g * @GW@ + tid];
      @O@[@OAT@ + d] = @STORE@;
    }
    __syncthreads();
  }
}
)";

bool f32_class(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

}  // namespace

std::optional<sdk::AttentionKernel> decode_attention(const sdk::AttentionShape& s) {
  if (const char* choice = std::getenv("RLX_CUDA_ATTENTION");
      choice && std::string(choice) == "tiled")
    return std::nullopt;
  if (s.q_len >= 16 || s.kv_len > kMaxKeys || s.kv_len < 1 || s.head_dim > kMaxRow ||
      s.v_dim > kMaxRow || s.kv_heads <= 0 || s.heads % s.kv_heads != 0)
    return std::nullopt;
  for (DType t : {s.q_dtype, s.k_dtype, s.v_dtype, s.out_dtype})
    if (!f32_class(t)) return std::nullopt;
  // Threads per group: the value columns, up to the whole block; the rest of the block splits
  // the keys among groups.
  const int64_t group_width = std::min<int64_t>(256, s.v_dim);
  const int64_t groups = 256 / group_width;
  const std::string kat =
      attention_row_offset(s.k_split_heads, "hk", s.kv_heads, "key", s.kv_len, s.head_dim) + " + d";
  const std::string vat =
      attention_row_offset(s.v_split_heads, "hk", s.kv_heads, "key", s.kv_len, s.v_dim) + " + d";
  const std::string qat =
      attention_row_offset(s.q_split_heads, "h", s.heads, "row", s.q_len, s.head_dim) + " + d";
  std::map<std::string, std::string> tokens = attention_tokens(s);
  tokens.insert({{"G", std::to_string(groups)},
                {"GW", std::to_string(group_width)},
                {"QLOAD", load_f32(s.q_dtype, fmt::format("b{}", s.q_buffer), qat)},
                {"KLOAD", load_f32(s.k_dtype, fmt::format("b{}", s.k_buffer), kat)},
                {"VLOAD", load_f32(s.v_dtype, fmt::format("b{}", s.v_buffer), vat)},
                {"O", fmt::format("b{}", s.out_buffer)},
                {"OAT", attention_row_offset(s.merge_heads, "h", s.heads, "row", s.q_len, s.v_dim)},
                 {"STORE", from_f32(s.out_dtype, "total / l")}});
  const std::string text = fill_tokens(kKernel, tokens);
  // Blocks of 256 threads (the launch bounds, the host's widest block), one per query row;
  // groups count 64 work-items.
  return sdk::AttentionKernel{text, s.batch * s.heads * s.q_len * 4,
                              "decode, a block per query row"};
}

}  // namespace rlx::cuda
