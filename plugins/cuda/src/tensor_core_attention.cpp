// The kernel text is CUDA C++ with inline PTX (mma.sync, cvt), so it needs no header under NVRTC,
// like the rest of the module. Fragment layouts are those of PTX's m16n8k16 (row-major A, column
// B, f32 C): lane = 4 * g + t holds rows g and g + 8 and the column pairs 2t, 2t + 1 (+ 8).
//
// One block of 4 warps takes 64 query rows of one (batch, head), 16 per warp; each 64-key tile of
// K and V is staged in shared memory once per block, copied there by cp.async (the next tile's
// copies in flight while this one is computed, where two tiles fit) and read into fragments by
// ldmatrix (.trans for V), four fragment registers an instruction. A warp keeps its Q fragment,
// its running max and sum and its output in registers. MiniLM f16 at batch 128 on an H100 (Nsight
// Compute): 72.7 us a call with synchronous staging and 16-bit fragment reads, 48.2 us so, 42.7
// with the exponentials below in base 2. The scores are scaled, masked as the HIR op masks them
// (the lowest finite value, so a row with every key masked averages V as the decomposition does)
// and exponentiated in f32 (base 2, by the GPU's ex2.approx); the probabilities enter the P x V
// product rounded to the operands' 16-bit type, the one rounding the SDK's f32 kernel does not
// make.
#include "tensor_core_attention.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "attention_text.h"
#include "rlx/core/error.h"

namespace rlx::cuda {

namespace {

constexpr int64_t kRowsPerBlock = 64;  // 4 warps x 16 query rows
constexpr int64_t kGroupItems = 64;    // what one of AttentionKernel::groups counts

const char* const kKernel =
    R"(// @SYM@: attention on tensor cores (mma.sync m16n8k16 @DT@, f32 accumulation), B @B@, heads @H@ (kv @HKV@), Sq @SQ@, Sk @SK@, D @D@, mask @MASK@
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "rlx's tensor-core attention needs sm_80 or newer; RLX_CUDA_ATTENTION=tiled uses the CUDA-core kernel"
#endif
extern "C" __global__ void __launch_bounds__(128) @SYM@(@PARAMS@) {
  rlx_await_producers();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const long long tiles = (@SQ@ + 63) / 64;
  const long long bh = blockIdx.x / tiles;
  const long long b = bh / @H@;
  const long long h = bh % @H@, hk = h / (@H@ / @HKV@);
  const long long qblock = (blockIdx.x % tiles) * 64;
  const long long r0 = qblock + warp * 16 + g, r1 = r0 + 8;
  // Key and value tiles as 16-bit rows padded by 8 elements, so the 8 rows one ldmatrix reads
  // fall in distinct banks; @NBUF@ buffers: with two, the next tile's copies are in flight while
  // this one is computed.
  __shared__ __align__(16) unsigned short ks[@NBUF@][64][@D@ + 8];
  __shared__ __align__(16) unsigned short vs[@NBUF@][64][@D@ + 8];
  @MASK_SHARED@
  // 16-byte copies where K and V are 16-byte aligned (rows are whole multiples of 8 elements, a
  // head's row 2 * @D@ contiguous bytes in either layout), issued asynchronously (cp.async); else
  // 16-bit loads through registers.
  const bool wide = @KV_ROWS16@ && ((reinterpret_cast<unsigned long long>(@K@) |
                                   reinterpret_cast<unsigned long long>(@V@)) & 15ull) == 0;
  const bool pairs = @Q_ROWS4@ && ((reinterpret_cast<unsigned long long>(@Q@) |
                                 reinterpret_cast<unsigned long long>(@O@)) & 3ull) == 0;
  long long kend = @SK@;
  // Causal with Sk >= Sq: every row sees key 0, so tiles past the block's last visible key
  // only add exp(lowest - max) = 0 and are skipped.
  if (@CAUSAL@ && @SK@ >= @SQ@) {
    const long long last = (qblock + 63 < @SQ@ ? qblock + 63 : @SQ@ - 1) + (@SK@ - @SQ@) + 1;
    if (last < kend) kend = last;
  }
  const int ntiles = (int)((kend + 63) / 64);
  // Key 0 of this block's batch and kv head; a key's row is @KSTEP@ (@VSTEP@) elements after the
  // one before. Offsets within the head in @IDX@: the pointers are the only 64-bit values the
  // tile loop keeps.
  const unsigned short* const kbase = @K@ + @KAT0@;
  const unsigned short* const vbase = @V@ + @VAT0@;
  auto stage = [&](int tile, int buf) {
    const @IDX@ k0 = (@IDX@)tile * 64;
    if (wide) {
      for (int i = threadIdx.x; i < 64 * (@D@ / 8); i += 128) {
        const int key = i / (@D@ / 8), c = i % (@D@ / 8);
        const @IDX@ kv = k0 + key;
        const bool in = kv < @SK@;
        rlx_copy16(&ks[buf][key][8 * c], in ? kbase + (kv * @KSTEP@ + 8 * c) : @K@, in);
        rlx_copy16(&vs[buf][key][8 * c], in ? vbase + (kv * @VSTEP@ + 8 * c) : @V@, in);
      }
      asm volatile("cp.async.commit_group;" ::: "memory");
    } else {
      for (int i = threadIdx.x; i < 64 * @D@; i += 128) {
        const int key = i / @D@, d = i % @D@;
        const @IDX@ kv = k0 + key;
        ks[buf][key][d] = kv < @SK@ ? kbase[kv * @KSTEP@ + d] : (unsigned short)0;
        vs[buf][key][d] = kv < @SK@ ? vbase[kv * @VSTEP@ + d] : (unsigned short)0;
      }
    }
    @MASK_STAGE@
  };
  unsigned int qa[@D@ / 16][4];
  for (int kk = 0; kk < @D@ / 16; ++kk)
    for (int half = 0; half < 2; ++half) {
      const int d = kk * 16 + half * 8 + 2 * t;
      qa[kk][half * 2] = r0 < @SQ@ ? rlx_pair(@Q@ + (@QAT0@ + d), pairs) : 0u;
      qa[kk][half * 2 + 1] = r1 < @SQ@ ? rlx_pair(@Q@ + (@QAT1@ + d), pairs) : 0u;
    }
  float m0 = -__int_as_float(0x7F800000), m1 = -__int_as_float(0x7F800000), l0 = 0.0f, l1 = 0.0f;
  float o[@D@ / 8][4];
  for (int dn = 0; dn < @D@ / 8; ++dn) o[dn][0] = o[dn][1] = o[dn][2] = o[dn][3] = 0.0f;
  if (ntiles > 0) stage(0, 0);
  for (int it = 0; it < ntiles; ++it) {
    const long long k0 = it * 64ll;
    const int buf = @NBUF@ == 2 ? (it & 1) : 0;
    if (@NBUF@ == 2 && it + 1 < ntiles) {
      stage(it + 1, (it + 1) & 1);
      asm volatile("cp.async.wait_group 1;" ::: "memory");
    } else {
      asm volatile("cp.async.wait_group 0;" ::: "memory");
    }
    __syncthreads();
    // K's fragments for two 8-key tiles and one 16-wide step of D per ldmatrix.x4: lanes 0-15
    // address the first tile's rows (low then high 8 elements), lanes 16-31 the second's.
    const int lrow = (lane & 7) + ((lane >> 4) << 3), lcol = ((lane >> 3) & 1) << 3;
    float s[8][4];
    for (int nt = 0; nt < 8; nt += 2) {
      s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
      s[nt + 1][0] = s[nt + 1][1] = s[nt + 1][2] = s[nt + 1][3] = 0.0f;
      for (int kk = 0; kk < @D@ / 16; ++kk) {
        unsigned int kb[4];
        rlx_ldsm_keys(kb, &ks[buf][nt * 8 + lrow][kk * 16 + lcol]);
        rlx_mma(s[nt], qa[kk], kb[0], kb[1]);
        rlx_mma(s[nt + 1], qa[kk], kb[2], kb[3]);
      }
    }
    // Scores in base 2 (scale x log2 e), so each exponential below is one ex2.approx: its error
    // (2 ulp of f32) is far below the rounding of the probabilities to 16 bits for the product
    // with V. A tile this warp sees whole (every key below Sk, none masked for its rows: most
    // tiles of a padded batch) skips the tests and folds the scale into the exponential's
    // argument, one multiply-add a score; max commutes with a positive scale. Otherwise keys past
    // Sk are tested in 32 bits against what is left, and masked scores take the lowest value.
    const int kleft = (int)(@SK@ - k0);
    const bool whole = @SCALE_LOG2@f > 0.0f && (@SK@ % 64 == 0 || kleft >= 64) && !(@WARP_MASKED@);
    float x0 = -__int_as_float(0x7F800000), x1 = -__int_as_float(0x7F800000);
    if (whole) {
      for (int nt = 0; nt < 8; ++nt) {
        x0 = fmaxf(x0, fmaxf(s[nt][0], s[nt][1]));
        x1 = fmaxf(x1, fmaxf(s[nt][2], s[nt][3]));
      }
      x0 *= @SCALE_LOG2@f;
      x1 *= @SCALE_LOG2@f;
    } else {
      for (int nt = 0; nt < 8; ++nt)
        for (int j = 0; j < 4; ++j) {
          const int kt = nt * 8 + 2 * t + (j & 1);
          const long long key = k0 + kt, row = j < 2 ? r0 : r1;  // what a mask test may name
          (void)key;
          (void)row;
          float x = s[nt][j] * @SCALE_LOG2@f;
          if (kt >= kleft) x = -__int_as_float(0x7F800000);
          else if (@TILE_MASKED@) x = -3.402823466e38f;
          s[nt][j] = x;
        }
      for (int nt = 0; nt < 8; ++nt) {
        x0 = fmaxf(x0, fmaxf(s[nt][0], s[nt][1]));
        x1 = fmaxf(x1, fmaxf(s[nt][2], s[nt][3]));
      }
    }
    for (int off = 1; off < 4; off <<= 1) {
      x0 = fmaxf(x0, __shfl_xor_sync(0xffffffffu, x0, off));
      x1 = fmaxf(x1, __shfl_xor_sync(0xffffffffu, x1, off));
    }
    const float n0 = fmaxf(m0, x0), n1 = fmaxf(m1, x1);
    const float a0 = rlx_exp2(m0 - n0), a1 = rlx_exp2(m1 - n1);
    m0 = n0;
    m1 = n1;
    l0 *= a0;
    l1 *= a1;
    for (int dn = 0; dn < @D@ / 8; ++dn) {
      o[dn][0] *= a0;
      o[dn][1] *= a0;
      o[dn][2] *= a1;
      o[dn][3] *= a1;
    }
    // Scaled here (whole tiles) or above: the same value, the multiply fused with the subtraction.
    const float scale = whole ? @SCALE_LOG2@f : 1.0f;
    for (int nt = 0; nt < 8; ++nt) {
      s[nt][0] = rlx_exp2(fmaf(s[nt][0], scale, -m0));
      s[nt][1] = rlx_exp2(fmaf(s[nt][1], scale, -m0));
      s[nt][2] = rlx_exp2(fmaf(s[nt][2], scale, -m1));
      s[nt][3] = rlx_exp2(fmaf(s[nt][3], scale, -m1));
      l0 += s[nt][0] + s[nt][1];
      l1 += s[nt][2] + s[nt][3];
    }
    // V's fragments transposed out of its row-major tile, two 8-wide steps of D per
    // ldmatrix.x4.trans: lanes 0-7 and 8-15 address the 16 keys' rows at the first step's
    // columns, lanes 16-31 at the second's.
    const int vrow = lane & 15, vcol = (lane >> 4) << 3;
    for (int j = 0; j < 4; ++j) {
      unsigned int p[4] = {rlx_pack(s[2 * j][0], s[2 * j][1]), rlx_pack(s[2 * j][2], s[2 * j][3]),
                           rlx_pack(s[2 * j + 1][0], s[2 * j + 1][1]),
                           rlx_pack(s[2 * j + 1][2], s[2 * j + 1][3])};
      for (int dn = 0; dn < @D@ / 8; dn += 2) {
        unsigned int vb[4];
        rlx_ldsm_values(vb, &vs[buf][j * 16 + vrow][dn * 8 + vcol]);
        rlx_mma(o[dn], p, vb[0], vb[1]);
        rlx_mma(o[dn + 1], p, vb[2], vb[3]);
      }
    }
    __syncthreads();
    if (@NBUF@ == 1 && it + 1 < ntiles) stage(it + 1, 0);
  }
  for (int off = 1; off < 4; off <<= 1) {
    l0 += __shfl_xor_sync(0xffffffffu, l0, off);
    l1 += __shfl_xor_sync(0xffffffffu, l1, off);
  }
  for (int dn = 0; dn < @D@ / 8; ++dn) {
    const int d = dn * 8 + 2 * t;
    if (r0 < @SQ@) rlx_store_pair(@O@ + (@OAT0@ + d), o[dn][0] / l0, o[dn][1] / l0, pairs);
    if (r1 < @SQ@) rlx_store_pair(@O@ + (@OAT1@ + d), o[dn][2] / l1, o[dn][3] / l1, pairs);
  }
}
)";

// The helpers once per kernel, under the kernel's name so two kernels of one module never clash.
const char* const kHelpers =
    R"(static __device__ __forceinline__ unsigned int rlx_pair(const unsigned short* p, bool aligned) {
  return aligned ? *reinterpret_cast<const unsigned int*>(p)
                 : (unsigned int)p[0] | ((unsigned int)p[1] << 16);
}
static __device__ __forceinline__ unsigned int rlx_shared_at(const void* p) {
  unsigned int a;
  asm("{ .reg .u64 s; cvta.to.shared.u64 s, %1; cvt.u32.u64 %0, s; }" : "=r"(a) : "l"(p));
  return a;
}
// 16 bytes global -> shared without registers; `in` false writes zeros (a source size of 0).
static __device__ __forceinline__ void rlx_copy16(unsigned short* dst, const unsigned short* src,
                                                  bool in) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(rlx_shared_at(dst)),
               "l"(src), "r"(in ? 16 : 0)
               : "memory");
}
static __device__ __forceinline__ void rlx_ldsm_keys(unsigned int* r, const unsigned short* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(rlx_shared_at(p)));
}
static __device__ __forceinline__ void rlx_ldsm_values(unsigned int* r, const unsigned short* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(rlx_shared_at(p)));
}
static __device__ __forceinline__ float rlx_exp2(float x) {
  float y;
  asm("ex2.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
static __device__ __forceinline__ unsigned int rlx_pack(float lo, float hi) {
  unsigned int r;
  asm("cvt.rn.@DT@x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
// Two adjacent results, one 32-bit store where the output is 4-byte aligned. cvt.rn rounds as
// @TO16@ does.
static __device__ __forceinline__ void rlx_store_pair(unsigned short* p, float lo, float hi,
                                                      bool aligned) {
  if (aligned) {
    *reinterpret_cast<unsigned int*>(p) = rlx_pack(lo, hi);
  } else {
    p[0] = @TO16@(lo);
    p[1] = @TO16@(hi);
  }
}
static __device__ __forceinline__ void rlx_mma(float* c, const unsigned int* a, unsigned int b0,
                                               unsigned int b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.@DT@.@DT@.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
)";

}  // namespace

std::string tensor_core_attention_refusal(const sdk::AttentionShape& s) {
  if (const char* choice = std::getenv("RLX_CUDA_ATTENTION");
      choice && std::string(choice) == "tiled")
    return "RLX_CUDA_ATTENTION=tiled";
  if (s.q_loop) return "q is computed in the kernel";
  if ((s.q_dtype != DType::kF16 && s.q_dtype != DType::kBF16) || s.k_dtype != s.q_dtype ||
      s.v_dtype != s.q_dtype || s.out_dtype != s.q_dtype)
    return "q, k, v and the output are not all f16 or all bf16";
  if (s.head_dim % 16 != 0 || s.head_dim > 128 || s.v_dim != s.head_dim)
    return "the head dimension is not a multiple of 16 up to 128 shared by q, k and v";
  if (s.q_len < 16) return "the query has fewer than 16 rows";
  if (s.kv_heads <= 0 || s.heads % s.kv_heads != 0) return "the heads do not group";
  return "";
}

std::optional<sdk::AttentionKernel> tensor_core_attention(const sdk::AttentionShape& s) {
  if (!tensor_core_attention_refusal(s).empty()) return std::nullopt;
  const std::string dt = s.q_dtype == DType::kF16 ? "f16" : "bf16";
  const std::string symbol = sdk::kernel_symbol(s.name);
  std::map<std::string, std::string> values = attention_tokens(s);
  values.insert({
      {"DT", dt},
      {"CAUSAL", s.mask == "causal" ? "true" : "false"},
      {"Q", fmt::format("b{}", s.q_buffer)},
      {"K", fmt::format("b{}", s.k_buffer)},
      {"V", fmt::format("b{}", s.v_buffer)},
      {"O", fmt::format("b{}", s.out_buffer)},
      {"QAT0", attention_row_offset(s, 'q', "r0")},
      {"QAT1", attention_row_offset(s, 'q', "r1")},
      {"KAT0", attention_row_offset(s, 'k', "0")},
      {"VAT0", attention_row_offset(s, 'v', "0")},
      {"KSTEP", std::to_string(attention_row_step(s, 'k'))},
      {"VSTEP", std::to_string(attention_row_step(s, 'v'))},
      // Within one kv head the last key's row ends below Sk x step elements from its first.
      {"IDX", s.kv_len * std::max(attention_row_step(s, 'k'), attention_row_step(s, 'v')) <
                      (int64_t{1} << 31)
                  ? "int"
                  : "long long"},
      {"OAT0", attention_row_offset(s, 'o', "r0")},
      {"OAT1", attention_row_offset(s, 'o', "r1")},
      // Rows of K and V start 16-byte aligned, and rows of q 4-byte aligned, where the buffers
      // do and every offset and row stride in elements is a multiple of 8 (of 2).
      {"KV_ROWS16",
       (s.k_offset | s.k_row_stride() | s.v_offset | s.v_row_stride()) % 8 == 0 ? "true" : "false"},
      {"Q_ROWS4", (s.q_offset | s.q_row_stride()) % 2 == 0 ? "true" : "false"},
  });
  // Two tile buffers while they fit the 48 KB of static shared memory (D up to 64).
  values["NBUF"] = s.head_dim <= 64 ? "2" : "1";
  values["SCALE_LOG2"] = fmt::format("{:.9e}", s.scale * 1.4426950408889634);
  // A padding mask depends on the key alone: it is read once a tile, with the keys, into shared
  // memory, not once a score. Causal and none are arithmetic on the row and key.
  if (s.mask == "padding") {
    values["MASK_SHARED"] = "__shared__ unsigned char mk[@NBUF@][64];";
    values["MASK_STAGE"] = fmt::format(
        "if (threadIdx.x < 64) {{ const long long key = k0 + threadIdx.x; "
        "mk[buf][threadIdx.x] = key < {} && {} ? 1 : 0; }}",
        s.kv_len, values.at("MASKED"));
    values["TILE_MASKED"] = "mk[buf][kt]";
    values["WARP_MASKED"] = "__any_sync(0xffffffffu, (mk[buf][lane] | mk[buf][lane + 32]) != 0)";
  } else {
    values["MASK_SHARED"] = "";
    values["MASK_STAGE"] = "";
    values["TILE_MASKED"] = values.at("MASKED");
    // A causal tile is whole for the warp when its last key is visible from the warp's first row.
    values["WARP_MASKED"] =
        s.mask == "causal"
            ? fmt::format("k0 + 63 > qblock + warp * 16 + ({} - {})", s.kv_len, s.q_len)
            : "false";
  }
  // The helpers are static and named alike in every kernel; a second kernel of the module would
  // redefine them, so each kernel takes them under its own suffix.
  std::string helpers = fill_tokens(
      kHelpers,
      {{"DT", dt}, {"TO16", s.q_dtype == DType::kF16 ? "rlx_f32_to_f16" : "rlx_f32_to_bf16"}});
  // Tokens inside tokens (the mask's staging names the buffer count) are filled in a second pass.
  std::string kernel = fill_tokens(fill_tokens(kKernel, values), values);
  for (const char* name : {"rlx_pair", "rlx_pack", "rlx_mma", "rlx_shared_at", "rlx_copy16",
                           "rlx_exp2", "rlx_ldsm_values", "rlx_ldsm_keys", "rlx_store_pair"}) {
    auto rename_in = [&](std::string text) {
      const std::string to = std::string(name) + "_" + symbol;
      for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at)) {
        text.replace(at, std::string(name).size(), to);
        at += to.size();
      }
      return text;
    };
    helpers = rename_in(helpers);
    kernel = rename_in(kernel);
  }
  const int64_t blocks = s.batch * s.heads * ((s.q_len + kRowsPerBlock - 1) / kRowsPerBlock);
  // Blocks of 128 threads (the kernel's launch bounds); groups count 64 work-items each.
  return sdk::AttentionKernel{helpers + kernel, blocks * (128 / kGroupItems),
                              "tensor cores, 64 rows x 64 keys"};
}

}  // namespace rlx::cuda
