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

const char* const kKernel = R"(// @SYM@: decode attention, one block of 128 threads per query row, B @B@, heads @H@ (kv @HKV@), Sq @SQ@, Sk @SK@, D @D@, Dv @DV@, mask @MASK@
extern "C" __global__ void __launch_bounds__(128) @SYM@(@PARAMS@) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const long long row = blockIdx.x % @SQ@, bh = blockIdx.x / @SQ@;
  const long long b = bh / @H@, h = bh % @H@, hk = h / (@H@ / @HKV@);
  __shared__ float qs[@D@];
  __shared__ float ps[@SK@];
  __shared__ float red[4];
  __shared__ float part[128];
  for (int d = tid; d < @D@; d += 128) qs[d] = @QLOAD@;
  __syncthreads();
  for (long long key = warp; key < @SK@; key += 4) {
    float dot = 0.0f;
    for (int d = lane; d < @D@; d += 32) dot += qs[d] * @KLOAD@;
    for (int off = 16; off > 0; off >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, off);
    if (lane == 0) ps[key] = @MASKED@ ? -3.402823466e38f : dot * @SCALE@f;
  }
  __syncthreads();
  float m = -__int_as_float(0x7F800000);
  for (long long j = tid; j < @SK@; j += 128) m = fmaxf(m, ps[j]);
  for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  if (lane == 0) red[warp] = m;
  __syncthreads();
  m = fmaxf(fmaxf(red[0], red[1]), fmaxf(red[2], red[3]));
  __syncthreads();
  float l = 0.0f;
  for (long long j = tid; j < @SK@; j += 128) {
    const float p = expf(ps[j] - m);
    ps[j] = p;
    l += p;
  }
  for (int off = 16; off > 0; off >>= 1) l += __shfl_xor_sync(0xffffffffu, l, off);
  if (lane == 0) red[warp] = l;
  __syncthreads();
  l = red[0] + red[1] + red[2] + red[3];
  // @G@ groups of threads split the keys; in each, a thread per value column (more columns than
  // threads loop).
  const int group = tid / @GW@, col = tid % @GW@;
  for (int d0 = 0; d0 < @DV@; d0 += @GW@) {
    const int d = d0 + col;
    float acc = 0.0f;
    if (group < @G@ && d < @DV@)
      for (long long key = group; key < @SK@; key += @G@) {
        const float p = ps[key];
        if (p != 0.0f) acc += p * @VLOAD@;
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
  const int64_t group_width = std::min<int64_t>(128, s.v_dim);
  const int64_t groups = 128 / group_width;
  const std::string symbol = sdk::kernel_symbol(s.name);
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
  const std::string kernel = fill_tokens(kKernel, tokens);
  // f16 loads widen through the GPU's own conversion (exact for every non-NaN value; a NaN stays a
  // NaN), not the prelude's bit-exact software one, which made an f16 step 2.6x a bf16 step.
  const std::string widen = "rlx_h2f_" + symbol;
  std::string text = kernel;
  for (size_t at = text.find("rlx_f16_to_f32("); at != std::string::npos;
       at = text.find("rlx_f16_to_f32(", at + widen.size()))
    text.replace(at, std::string("rlx_f16_to_f32").size(), widen);
  text = fmt::format(
             "static __device__ __forceinline__ float {}(unsigned short h) {{\n"
             "  float f;\n  asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h));\n  return f;\n}}\n",
             widen) +
         text;
  // Blocks of 128 threads (the launch bounds), one per query row; groups count 64 work-items.
  return sdk::AttentionKernel{text, s.batch * s.heads * s.q_len * 2,
                              "decode, a block per query row"};
}

}  // namespace rlx::cuda
