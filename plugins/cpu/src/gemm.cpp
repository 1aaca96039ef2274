// GEMM front end: ISA choice, B prepacking, the split of one product over threads, epilogue
// builders, and the baseline loop kept for integer GEMMs.
#include "gemm.h"

#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/blocked_range2d.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gemm_backend.h"
#include "rlx/core/error.h"

namespace rlx::cpu {

// ---- ISA selection --------------------------------------------------------------------------

const char* gemm_isa_name(GemmIsa isa) {
  switch (isa) {
    case GemmIsa::kAvx512: return "avx512";
    case GemmIsa::kAvx2: return "avx2";
    default: return "portable";
  }
}

bool gemm_isa_supported(GemmIsa isa) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  switch (isa) {
    case GemmIsa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("fma");
    case GemmIsa::kAvx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case GemmIsa::kPortable: return true;
  }
  return false;
#else
  return isa == GemmIsa::kPortable;
#endif
}

namespace {

GemmIsa best_isa() {
  for (GemmIsa isa : {GemmIsa::kAvx512, GemmIsa::kAvx2})
    if (gemm_isa_supported(isa)) return isa;
  return GemmIsa::kPortable;
}

GemmIsa initial_isa() {
  const char* env = std::getenv("RLX_CPU_GEMM_ISA");
  if (!env || !*env) return best_isa();
  for (GemmIsa isa : {GemmIsa::kAvx512, GemmIsa::kAvx2, GemmIsa::kPortable}) {
    if (std::string(env) != gemm_isa_name(isa)) continue;
    if (!gemm_isa_supported(isa))
      throw_user_error(fmt::format("RLX_CPU_GEMM_ISA={} but this CPU lacks {}; unset it or choose "
                                   "one of avx512, avx2, portable that the CPU supports",
                                   env, env));
    return isa;
  }
  throw_user_error(fmt::format("RLX_CPU_GEMM_ISA={} is not one of avx512, avx2, portable", env));
}

std::atomic<int>& isa_slot() {
  static std::atomic<int> slot{static_cast<int>(initial_isa())};
  return slot;
}

}  // namespace

GemmIsa gemm_isa() { return static_cast<GemmIsa>(isa_slot().load(std::memory_order_relaxed)); }

void set_gemm_isa(GemmIsa isa) {
  if (!gemm_isa_supported(isa))
    throw_user_error(fmt::format("this CPU cannot run the {} GEMM kernels", gemm_isa_name(isa)));
  isa_slot().store(static_cast<int>(isa), std::memory_order_relaxed);
}

const GemmBackend& gemm_backend(GemmIsa isa) {
  switch (isa) {
    case GemmIsa::kAvx512: return gemm_backend_avx512();
    case GemmIsa::kAvx2: return gemm_backend_avx2();
    default: return gemm_backend_portable();
  }
}

// ---- Prepacking -----------------------------------------------------------------------------

PackedB pack_b(const MatView& b, int64_t K, int64_t N, bool f64) {
  const GemmBackend& be = gemm_backend(gemm_isa());
  const GemmBlocking& blk = f64 ? be.f64 : be.f32;
  const size_t bytes = static_cast<size_t>(std::max<int64_t>(packed_b_elems(blk, K, N), 1)) *
                       (f64 ? sizeof(double) : sizeof(float));
  void* mem = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!mem) throw_user_error(fmt::format("cpu GEMM: cannot allocate {} bytes for packed weights", bytes));
  PackedB p;
  p.data_ = std::shared_ptr<void>(mem, std::free);
  p.k_ = K, p.n_ = N, p.isa_ = be.isa, p.f64_ = f64;
  auto pack = [&](int64_t j0, int64_t j1) {
    if (f64)
      be.pack_b_f64(b, K, N, j0, j1, static_cast<double*>(mem));
    else
      be.pack_b_f32(b, K, N, j0, j1, static_cast<float*>(mem));
  };
  // Column ranges over the threads once B is large: a product that packs a weight on every
  // call (int4 and GGUF weights decoded per call, decode-time rounds) waited on one thread
  // packing while the others idled.
  constexpr int64_t kParallelElems = int64_t{1} << 17;
  const int64_t cols = 2 * blk.nr;  // 128 columns of f32 on AVX-512
  if (K * N < kParallelElems || N <= cols) {
    pack(0, N);
    return p;
  }
  tbb::parallel_for(int64_t{0}, (N + cols - 1) / cols,
                    [&](int64_t c) { pack(c * cols, std::min(N, (c + 1) * cols)); });
  return p;
}

// ---- Epilogue builders ----------------------------------------------------------------------

namespace {
int push_step(GemmEpilogue& e, EpStep s) {
  if (e.num_steps >= GemmEpilogue::kMaxSteps) throw_internal_error("cpu GEMM: epilogue too long");
  e.steps[e.num_steps] = s;
  return e.num_steps++;
}
uint8_t reg(int r) { return static_cast<uint8_t>(r); }
}  // namespace

int GemmEpilogue::acc() { return push_step(*this, EpStep{EpOp::kAcc}); }
int GemmEpilogue::constant(float v) { return push_step(*this, EpStep{EpOp::kConst, 0, 0, v}); }
int GemmEpilogue::load(const float* data, int64_t rs, int64_t cs) {
  if (num_loads >= kMaxLoads) throw_internal_error("cpu GEMM: too many epilogue operands");
  loads[num_loads] = EpLoad{data, rs, cs};
  return push_step(*this, EpStep{EpOp::kLoad, 0, 0, 0, static_cast<uint8_t>(num_loads++)});
}
int GemmEpilogue::unary(EpOp op, int a) { return push_step(*this, EpStep{op, reg(a)}); }
int GemmEpilogue::binary(EpOp op, int a, int b) { return push_step(*this, EpStep{op, reg(a), reg(b)}); }

void GemmEpilogue::simplify() {
  // A value computed twice is computed once: a loop kernel decoded into a program reads its
  // input once per use (GELU's x * 0.5 and x / sqrt 2 are two kAcc steps), which would hide the
  // GELU below and cost a pass each. Steps equal in op, operands (already merged), constant
  // bits and load read the same value.
  for (int s = 0; s < num_steps; ++s) {
    EpStep& st = steps[s];
    const bool unary_or_binary =
        st.op != EpOp::kAcc && st.op != EpOp::kConst && st.op != EpOp::kLoad;
    for (int t = 0; t < s; ++t) {
      const EpStep& u = steps[t];
      const bool same = u.op == st.op &&
                        (st.op == EpOp::kConst
                             ? std::bit_cast<uint32_t>(u.value) == std::bit_cast<uint32_t>(st.value)
                         : st.op == EpOp::kLoad ? u.load == st.load
                         : !unary_or_binary     ? true
                                            : u.a == st.a && (st.op < EpOp::kAdd || u.b == st.b));
      if (!same) continue;
      // Later steps read t instead of s; s itself becomes dead and is dropped below.
      for (int r = s + 1; r < num_steps; ++r) {
        EpStep& later = steps[r];
        if (later.op == EpOp::kAcc || later.op == EpOp::kConst || later.op == EpOp::kLoad) continue;
        if (later.a == s) later.a = reg(t);
        if (later.op >= EpOp::kAdd && later.b == s) later.b = reg(t);
      }
      break;
    }
  }
  auto is_const = [&](int r, float v) {
    return steps[r].op == EpOp::kConst && steps[r].value == v;
  };
  // The operand of a binary step other than the constant v, or -1.
  auto other_than = [&](const EpStep& s, float v) {
    return is_const(s.b, v) ? int{s.a} : is_const(s.a, v) ? int{s.b} : -1;
  };
  auto is_op = [&](int r, EpOp op) { return r >= 0 && steps[r].op == op; };
  // x when r is mul(x, c) (either order), else -1.
  auto scaled = [&](int r, float c) { return is_op(r, EpOp::kMul) ? other_than(steps[r], c) : -1; };
  // x when r is add(erf(mul(x, 1 / sqrt 2)), 1), else -1.
  auto one_plus_erf = [&](int r) {
    if (!is_op(r, EpOp::kAdd)) return -1;
    const int e = other_than(steps[r], 1.0f);
    return is_op(e, EpOp::kErf) ? scaled(steps[e].a, 0.70710678118654752f) : -1;
  };
  for (int s = 0; s < num_steps; ++s) {
    EpStep& st = steps[s];
    if (st.op != EpOp::kMul) continue;
    for (const auto& [h, t] : {std::pair<int, int>{st.a, st.b}, {st.b, st.a}}) {
      const int x = scaled(h, 0.5f);
      if (x >= 0 && one_plus_erf(t) == x) {
        st = EpStep{EpOp::kGeluErf, reg(x)};
        break;
      }
    }
  }
  // Keep what the last step reads, renumbered in order.
  std::array<bool, kMaxSteps> live{};
  if (num_steps == 0) return;
  live[num_steps - 1] = true;
  for (int s = num_steps - 1; s >= 0; --s) {
    if (!live[s]) continue;
    const EpOp op = steps[s].op;
    if (op == EpOp::kAcc || op == EpOp::kConst || op == EpOp::kLoad) continue;
    live[steps[s].a] = true;
    if (op >= EpOp::kAdd) live[steps[s].b] = true;
  }
  std::array<uint8_t, kMaxSteps> to{};
  int n = 0;
  for (int s = 0; s < num_steps; ++s) {
    if (!live[s]) continue;
    EpStep st = steps[s];
    if (st.op != EpOp::kAcc && st.op != EpOp::kConst && st.op != EpOp::kLoad) {
      st.a = to[st.a];
      if (st.op >= EpOp::kAdd) st.b = to[st.b];
    }
    to[s] = reg(n);
    steps[n++] = st;
  }
  num_steps = n;
}

const float* GemmEpilogue::column_scale() const {
  if (num_steps != 3 || steps[2].op != EpOp::kMul) return nullptr;
  const EpStep &a = steps[steps[2].a], &b = steps[steps[2].b];
  const EpStep* v = a.op == EpOp::kAcc ? &b : b.op == EpOp::kAcc ? &a : nullptr;
  if (!v || v->op != EpOp::kLoad) return nullptr;
  const EpLoad& l = loads[v->load];
  return l.rs == 0 && l.cs == 1 ? l.data : nullptr;
}

bool GemmEpilogue::reads_within(int64_t M, int64_t N, const float* lo, const float* hi) const {
  if (M <= 0 || N <= 0) return false;
  for (int i = 0; i < num_loads; ++i) {
    const EpLoad& l = loads[i];
    // The extreme elements of an affine index over the box: each stride's sign picks the corner.
    const int64_t r = (M - 1) * l.rs, c = (N - 1) * l.cs;
    const float* first = l.data + std::min<int64_t>(r, 0) + std::min<int64_t>(c, 0);
    const float* last = l.data + std::max<int64_t>(r, 0) + std::max<int64_t>(c, 0);
    if (first < hi && last >= lo) return true;
  }
  return false;
}

GemmEpilogue GemmEpilogue::bias_gelu_residual(const float* bias, Gelu gelu, const float* residual,
                                              int64_t ldr) {
  GemmEpilogue e;
  int x = e.acc();
  if (bias) x = e.binary(EpOp::kAdd, x, e.load(bias, 0, 1));
  if (gelu != Gelu::kNone) {
    // The IR's GELU (core/src/ops/ops_hir_nn.cpp): 0.5 x (1 + erf(x / sqrt 2)) or
    // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
    int half_x = e.binary(EpOp::kMul, x, e.constant(0.5f));
    int inner;
    if (gelu == Gelu::kErf) {
      inner = e.unary(EpOp::kErf, e.binary(EpOp::kMul, x, e.constant(0.70710678118654752f)));
    } else {
      int x3 = e.binary(EpOp::kMul, e.binary(EpOp::kMul, x, x), x);
      int u = e.binary(EpOp::kAdd, x, e.binary(EpOp::kMul, x3, e.constant(0.044715f)));
      inner = e.unary(EpOp::kTanh, e.binary(EpOp::kMul, u, e.constant(0.79788456080286536f)));
    }
    x = e.binary(EpOp::kMul, half_x, e.binary(EpOp::kAdd, inner, e.constant(1.0f)));
  }
  if (residual) x = e.binary(EpOp::kAdd, x, e.load(residual, ldr, 1));
  if (x == 0) e.num_steps = 0;  // only the accumulator: no epilogue
  e.simplify();
  return e;
}

void apply_epilogue(const GemmEpilogue& ep, float* c, int64_t ldc, int64_t i0, int64_t j0,
                    int64_t m, int64_t n) {
  if (ep.empty()) return;
  gemm_backend(gemm_isa()).epilogue(ep, c, ldc, i0, j0, m, n, c, ldc);
}

void apply_epilogue(const GemmEpilogue& ep, const float* c, int64_t ldc, int64_t i0, int64_t j0,
                    int64_t m, int64_t n, float* out, int64_t ldo) {
  if (ep.empty()) {
    for (int64_t r = 0; r < m; ++r) std::copy_n(c + r * ldc, n, out + r * ldo);
    return;
  }
  gemm_backend(gemm_isa()).epilogue(ep, c, ldc, i0, j0, m, n, out, ldo);
}

// ---- Products -------------------------------------------------------------------------------

namespace {

const GemmBackend& backend_for(const GemmArgs& g) {
  if (!g.packed) return gemm_backend(gemm_isa());
  if (g.packed->k() != g.K || g.packed->n() != g.N || g.packed->is_f64() != g.f64)
    throw_internal_error("cpu GEMM: packed B does not match the product");
  return gemm_backend(g.packed->isa());
}

}  // namespace

void gemm_block(const GemmArgs& g, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  const GemmBackend& be = backend_for(g);
  if (g.f64) be.block_f64(g, m0, m1, n0, n1);
  else be.block_f32(g, m0, m1, n0, n1);
}

void gemm_rows(const GemmArgs& g, int64_t m0, int64_t m1) { gemm_block(g, m0, m1, 0, g.N); }

namespace {

// `ep` run on acc + parts[0] + ... (each [M, N] with row stride ld): the epilogue of a product
// whose K was split, applied once the partial sums are in. False when the steps do not fit.
bool epilogue_after_sum(const GemmEpilogue* ep, const float* const* parts, int num_parts,
                        int64_t ld, GemmEpilogue& out) {
  const int own_steps = ep ? ep->num_steps : 1, own_loads = ep ? ep->num_loads : 0;
  if (1 + 2 * num_parts + own_steps > GemmEpilogue::kMaxSteps ||
      num_parts + own_loads > GemmEpilogue::kMaxLoads)
    return false;
  out = GemmEpilogue{};
  int sum = out.acc();
  for (int p = 0; p < num_parts; ++p) sum = out.binary(EpOp::kAdd, sum, out.load(parts[p], ld, 1));
  if (!ep) return true;
  std::array<uint8_t, GemmEpilogue::kMaxSteps> to{};
  for (int s = 0; s < ep->num_steps; ++s) {
    EpStep st = ep->steps[s];
    if (st.op == EpOp::kAcc) {
      to[s] = static_cast<uint8_t>(sum);
      continue;
    }
    if (st.op == EpOp::kLoad) {
      const EpLoad& l = ep->loads[st.load];
      to[s] = static_cast<uint8_t>(out.load(l.data, l.rs, l.cs));
      continue;
    }
    st.a = to[st.a];
    if (st.op >= EpOp::kAdd) st.b = to[st.b];
    out.steps[out.num_steps] = st;
    to[s] = static_cast<uint8_t>(out.num_steps++);
  }
  // The program's value is its last step: the original program's last step, wherever it went.
  return to[ep->num_steps - 1] == out.num_steps - 1;
}

// [begin, end) of share s of n items cut into `shares` near-equal slices.
std::pair<int64_t, int64_t> slice(int64_t n, int shares, int s) {
  return {n * s / shares, n * (s + 1) / shares};
}

const char* element_at(const MatView& v, int64_t i, int64_t j) {
  return static_cast<const char*>(v.data) +
         (i * v.rs + j * v.cs) * static_cast<int64_t>(dtype_size(v.dtype));
}

// A product whose B changes between calls (a weight in a training step) and whose K is long
// beside M splits K over the threads: share s multiplies the s-th K slices of A and B, so each
// core streams only its slice of B. Split by rows of C, every core read all of B, which the
// previous step's update had just written, so it came from the other core's cache or from
// memory on every call (the 784-128-10 step's x W1, [128, 784] x [784, 128]: 108 -> 93 us on two
// cores, bench/RESULTS.md). The partial sums cost a pass over [M, N] each, cheap while M is
// small beside K; their sum runs in front of the epilogue, in the same pass.
bool k_split_pays(const GemmArgs& g, int threads) {
  constexpr int64_t kMinSlice = 256;  // a KC block per share at least
  return threads > 1 && !g.packed && !g.f64 && !g.narrow_out && g.K >= threads * kMinSlice &&
         g.K > 4 * g.M;
}

bool gemm_k_split(const GemmArgs& g, int shares) {
  const int64_t elems = g.M * g.N;
  // Per call, not per thread: a thread waiting for its shares may run another product's.
  const std::unique_ptr<float[]> scratch(new float[elems * (shares - 1)]);
  float* const partials = scratch.get();
  std::vector<const float*> parts(shares - 1);
  for (int p = 0; p + 1 < shares; ++p) parts[p] = partials + p * elems;
  GemmEpilogue after;
  if (!epilogue_after_sum(g.epilogue, parts.data(), shares - 1, g.N, after)) return false;
  float* const c = static_cast<float*>(g.c);
  tbb::parallel_for(
      0, shares,
      [&](int s) {
        const auto [k0, k1] = slice(g.K, shares, s);
        GemmArgs p = g;
        p.K = k1 - k0;
        p.a.data = element_at(g.a, 0, k0);
        p.b.data = element_at(g.b, k0, 0);
        p.epilogue = nullptr;
        if (s > 0) p.c = partials + (s - 1) * elems, p.ldc = g.N;
        gemm_block(p, 0, g.M, 0, g.N);
      },
      tbb::simple_partitioner());
  tbb::parallel_for(
      0, shares,
      [&](int s) {
        const auto [i0, i1] = slice(g.M, shares, s);
        if (i1 > i0) apply_epilogue(after, c + i0 * g.ldc, g.ldc, i0, 0, i1 - i0, g.N);
      },
      tbb::simple_partitioner());
  return true;
}

}  // namespace

// The split of C into a tm x tn grid of blocks (whole micro-tiles each) that minimises a cost
// model: rounds of blocks over the threads times a block's multiply-adds plus its packing (A rows
// are packed once per column block, B columns once per row block).
void gemm(const GemmArgs& g) {
  if (g.M <= 0 || g.N <= 0) return;
  const GemmBackend& be = backend_for(g);
  const GemmBlocking& blk = g.f64 ? be.f64 : be.f32;
  const int64_t threads = tbb::this_task_arena::max_concurrency();
  const int64_t K = std::max<int64_t>(g.K, 1);
  const int64_t mt = (g.M + blk.mr - 1) / blk.mr, nt = (g.N + blk.nr - 1) / blk.nr;
  // Below 2^18 multiply-adds a product runs on the calling thread: split, it waits for a worker
  // that has often gone to sleep during the serial kernels before it (a training step's 10-class
  // head: its three products at 128 x 10 x 128 made the 784-128-10 step 4% slower split, though
  // back to back, with the worker awake, the split ran them 1.3x faster).
  constexpr int64_t kSerialBelow = int64_t{1} << 18;
  if (threads <= 1 || g.M * g.N * K < kSerialBelow || mt * nt == 1) {
    gemm_block(g, 0, g.M, 0, g.N);
    return;
  }
  if (k_split_pays(g, static_cast<int>(threads)) && gemm_k_split(g, static_cast<int>(threads)))
    return;
  constexpr double kPackCost = 8.0;  // packing one element vs one multiply-add per vector lane
  const int64_t lanes = blk.nr;      // multiply-adds of a k step per column of a micro-tile
  int64_t best_tm = 1, best_tn = 1;
  double best = 1e300;
  for (int64_t tm = 1; tm <= std::min<int64_t>(mt, 8 * threads); ++tm) {
    for (int64_t tn = 1; tn <= std::min<int64_t>(nt, 8 * threads); ++tn) {
      const int64_t rows = (mt + tm - 1) / tm * blk.mr, cols = (nt + tn - 1) / tn * blk.nr;
      const int64_t rounds = (tm * tn + threads - 1) / threads;
      // B counts even when prepacked: a block's B columns are then read from memory instead of
      // packed into a cache-resident buffer, which costs about as much.
      double pack = kPackCost * (rows * K + cols * K);
      double cost = rounds * (double(rows) * cols * K / lanes + pack) + 2000.0 * tm * tn / threads;
      if (cost < best) best = cost, best_tm = tm, best_tn = tn;
    }
  }
  const int64_t row_step = (mt + best_tm - 1) / best_tm * blk.mr;
  const int64_t col_step = (nt + best_tn - 1) / best_tn * blk.nr;
  const int64_t blocks_m = (g.M + row_step - 1) / row_step, blocks_n = (g.N + col_step - 1) / col_step;
  auto block = [&](int64_t t) {
    const int64_t m0 = t / blocks_n * row_step, n0 = t % blocks_n * col_step;
    gemm_block(g, m0, std::min(g.M, m0 + row_step), n0, std::min(g.N, n0 + col_step));
  };
  tbb::parallel_for(
      tbb::blocked_range<int64_t>(0, blocks_m * blocks_n, 1),
      [&](const tbb::blocked_range<int64_t>& r) {
        for (int64_t t = r.begin(); t < r.end(); ++t) block(t);
      },
      tbb::simple_partitioner());
}

// ---- Baseline for integer GEMMs -------------------------------------------------------------

template <typename T>
void gemm_reference(int64_t batch, int64_t M, int64_t N, int64_t K, const T* A, const T* B, T* C) {
  if (M == 0 || N == 0) return;
  constexpr int64_t kBlockN = 512, kBlockK = 256;
  int64_t rows = batch * M;
  int64_t grain = std::max<int64_t>(1, (1 << 16) / std::max<int64_t>(1, N * K));
  tbb::parallel_for(tbb::blocked_range2d<int64_t>(0, rows, grain, 0, N, kBlockN),
                    [&](const tbb::blocked_range2d<int64_t>& r) {
                      for (int64_t row = r.rows().begin(); row < r.rows().end(); ++row) {
                        int64_t b = row / M, m = row % M;
                        const T* a = A + (b * M + m) * K;
                        const T* bb = B + b * K * N;
                        T* c = C + (b * M + m) * N;
                        int64_t n0 = r.cols().begin(), n1 = r.cols().end();
                        std::fill(c + n0, c + n1, T(0));
                        for (int64_t k0 = 0; k0 < K; k0 += kBlockK) {
                          int64_t k1 = std::min(K, k0 + kBlockK);
                          for (int64_t k = k0; k < k1; ++k) {
                            T av = a[k];
                            const T* brow = bb + k * N;
                            for (int64_t n = n0; n < n1; ++n) c[n] += av * brow[n];
                          }
                        }
                      }
                    });
}

template void gemm_reference<float>(int64_t, int64_t, int64_t, int64_t, const float*, const float*, float*);
template void gemm_reference<double>(int64_t, int64_t, int64_t, int64_t, const double*, const double*, double*);
template void gemm_reference<int64_t>(int64_t, int64_t, int64_t, int64_t, const int64_t*, const int64_t*, int64_t*);

}  // namespace rlx::cpu
