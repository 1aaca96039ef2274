// Scores, softmax and the weighted sum are f32 whatever the storage, in the HIR op's order:
// scale, mask (the lowest finite value, so a row with every key masked averages V as the
// decomposition does), max, exp, sum, and the sum of p * v divided by the total.
#include "decode_attention.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "attention_text.h"
#include "switches.h"

namespace rlx::cuda {

namespace {

constexpr int64_t kMaxKeys = 8192;  // a chunk's f32 scores stay in shared memory (32 KB)
constexpr int64_t kMaxRow = 256;
constexpr int64_t kFillBlocks = 264;  // two blocks for each of an H200's 132 SMs

// Latency, not arithmetic, bounds this kernel: a batch-1 step of 16 heads is 16 query rows, and
// one block per row cannot keep enough loads in flight (on an H200 at 576 keys of 64: 100 us a
// call with a warp per key, 40 to 50 us with all 256 threads of the row's block loading). So
// the keys are split into @NC@ chunks of @CK@, a block per (row, chunk), enough blocks for every
// SM (flash-decoding): each block scores its chunk (a warp takes 8 keys at once, lanes across
// the head dimension: coalesced rows, 8 independent sums), takes its own max and sum, weights
// its values, and leaves (max, sum, weighted values) in the scratch buffer. The last block of a
// row to finish (a counter per row, reset to zero by that block) rescales the chunks to the
// common max and writes the row. Masked keys are left out of the scores (the first round of
// keys and values is loaded before the query is staged, masked or not).
const char* const kKernel =
    R"(// @SYM@: decode attention, @NC@ chunks of @CK@ keys per query row, blocks of 256 threads, B @B@, heads @H@ (kv @HKV@), Sq @SQ@, Sk @SK@, D @D@, Dv @DV@, mask @MASK@
extern "C" __global__ void __launch_bounds__(256) @SYM@(@PARAMS@, float* __restrict__ scratch) {
  rlx_await_producers();
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const long long chunk = blockIdx.x % @NC@, rq = blockIdx.x / @NC@;
  const long long row = rq % @SQ@, bh = rq / @SQ@;
  const long long b = bh / @H@, h = bh % @H@, hk = h / (@H@ / @HKV@);
  const long long first = chunk * @CK@;
  const int n = (int)min((long long)@CK@, @SK@ - first);
  __shared__ float qs[@D@];
  __shared__ float ps[@CK@];
  __shared__ float red[8];
  __shared__ float part[256];
  __shared__ int last;
  const int group = tid / @GW@, col = tid % @GW@;
@EARLY@  for (int d = tid; d < @D@; d += 256) {
@QCOMPUTE@    qs[d] = @QLOAD@;
  }
  __syncthreads();
  float m = -__int_as_float(0x7F800000);
  for (int k0 = warp * 8; k0 < @CK@; k0 += 64) {
    float dot[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const long long key = first + k0 + i;
      dot[i] = 0.0f;
@KDOT@    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const long long key = first + k0 + i;
      for (int off = 16; off > 0; off >>= 1) dot[i] += __shfl_xor_sync(0xffffffffu, dot[i], off);
      // Keys past the end count for nothing; masked ones get the lowest finite score.
      float score = -__int_as_float(0x7F800000);
      if (k0 + i < n) score = @MASKED@ ? -3.402823466e38f : dot[i] * @SCALE@f;
      if (lane == 0) ps[k0 + i] = score;
      m = fmaxf(m, score);
    }
  }
  for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  if (lane == 0) red[warp] = m;
  __syncthreads();
  m = red[0];
  for (int w = 1; w < 8; ++w) m = fmaxf(m, red[w]);
  __syncthreads();
  float l = 0.0f;
  for (int j = tid; j < @CK@; j += 256) {
    const float p = j < n ? expf(ps[j] - m) : 0.0f;
    ps[j] = p;
    l += p;
  }
  for (int off = 16; off > 0; off >>= 1) l += __shfl_xor_sync(0xffffffffu, l, off);
  if (lane == 0) red[warp] = l;
  __syncthreads();
  l = 0.0f;
  for (int w = 0; w < 8; ++w) l += red[w];
@MINE@  if (tid == 0) {
    mine[0] = m;
    mine[1] = l;
  }
  // @G@ groups of threads split the chunk's keys; in each, a thread per value column (more
  // columns than threads loop).
  for (int d0 = 0; d0 < @DV@; d0 += @GW@) {
    const int d = d0 + col;
    float acc = 0.0f;
    if (group < @G@ && d < @DV@) {
      int j = group;
@VEARLY@#pragma unroll 8
      for (; j < n; j += @G@) {
        const long long key = first + j;
        // A key with p == 0 (masked among unmasked ones) adds nothing, even where its value
        // is not finite.
        const float p = ps[j], v = @VLOAD@;
        acc += p != 0.0f ? p * v : 0.0f;
      }
    }
    part[tid] = acc;
    __syncthreads();
    if (tid < @GW@ && d < @DV@) {
      float total = 0.0f;
      for (int g = 0; g < @G@; ++g) total += part[g * @GW@ + tid];
      mine[2 + d] = total;
    }
    __syncthreads();
  }
@COMBINE@}
)";

// Where a row's chunks meet: in the scratch buffer, the last block to finish (a counter per
// row) combining them. (A thread-block cluster combining them through distributed shared memory
// was slower on H100s in two measurements, 2026-12-06 and -07, and was removed.)
const char* const kScratchMine = R"(  // This chunk's (max, sum, weighted values) at its slot of the scratch buffer.
  float* mine = scratch + (rq * @NC@ + chunk) * (@DV@ + 2);
)";
const char* const kScratchCombine = R"(  __threadfence();
  __syncthreads();
  unsigned* counters = (unsigned*)(scratch + @PARTIALS@);
  if (tid == 0) last = atomicAdd(&counters[rq], 1u) == @NC@ - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  // The last block of the row: every chunk rescaled to the common max (a chunk of masked keys
  // only has the lowest finite max, so with any unmasked key it weighs nothing, and with none
  // every key weighs the same, as in one pass). Other blocks' results bypass this SM's L1.
  const float* all = scratch + rq * @NC@ * (@DV@ + 2);
  float big = -__int_as_float(0x7F800000);
  for (int c = 0; c < @NC@; ++c) big = fmaxf(big, __ldcg(all + c * (@DV@ + 2)));
  float total_l = 0.0f;
  for (int c = 0; c < @NC@; ++c)
    total_l += __ldcg(all + c * (@DV@ + 2) + 1) * expf(__ldcg(all + c * (@DV@ + 2)) - big);
  for (int d = tid; d < @DV@; d += 256) {
    float total = 0.0f;
    for (int c = 0; c < @NC@; ++c)
      total += __ldcg(all + c * (@DV@ + 2) + 2 + d) * expf(__ldcg(all + c * (@DV@ + 2)) - big);
    @O@[@OAT@ + d] = @STORE@;
  }
  if (tid == 0) counters[rq] = 0u;
)";

// The first round of keys and values loaded before the query is staged (early_loads), and
// the scoring and value loops reading them; or the loops loading as they go.
const char* const kEarlyLoads = R"(  // The first round's keys (this warp's 8) and values (this thread's first @VT@), loaded before
  // the query is staged, so the three loads' latencies overlap instead of following each other.
  float kpre[8][@DW@];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const long long key = first + warp * 8 + i;
#pragma unroll
    for (int t = 0; t < @DW@; ++t) {
      const int d = lane + 32 * t;
      kpre[i][t] = warp * 8 + i < n && d < @D@ ? @KLOAD@ : 0.0f;
    }
  }
  float vpre[@VT@];
#pragma unroll
  for (int t = 0; t < @VT@; ++t) {
    const int j = group + t * @G@, d = col;
    const long long key = first + j;
    vpre[t] = group < @G@ && d < @DV@ && j < n ? @VLOAD@ : 0.0f;
  }
)";
const char* const kEarlyDot = R"(      if (k0 + i < n && !(@MASKED@)) {
        if (k0 == warp * 8) {
#pragma unroll
          for (int t = 0; t < @DW@; ++t)
            if (lane + 32 * t < @D@) dot[i] += qs[lane + 32 * t] * kpre[i][t];
        } else {
          for (int d = lane; d < @D@; d += 32) dot[i] += qs[d] * @KLOAD@;
        }
      }
)";
const char* const kPlainDot = R"(      if (k0 + i < n && !(@MASKED@))
        for (int d = lane; d < @D@; d += 32) dot[i] += qs[d] * @KLOAD@;
)";
const char* const kEarlyValues = R"(      if (d0 == 0) {
#pragma unroll
        for (int t = 0; t < @VT@; ++t, j += @G@)
          if (j < n) {
            const float p = ps[j];
            acc += p != 0.0f ? p * vpre[t] : 0.0f;
          }
      }
)";

// Whether the first round of keys and values is loaded before the query is staged, and whether
// the kernel computes q where it stages it (AttentionShape::q_loop, the rotated queries of a
// decode step): both on (together 0.414 -> 0.387 ms a decode step of the bench's Qwen3 layout on
// an H100); RLX_CUDA_ATTENTION_EARLY=0 and RLX_CUDA_ATTENTION_Q=0 turn them off, to compare.
bool early_loads() { return switched_on("RLX_CUDA_ATTENTION_EARLY"); }
bool computed_queries() {
  return switched_on("RLX_CUDA_ATTENTION_Q");
}

bool f32_class(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

}  // namespace

std::optional<sdk::AttentionKernel> decode_attention(const sdk::AttentionShape& s) {
  if (const char* choice = std::getenv("RLX_CUDA_ATTENTION");
      choice && std::string(choice) == "tiled")
    return std::nullopt;
  if (s.q_loop && !computed_queries()) return std::nullopt;
  if (s.q_len >= 16 || s.kv_len > kMaxKeys || s.kv_len < 1 || s.head_dim > kMaxRow ||
      s.v_dim > kMaxRow || s.kv_heads <= 0 || s.heads % s.kv_heads != 0)
    return std::nullopt;
  for (DType t : {s.q_dtype, s.k_dtype, s.v_dtype, s.out_dtype})
    if (!f32_class(t)) return std::nullopt;
  // Chunks: enough blocks to give each SM of a large GPU (132 on an H200) two, of whole 64-key
  // rounds of the scoring loop.
  const int64_t rows = s.batch * s.heads * s.q_len;
  const int64_t rounds = (s.kv_len + 63) / 64;
  const int64_t wanted = std::clamp<int64_t>((kFillBlocks + rows - 1) / rows, 1, rounds);
  const int64_t chunk = (rounds + wanted - 1) / wanted * 64;
  const int64_t chunks = (s.kv_len + chunk - 1) / chunk;
  // Threads per group: the value columns, up to the whole block; the rest of the block splits
  // the keys among groups.
  const int64_t group_width = std::min<int64_t>(256, s.v_dim);
  const int64_t groups = 256 / group_width;
  const int64_t partials = rows * chunks * (s.v_dim + 2);  // floats, then a counter per row
  const std::string kat = attention_row_offset(s, 'k', "key") + " + d";
  const std::string vat = attention_row_offset(s, 'v', "key") + " + d";
  const std::string qat = attention_row_offset(s, 'q', "row") + " + d";
  std::map<std::string, std::string> tokens = attention_tokens(s);
  // Values each thread loads early: its share of the first 64 keys, at most 16.
  const int64_t early_values =
      std::min<int64_t>(16, (std::min<int64_t>(chunk, 64) + groups - 1) / groups);
  // The kernel's variable parts first, so the tokens in them are filled with the rest.
  const bool early = early_loads();
  std::string text = fill_tokens(kKernel, {{"EARLY", early ? kEarlyLoads : ""},
                                           {"KDOT", early ? kEarlyDot : kPlainDot},
                                           {"VEARLY", early ? kEarlyValues : ""},
                                           {"MINE", kScratchMine},
                                           {"COMBINE", kScratchCombine}});
  tokens.insert({{"G", std::to_string(groups)},
                 {"DW", std::to_string((s.head_dim + 31) / 32)},
                 {"VT", std::to_string(early_values)},
                 {"GW", std::to_string(group_width)},
                 {"NC", std::to_string(chunks)},
                 {"CK", std::to_string(chunk)},
                 {"PARTIALS", std::to_string(partials)},
                 {"QCOMPUTE", s.q_loop ? sdk::render_prologue(*s.q_loop, sdk::cuda_dialect(),
                                                              "(" + qat + ")", "qv", 2)
                                       : ""},
                 {"QLOAD", s.q_loop ? std::string("qv")
                                    : load_f32(s.q_dtype, fmt::format("b{}", s.q_buffer), qat)},
                 {"KLOAD", load_f32(s.k_dtype, fmt::format("b{}", s.k_buffer), kat)},
                 {"VLOAD", load_f32(s.v_dtype, fmt::format("b{}", s.v_buffer), vat)},
                 {"O", fmt::format("b{}", s.out_buffer)},
                 {"OAT", attention_row_offset(s, 'o', "row")},
                 {"STORE", from_f32(s.out_dtype, "total / total_l")}});
  // Blocks of 256 threads (the launch bounds, the host's widest block), one per (row, chunk);
  // groups count 64 work-items.
  sdk::AttentionKernel k{fill_tokens(text, tokens), rows * chunks * 4,
                         fmt::format("decode, {} chunks of {} keys per query row", chunks, chunk)};
  k.scratch_bytes = (partials + rows) * 4;
  return k;
}

}  // namespace rlx::cuda
