// The cpu target's GEMM: C[M,N] = epilogue(A[M,K] * B[K,N]), BLIS-style. A and B are packed
// into register-blocked panels (B can be packed once, ahead of time, for constant weights) and a
// micro-kernel keeps an MR x NR tile of C in vector registers. The kernels are compiled three
// times, each translation unit with its own ISA flags (AVX-512, AVX2+FMA, none), and the one to
// use is chosen at run time from what the CPU supports.
//
// Numerics: f32, f16 and bf16 operands compute in f32 (16-bit values are widened while packing);
// f64 computes in f64. The sum over K is accumulated in the compute type in blocks of KC, in an
// order that differs from a naive loop, and uses FMA where the ISA has it.
//
// Thread-safety: every function is thread-safe. gemm_rows runs on the calling thread only, so a
// caller that parallelises itself (attention tiles, per-head batches) calls it from its own tasks;
// gemm() splits the work over oneTBB's arena. Scratch memory is per thread, allocated on first
// use and reused, so steady-state calls with a prepacked B allocate nothing.
#pragma once
#include <array>
#include <cstdint>
#include <memory>

#include "rlx/core/dtype.h"

namespace rlx::cpu {

// ---- ISA selection --------------------------------------------------------------------------
enum class GemmIsa : uint8_t { kPortable, kAvx2, kAvx512 };
const char* gemm_isa_name(GemmIsa isa);
bool gemm_isa_supported(GemmIsa isa);
// The ISA new calls use: RLX_CPU_GEMM_ISA=portable|avx2|avx512 when set (an unsupported value is
// an error, never a silent fallback), else the best the CPU supports.
GemmIsa gemm_isa();
// Switches the ISA for the rest of the process (tests and benchmarks force each path); throws a
// user error if the CPU lacks it. PackedB values remember the ISA they were packed for.
void set_gemm_isa(GemmIsa isa);

// ---- Operands -------------------------------------------------------------------------------
// A matrix operand: element (i, j) is data[i * rs + j * cs], counted in elements of `dtype`
// (f32, f16, bf16 or f64). Transposed operands are just swapped strides.
struct MatView {
  const void* data = nullptr;
  DType dtype = DType::kF32;
  int64_t rs = 0, cs = 1;
};

// B [K, N] packed for one ISA's micro-kernel: KC-deep blocks of NR-wide column panels,
// zero-padded to a multiple of NR. Immutable after packing; share it between threads freely.
class PackedB {
 public:
  PackedB() = default;
  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  GemmIsa isa() const { return isa_; }
  bool is_f64() const { return f64_; }
  bool empty() const { return !data_; }
  const void* data() const { return data_.get(); }

 private:
  friend PackedB pack_b(const MatView& b, int64_t K, int64_t N, bool f64);
  std::shared_ptr<void> data_;
  int64_t k_ = 0, n_ = 0;
  GemmIsa isa_ = GemmIsa::kPortable;
  bool f64_ = false;
};
// Packs B [K, N] for the current ISA, computing in f64 when `f64` (else f32).
PackedB pack_b(const MatView& b, int64_t K, int64_t N, bool f64);

// ---- Epilogue -------------------------------------------------------------------------------
// An elementwise program applied to each finished tile of C while it is still in L1 (f32 GEMMs
// only). Steps form a register program over one row of a tile: step s computes register s from
// earlier registers; the last step's value is stored to C. kAcc reads the GEMM result, kLoad
// element (i, j) of an extra f32 operand (a per-column bias has rs = 0, cs = 1; a residual
// [M, N] has rs = ldr, cs = 1). Unary and binary ops follow the cpu target's scalar semantics
// (max/min propagate NaN); exp, tanh and erf use vectorisable approximations within a few ulp.
enum class EpOp : uint8_t {
  kAcc,
  kConst,
  kLoad,
  kNeg,
  kAbs,
  kExp,
  kTanh,
  kErf,
  kSqrt,
  kRsqrt,
  kLogistic,
  kGeluErf,  // 0.5 a (1 + erf(a / sqrt 2)): the IR's GELU in one step (GemmEpilogue::simplify)
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMax,
  kMin,  // binary ops from here on
};
struct EpStep {
  EpOp op = EpOp::kAcc;
  uint8_t a = 0, b = 0;  // argument registers
  float value = 0;       // kConst
  uint8_t load = 0;      // kLoad: index into GemmEpilogue::loads
};
struct EpLoad {
  const float* data = nullptr;
  int64_t rs = 0, cs = 1;
};
struct GemmEpilogue {
  static constexpr int kMaxSteps = 48, kMaxLoads = 6;
  std::array<EpStep, kMaxSteps> steps{};
  std::array<EpLoad, kMaxLoads> loads{};
  int num_steps = 0, num_loads = 0;

  bool empty() const { return num_steps == 0; }
  // Builders return the register of the new step; they throw an internal error when full.
  int acc();
  int constant(float v);
  int load(const float* data, int64_t rs, int64_t cs);
  int unary(EpOp op, int a);
  int binary(EpOp op, int a, int b);
  // Common chains: y = acc + bias[j]; then GELU (erf or tanh form, as the IR's GELU op defines
  // them); then + residual[i, j]. Null pointers skip a step.
  enum class Gelu : uint8_t { kNone, kErf, kTanh };
  static GemmEpilogue bias_gelu_residual(const float* bias, Gelu gelu, const float* residual,
                                         int64_t ldr);
  // Rewrites the steps of the IR's erf GELU (mul(mul(x, 0.5), add(erf(mul(x, 1/sqrt 2)), 1)),
  // operands in either order) into one kGeluErf step, the same operations in the same order, and
  // drops the steps nothing reads any more. Each step costs a pass over the row through memory,
  // so GELU's eight steps cost twice its erf (bench/RESULTS.md). Step order is kept.
  void simplify();
  // The vector v when the program is exactly acc * v[column] (either order), else null: callers
  // with rows to scale run that as a plain loop (same bits) instead of the program.
  const float* column_scale() const;
  // Whether a load over the product's [M, N] elements may touch [lo, hi): a caller that writes
  // raw tiles into the result before the epilogue reads them needs a scratch tile if so.
  bool reads_within(int64_t M, int64_t N, const float* lo, const float* hi) const;
};
// Applies `ep` to rows [0, m) x cols [0, n) of C (row stride ldc) whose top-left element is
// C[i0, j0] of the whole product (loads are indexed by the global i, j). For callers that run
// their own GEMM tiles; gemm()/gemm_rows() call it themselves.
void apply_epilogue(const GemmEpilogue& ep, float* c, int64_t ldc, int64_t i0, int64_t j0,
                    int64_t m, int64_t n);
// The same with the results written to out (row stride ldo) instead: a tile finished in scratch
// goes to its place in one pass.
void apply_epilogue(const GemmEpilogue& ep, const float* c, int64_t ldc, int64_t i0, int64_t j0,
                    int64_t m, int64_t n, float* out, int64_t ldo);

// ---- GEMM -----------------------------------------------------------------------------------
// C (row-major, row stride ldc, compute-type elements: float, or double when f64) =
// epilogue(A * B). B is either `packed` (non-null, packed for the current ISA with matching k,
// n and precision) or the view `b`. The epilogue's loads must not overlap C: C holds raw partial
// sums before the epilogue runs (callers with a residual in place use apply_epilogue's scratch
// form, see reads_within).
struct GemmArgs {
  int64_t M = 0, N = 0, K = 0;
  MatView a;
  MatView b;
  const PackedB* packed = nullptr;
  void* c = nullptr;
  int64_t ldc = 0;
  bool f64 = false;
  const GemmEpilogue* epilogue = nullptr;  // f32 only
  // A 16-bit result (f16 or bf16; f32 compute only): each finished tile of the f32 sums in c,
  // after the epilogue, is also stored rounded to `narrow` at narrow_out (row stride ldc) by the
  // thread that computed it; with narrow_bias (that type, one per column) the rounded value plus
  // the bias, rounded again, the two roundings of a 16-bit Linear's decomposition.
  DType narrow = DType::kF32;
  void* narrow_out = nullptr;
  const uint16_t* narrow_bias = nullptr;
};
// All of C, split over the oneTBB arena (both rows and columns are split, so small batch-1
// products with few rows still keep every core busy; a long K beside few rows with B not
// prepacked splits K, see gemm.cpp).
void gemm(const GemmArgs& g);
// Rows [m0, m1) of C on the calling thread.
void gemm_rows(const GemmArgs& g, int64_t m0, int64_t m1);
// The block [m0, m1) x [n0, n1) of C on the calling thread.
void gemm_block(const GemmArgs& g, int64_t m0, int64_t m1, int64_t n0, int64_t n1);

// The simple blocked loop the packed path replaced: integer GEMMs (int64 compute), `batch`
// contiguous problems back to back. Also the tests' second opinion for odd shapes.
template <typename T>
void gemm_reference(int64_t batch, int64_t M, int64_t N, int64_t K, const T* A, const T* B, T* C);

}  // namespace rlx::cpu
