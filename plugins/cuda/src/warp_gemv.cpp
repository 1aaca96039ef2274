// The kernel's loop is over whole 16-byte weight vectors (V elements of B), each lane taking every
// 32nd one, so a warp reads 512 contiguous bytes of its row per step and, unrolled, keeps several
// such reads in flight; the first sixteen vectors of each lane are loaded before A is staged,
// so their latency overlaps the staging. A's rows are converted to f32 into shared memory once per
// block where they fit (kMaxStaged), else read as the same V elements (one or two vector loads) by
// every warp; they are small and stay in L1 and L2. Each lane's partial sums are combined with
// shuffles, lane j < m then holds output row j and stores it (through the epilogue where one is
// fused). Sums are f32 fmaf in a fixed order; the module is compiled with
// --fmad=false, so nothing else is contracted.
#include "warp_gemv.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "attention_text.h"
#include "switches.h"
#include "rlx/core/dtype.h"

namespace rlx::cuda {

namespace {

constexpr int64_t kMaxRows = 8;        // m: accumulators per lane
constexpr int64_t kVectorBytes = 16;   // one weight load per lane
constexpr int64_t kWarpsPerBlock = 8;  // 256 threads, the host's widest block
constexpr int64_t kMaxUnroll = 8;      // vector steps unrolled (loads in flight per lane)
// A's rows are staged in shared memory as f32 when they fit in this many floats (32 KB), so the
// block converts each element once instead of each of its eight warps converting all of them
// (a 16-bit A would otherwise cost a conversion per weight read, as many as B's own).
constexpr int64_t kMaxStaged = 8192;
// Weight vectors each lane loads into registers before the block stages A (64 registers), so
// the memory's latency for them overlaps the staging and its barrier instead of following it:
// a decode step's products are a few MB each, short enough that the two latencies in a row
// were a large part of their time.
constexpr int64_t kMaxPrefetch = 16;

const char* const kKernel =
    R"(// @SYM@: warp gemv C[@B@, @M@, @N@] = A[@B@, @M@, @K@] (strides @AB@, @AM@, 1) x B[@B@, @K@, @N@] (strides @BB@, 1, @BN@), a warp per column, @V@ weights a load, @PREFETCH@ a lane fetched first, f32 accumulation@EPI@
extern "C" __global__ void __launch_bounds__(256) @SYM@(@PARAMS@) {
  const int lane = threadIdx.x & 31;
  const long long task = (long long)blockIdx.x * 8 + (threadIdx.x >> 5);
  const long long column = min(task, @TASKS@LL - 1);
  const long long bt = column / @N@, n = column % @N@;
  const @AT@* __restrict__ arow = b@AP@ + bt * @AB@;
  const @WT@* __restrict__ wrow = b@BP@ + bt * @BB@ + n * @BN@;
@PRE@@STAGE@  if (task >= @TASKS@) return;
@ACC@@EARLY@@MAIN@@REDUCE@  if (lane < @M@) {
    const long long rlx_i = (bt * @M@ + lane) * @N@ + n;
@STORE@  }
}
)";

// The 32-bit words of a vector load `var` of `bytes` bytes (uint4, uint2 or one word).
std::vector<std::string> words(const std::string& var, int64_t bytes) {
  if (bytes == 4) return {var};
  std::vector<std::string> w;
  const char* lanes[] = {".x", ".y", ".z", ".w"};
  for (int64_t i = 0; i < bytes / 4; ++i) w.push_back(var + lanes[i]);
  return w;
}

const char* vector_type(int64_t bytes) {
  return bytes == 16 ? "uint4" : bytes == 8 ? "uint2" : "unsigned int";
}

// The f32 values of the elements packed in `word` (little-endian: the low half first).
std::vector<std::string> unpack(DType t, const std::string& word) {
  if (t == DType::kF32) return {"__uint_as_float(" + word + ")"};
  if (t == DType::kBF16)
    return {"__uint_as_float(" + word + " << 16)", "__uint_as_float(" + word + " & 0xFFFF0000u)"};
  return {"rlx_f16_to_f32((uint16_t)(" + word + "))",
          "rlx_f16_to_f32((uint16_t)(" + word + " >> 16))"};
}

bool single_float(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16;
}

int64_t vector_of(const sdk::MatmulShape& s) {
  return kVectorBytes / static_cast<int64_t>(dtype_size(s.b_dtype));
}

// "const float* __restrict__ b0, uint16_t* __restrict__ b2, ..." by position, as
// render_matmul's signature has them (an epilogue's buffers included).
std::string params(const sdk::MatmulShape& s) {
  int32_t count = std::max({s.a_buffer, s.b_buffer, s.c_buffer}) + 1;
  if (s.epilogue) count = std::max(count, s.epilogue->params);
  if (s.a_norm) count = std::max({count, s.a_norm->scale_buffer + 1, s.a_norm->bias_buffer + 1});
  std::vector<DType> dtypes(static_cast<size_t>(count), DType::kF32);
  if (s.epilogue)
    for (int32_t j = 0; j < s.epilogue->params; ++j)
      dtypes[j] = s.epilogue->program.buffers.at(j).dtype;
  if (s.a_norm && s.a_norm->scale_buffer >= 0)
    dtypes[s.a_norm->scale_buffer] = s.a_norm->scale_dtype;
  if (s.a_norm && s.a_norm->bias_buffer >= 0) dtypes[s.a_norm->bias_buffer] = s.a_norm->bias_dtype;
  if (s.a_loop) {  // what the kernel computing A reads, by position (A's own binds one of them)
    count = std::max(count, s.a_loop->params);
    dtypes.resize(static_cast<size_t>(count), DType::kF32);
    for (int32_t j = 0; j < s.a_loop->params; ++j)
      dtypes[j] = s.a_loop->program.buffers.at(j).dtype;
  }
  dtypes[s.a_buffer] = s.a_dtype;
  dtypes[s.b_buffer] = s.b_dtype;
  if (!s.epilogue) dtypes[s.c_buffer] = s.c_dtype;
  std::string list;
  for (int32_t j = 0; j < count; ++j)
    list += fmt::format("{}{}{}* __restrict__ b{}", j ? ", " : "", j == s.c_buffer ? "" : "const ",
                        sdk::cuda_dialect().storage_type[static_cast<size_t>(dtypes[j])], j);
  return list;
}

// The header of a loop giving each of the block's 256 threads its elements i of a row of k,
// closed by "  }\n". The trip count is a constant (not a bound on threadIdx.x), so the loop
// unrolls whole and every load of the staging is issued before the first one is waited for:
// unrolled only by four, as the bound on i left it, a block staging a computed row of 3072
// waited out the memory's latency three times in a row (the down product of a decode step
// took longer than a separate elementwise kernel and product).
int64_t block_trips(int64_t k) { return (k + 255) / 256; }

std::string block_elements(int64_t k) {
  const int64_t trips = block_trips(k);
  std::string t = fmt::format(
      "#pragma unroll\n"
      "  for (int rlx_t = 0; rlx_t < {}; ++rlx_t) {{\n"
      "    const int i = threadIdx.x + rlx_t * 256;\n",
      trips);
  if (k % 256 != 0) t += fmt::format("    if (i >= {}) break;\n", k);
  return t;
}

// A's row staged as the norm's output (MatmulShape::a_norm): the block loads x into shared
// memory, sums the row (each thread its elements, then warps by shuffles, then the eight warp
// sums in order), and replaces each element by its normalised value rounded to the norm's dtype.
// The sums' order is the block's, not the norm kernel's, so an element may differ from what the
// norm would have stored by a rounding of the statistics.
// The scale and bias are read into registers beside x, not after the statistics' barrier, which
// no load crosses: that was another wait for the memory per block.
std::string norm_stage(const sdk::MatmulShape& s) {
  const sdk::MatmulNormPrologue& nm = *s.a_norm;
  const std::string k = std::to_string(s.k);
  const int64_t trips = block_trips(s.k);
  std::string affine_decl, affine_load;
  if (nm.scale_buffer >= 0) {
    affine_decl += fmt::format("  float rlx_scale[{}];\n", trips);
    affine_load += fmt::format("    rlx_scale[rlx_t] = {};\n",
                               load_f32(nm.scale_dtype, fmt::format("b{}", nm.scale_buffer), "i"));
  }
  if (nm.bias_buffer >= 0) {
    affine_decl += fmt::format("  float rlx_bias[{}];\n", trips);
    affine_load += fmt::format("    rlx_bias[rlx_t] = {};\n",
                               load_f32(nm.bias_dtype, fmt::format("b{}", nm.bias_buffer), "i"));
  }
  std::string t = fmt::format(
      "  __shared__ __align__(16) float as[{0}];\n"
      "  __shared__ float rlx_norm_red[16];\n"
      "  float part = 0.0f;\n"
      "{4}"
      "{3}"
      "    const float x = {1};\n"
      "    as[i] = x;\n"
      "    part += {2};\n"
      "{5}"
      "  }}\n"
      "  part = rlx_warp_sum(part);\n"
      "  if (lane == 0) rlx_norm_red[threadIdx.x >> 5] = part;\n"
      "  __syncthreads();\n"
      "  float row_total = 0.0f;\n"
      "  for (int w = 0; w < 8; ++w) row_total += rlx_norm_red[w];\n",
      k, load_f32(s.a_dtype, "arow", "i"), nm.rms ? "x * x" : "x", block_elements(s.k),
      affine_decl, affine_load);
  std::string stat = "row_total";
  if (!nm.rms) {
    t += fmt::format(
        "  const float mean = row_total / {0}.0f;\n"
        "  float dev = 0.0f;\n"
        "{1}"
        "    dev += (as[i] - mean) * (as[i] - mean);\n"
        "  }}\n"
        "  dev = rlx_warp_sum(dev);\n"
        "  if (lane == 0) rlx_norm_red[8 + (threadIdx.x >> 5)] = dev;\n"
        "  __syncthreads();\n"
        "  float row_squares = 0.0f;\n"
        "  for (int w = 0; w < 8; ++w) row_squares += rlx_norm_red[8 + w];\n",
        k, block_elements(s.k));
    stat = "row_squares";
  }
  t += fmt::format("  const float inv = 1.0f / sqrtf({} / {}.0f + {:.9e}f);\n", stat, k,
                   static_cast<float>(nm.epsilon));
  std::string y = nm.rms ? "as[i] * inv" : "(as[i] - mean) * inv";
  if (nm.scale_buffer >= 0) y = fmt::format("({}) * rlx_scale[rlx_t]", y);
  if (nm.bias_buffer >= 0) y += " + rlx_bias[rlx_t]";
  if (nm.out_dtype == DType::kF16) y = "rlx_f16_to_f32(rlx_f32_to_f16(" + y + "))";
  if (nm.out_dtype == DType::kBF16) y = "rlx_bf16_to_f32(rlx_f32_to_bf16(" + y + "))";
  t += block_elements(s.k) + fmt::format("    as[i] = {};\n  }}\n", y);
  t += "  __syncthreads();\n";
  return t;
}

// A's row staged as the elementwise kernel that would have stored it computes it
// (MatmulShape::a_loop): each element once per block, rounded as that kernel's store would round
// it, so the product sees the values it would have read.
std::string loop_stage(const sdk::MatmulShape& s) {
  return fmt::format(
      "  __shared__ __align__(16) float as[{0}];\n"
      "{2}"
      "{1}"
      "    as[i] = ap;\n"
      "  }}\n"
      "  __syncthreads();\n",
      s.k, sdk::render_prologue(*s.a_loop, sdk::cuda_dialect(), "i", "ap", 2), block_elements(s.k));
}

}  // namespace

bool warp_gemv_takes(const sdk::MatmulShape& s) {
  if (!switched_on("RLX_CUDA_GEMV")) return false;
  if (s.m < 1 || s.m > kMaxRows || s.n < 1 || s.k < 1 || s.batch < 1) return false;
  // A computed in the kernel needs its single row staged; opt-in, since a decode step measured
  // faster with the elementwise kernel apart (docs/targets.md).
  if (s.a_loop && (!asked_for("RLX_CUDA_GEMV_LOOP") || s.m != 1 || s.batch != 1 ||
                   s.k > kMaxStaged))
    return false;
  // A norm prologue needs A's single row staged.
  if (s.a_norm && (!switched_on("RLX_CUDA_GEMV_NORM") || s.m != 1 || s.batch != 1 || s.k > kMaxStaged))
    return false;
  if (s.a_k != 1 || s.b_k != 1) return false;
  if (!single_float(s.a_dtype) || !single_float(s.b_dtype) || !single_float(s.c_dtype))
    return false;
  if (s.c_buffer == s.a_buffer || s.c_buffer == s.b_buffer) return false;
  if (s.a_buffer == s.b_buffer && s.a_dtype != s.b_dtype) return false;
  const int64_t sb = static_cast<int64_t>(dtype_size(s.b_dtype));
  const int64_t sa = static_cast<int64_t>(dtype_size(s.a_dtype));
  const int64_t v = vector_of(s), a_bytes = v * sa;
  const int64_t a_unit = std::min(kVectorBytes, a_bytes);
  // Device buffers start on 256 bytes (cuMemAlloc), so these keep every load aligned.
  return s.k % v == 0 && (s.b_n * sb) % kVectorBytes == 0 && (s.b_batch * sb) % kVectorBytes == 0 &&
         (s.a_m * sa) % a_unit == 0 && (s.a_batch * sa) % a_unit == 0;
}

std::optional<sdk::MatmulKernel> warp_gemv(const sdk::MatmulShape& s) {
  if (!warp_gemv_takes(s)) return std::nullopt;
  const int64_t v = vector_of(s);
  const int64_t sa = static_cast<int64_t>(dtype_size(s.a_dtype));
  const int64_t a_bytes = v * sa, a_unit = std::min(kVectorBytes, a_bytes);
  const int64_t steps = (s.k + 32 * v - 1) / (32 * v);
  const bool ragged = s.k % (32 * v) != 0;  // the last step leaves some lanes without a vector

  std::string acc, weights, rows, reduce, select;
  for (int64_t r = 0; r < s.m; ++r) acc += fmt::format("  float acc{} = 0.0f;\n", r);
  const std::string pad = ragged ? "      " : "    ";
  std::vector<std::string> w_values;
  for (const std::string& word : words("w", kVectorBytes))
    for (std::string& x : unpack(s.b_dtype, word)) w_values.push_back(std::move(x));
  for (int64_t e = 0; e < v; ++e)
    weights += fmt::format("{}const float w{} = {};\n", pad, e, w_values[e]);
  // Staged: every warp of a block reads the same A (one batch, or A shared by the batches).
  const bool staged = s.m * s.k <= kMaxStaged && (s.batch == 1 || s.a_batch == 0);
  std::string stage;
  if (s.a_norm)
    stage = norm_stage(s);
  else if (s.a_loop)
    stage = loop_stage(s);
  else if (staged)
    stage = fmt::format(
        "  __shared__ __align__(16) float as[{0}];\n"
        "{2}"
        "    as[i] = {1};\n"
        "  }}\n"
        "  __syncthreads();\n",
        s.m * s.k,
        load_f32(s.a_dtype, "arow", fmt::format("(i / {}) * {} + i % {}", s.k, s.a_m, s.k)),
        block_elements(s.m * s.k));
  for (int64_t r = 0; r < s.m; ++r) {
    rows += pad + "{\n";
    std::vector<std::string> a_values;
    for (int64_t u = 0; staged && u < v / 4; ++u) {
      const std::string var = fmt::format("a{}", u);
      rows +=
          fmt::format("{}  const float4 {} = *reinterpret_cast<const float4*>(as + {} + k + {});\n",
                      pad, var, r * s.k, 4 * u);
      for (const char* c : {".x", ".y", ".z", ".w"}) a_values.push_back(var + c);
    }
    for (int64_t u = 0; !staged && u < a_bytes / a_unit; ++u) {
      const std::string var = fmt::format("a{}", u);
      rows +=
          fmt::format("{}  const {} {} = *reinterpret_cast<const {}*>(arow + {} + k + {});\n", pad,
                      vector_type(a_unit), var, vector_type(a_unit), r * s.a_m, u * a_unit / sa);
      for (const std::string& word : words(var, a_unit))
        for (std::string& x : unpack(s.a_dtype, word)) a_values.push_back(std::move(x));
    }
    for (int64_t e = 0; e < v; ++e)
      rows += fmt::format("{}  acc{} = fmaf({}, w{}, acc{});\n", pad, r, a_values[e], e, r);
    rows += pad + "}\n";
  }
  for (int64_t r = 0; r < s.m; ++r)
    reduce += fmt::format(
        "  for (int off = 16; off > 0; off >>= 1) acc{0} += __shfl_xor_sync(0xffffffffu, acc{0}, "
        "off);\n",
        r);
  reduce += "  float value = acc0;\n";
  for (int64_t r = 1; r < s.m; ++r)
    reduce += fmt::format("  if (lane == {0}) value = acc{0};\n", r);

  std::string store;
  if (s.epilogue)
    store = sdk::render_epilogue(*s.epilogue, sdk::cuda_dialect(), "rlx_i", "value", 2);
  else
    store = fmt::format("    b{}[rlx_i] = {};\n", s.c_buffer, from_f32(s.c_dtype, "value"));

  // The first `prefetch` steps' vectors are loaded into registers before A is staged
  // (RLX_CUDA_GEMV_PREFETCH=0 turns that off, for comparison); their products are summed first,
  // in the same order as the loop's.
  int64_t prefetch = std::min(steps, kMaxPrefetch);
  if (!switched_on("RLX_CUDA_GEMV_PREFETCH")) prefetch = 0;
  std::string fetch, early;
  if (prefetch > 0) {
    fetch = fmt::format(
        "  uint4 fetched[{}];\n#pragma unroll\n  for (int step = 0; step < {}; ++step) {{\n"
        "    const int k = (step * 32 + lane) * {};\n",
        prefetch, prefetch, v);
    fetch += ragged ? fmt::format(
                          "    fetched[step] = k < {} ? *reinterpret_cast<const uint4*>(wrow + k) "
                          ": make_uint4(0u, 0u, 0u, 0u);\n",
                          s.k)
                    : "    fetched[step] = *reinterpret_cast<const uint4*>(wrow + k);\n";
    fetch += "  }\n";
    early = fmt::format(
        "#pragma unroll\n  for (int step = 0; step < {}; ++step) {{\n"
        "    const int k = (step * 32 + lane) * {};\n",
        prefetch, v);
    early += ragged ? fmt::format("    if (k < {}) {{\n", s.k) : "";
    early += pad + "const uint4 w = fetched[step];\n" + weights + rows;
    early += ragged ? "    }\n" : "";
    early += "  }\n";
  }
  std::string main;  // the steps not fetched early, loaded as they are summed
  if (prefetch < steps) {
    main = fmt::format(
        "#pragma unroll {}\n  for (int step = {}; step < {}; ++step) {{\n"
        "    const int k = (step * 32 + lane) * {};\n",
        std::min(steps - prefetch, kMaxUnroll), prefetch, steps, v);
    main += ragged ? fmt::format("    if (k < {}) {{\n", s.k) : "";
    main += pad + "const uint4 w = *reinterpret_cast<const uint4*>(wrow + k);\n" + weights + rows;
    main += ragged ? "    }\n" : "";
    main += "  }\n";
  }
  // Weights no kernel writes are fetched before the wait for the kernels before this one
  // (sdk::Dialect::kernel_entry), so under a dependent launch their loads overlap that kernel's
  // tail; any other B only after it.
  const std::string await = "  " + sdk::cuda_dialect().kernel_entry + "\n";
  const std::string pre = s.b_constant ? fetch + await : await + fetch;
  std::string epilogue_note;
  if (s.epilogue)
    epilogue_note = fmt::format(", then {} fused kernels", s.epilogue->program.kernels.size());
  if (s.a_loop)
    epilogue_note = ", A computed by " + sdk::prologue_kernel(*s.a_loop).name + epilogue_note;
  if (s.a_norm)
    epilogue_note = fmt::format(", A normalised first ({}, epsilon {})",
                                s.a_norm->rms ? "RMSNorm" : "LayerNorm", s.a_norm->epsilon) +
                    epilogue_note;
  const int64_t tasks = s.batch * s.n;
  const std::string symbol = sdk::kernel_symbol(s.name);
  const std::map<std::string, std::string> tokens = {
      {"SYM", symbol},
      {"PARAMS", params(s)},
      {"B", std::to_string(s.batch)},
      {"M", std::to_string(s.m)},
      {"N", std::to_string(s.n)},
      {"K", std::to_string(s.k)},
      {"AB", std::to_string(s.a_batch)},
      {"AM", std::to_string(s.a_m)},
      {"BB", std::to_string(s.b_batch)},
      {"BN", std::to_string(s.b_n)},
      {"V", std::to_string(v)},
      {"EPI", epilogue_note},
      {"TASKS", std::to_string(tasks)},
      {"WT", sdk::cuda_dialect().storage_type[static_cast<size_t>(s.b_dtype)]},
      {"AT", sdk::cuda_dialect().storage_type[static_cast<size_t>(s.a_dtype)]},
      {"BP", std::to_string(s.b_buffer)},
      {"AP", std::to_string(s.a_buffer)},
      {"ACC", acc},
      {"STAGE", stage},
      {"PRE", pre},
      {"EARLY", early},
      {"MAIN", main},
      {"PREFETCH", fmt::format("{} load{}", prefetch, prefetch == 1 ? "" : "s")},
      {"REDUCE", reduce},
      {"STORE", store}};
  const int64_t blocks = (tasks + kWarpsPerBlock - 1) / kWarpsPerBlock;
  // Blocks of 256 threads; groups count 64 work-items.
  return sdk::MatmulKernel{fill_tokens(kKernel, tokens), blocks * 4,
                           fmt::format("warp gemv, {} weights a load", v)};
}

}  // namespace rlx::cuda
