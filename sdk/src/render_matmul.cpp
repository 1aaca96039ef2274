// Matrix-product kernels for the dialects with cooperative groups (render.h: render_matmul),
// written once from the dialect table: OpenCL C, GLSL, HLSL and WGSL get the same kernel.
//
// Tiled: each group of 64 invocations computes a TM x TN tile of C. The invocations form an 8 x 8
// grid and each accumulates a (TM/8) x (TN/8) block in registers: rows r + 8i and columns c + 8j,
// so in one step a warp reads few distinct A words (broadcast) and eight consecutive B words
// from shared memory. K advances in slices of kDepth: the group copies the A and B slices into
// shared arrays (global reads ordered along whichever of the operand's two dims is contiguous,
// so they coalesce for both A = x and B = W^T), waits, multiplies, waits. Each invocation reads
// its share of the next slice into registers before multiplying the current one, so the reads'
// latency hides behind the products (on an H200 this took 16% off MiniLM's products; 64 x 128
// tiles, tried on top of it, did not help). The arrays' rows are padded by one element so that
// a slice copied along k does not land in one bank.
//
// Why these shapes: 64 invocations is every host's group size (render.h). An 8 x 8 register
// block (64 x 64 tile) does 64 multiply-adds per 16 shared reads, which is what keeps an NVIDIA
// SM's f32 pipes busy; a 16-deep slice keeps both arrays at 8.3 KB, under WebGPU's 16 KB floor
// for workgroup storage. Large tiles leave SMs idle on the small products of an encoder (MiniLM:
// 128 x 384), so smaller tiles (32 x 64, 32 x 32) are used until the product has enough groups
// to give each SM of a large GPU (132 on an H200) two; a short M (<= 32) keeps 32-row tiles.
//
// GEMV (m == 1, B contiguous along k, the decode step of a Linear layer): a group computes
// kStrip outputs; its invocations split k (consecutive invocations read consecutive elements),
// then sum their partial results in a shared tree (in a dialect with SIMD-group reductions, in
// registers within each SIMD group, then one value per SIMD group: one barrier, not seven).
// Nothing is reused at m == 1, so this is about reading B once, coalesced, with all SMs busy.
// With a norm prologue (MatmulShape::a_norm: a decode step's input norm feeding q|k|v) the group
// first sums A's row as render_norm's group does, element for element and in the same order, so
// each normalised element, rounded to the norm's dtype, has the bits the norm kernel would have
// stored; the norm's launch and its round trip through memory are gone.
//
// Products accumulate with the dialect's fma where it has one (every GPU has the instruction;
// the cpu's GEMM fuses too), in f32, and round once at the store.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <string_view>
#include <utility>

#include "render_parts.h"
#include "rlx/core/error.h"
#include "rlx/sdk/render.h"

namespace rlx::sdk {

namespace {

constexpr int64_t kGroup = 64;  // invocations per group
constexpr int64_t kGrid = 8;    // the tiled kernel's invocations form a kGrid x kGrid grid
constexpr int64_t kDepth = 16;  // the K slice staged in shared memory
constexpr int64_t kStrip = 4;   // outputs per GEMV group
// Enough groups to give each SM of a large GPU (132 on an H200) two.
constexpr int64_t kFillGroups = 264;

struct Tile {
  int64_t tm, tn;
};
// Largest first. tm and tn are multiples of kGrid and divide kGroup, as kDepth does: a slice's
// copy splits the group's 64 invocations evenly over either of its dims. A product with
// m <= 32 never takes 64-row tiles (half of each would be empty).
constexpr Tile kTiles[] = {{64, 64}, {32, 64}, {32, 32}};

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// `x * stride` with the trivial cases folded, for index text.
std::string scaled(const std::string& x, int64_t stride) {
  if (stride == 0) return "";
  return stride == 1 ? x : fmt::format("{} * {}", x, stride);
}

// `x + c`, or x alone when c is 0.
std::string plus(const std::string& x, int64_t c) {
  return c == 0 ? x : fmt::format("{} + {}", x, c);
}

// Terms joined by " + ", empty ones left out ("0" when all are).
std::string sum(std::initializer_list<std::string> terms) {
  std::string s;
  for (const std::string& t : terms)
    if (!t.empty()) s += (s.empty() ? "" : " + ") + t;
  return s.empty() ? "0" : s;
}

// Conditions joined by " && " ("" when none is needed).
std::string all_of(std::initializer_list<std::string> conditions) {
  std::string s;
  for (const std::string& c : conditions)
    if (!c.empty()) s += (s.empty() ? "" : " && ") + c;
  return s;
}

class MatmulWriter : detail::KernelText {
 public:
  MatmulWriter(const MatmulShape& s, const Dialect& d)
      : KernelText(d, fmt::format("matrix product {}", s.name)), s_(s) {
    if (d_.shared_array.empty() || d_.barrier.empty() || d_.group_index.empty() ||
        d_.local_index.empty())
      fail("the dialect has no cooperative (workgroup-shared) kernels");
    if (d_.buffer_params != BufferParams::kOnePerBuffer)
      fail("matrix-product kernels take one parameter per buffer");
    if (s_.batch <= 0 || s_.m <= 0 || s_.n <= 0 || s_.k <= 0)
      fail(fmt::format("the product [{}, {}, {}] x [{}, {}, {}] is empty", s_.batch, s_.m, s_.k,
                       s_.batch, s_.k, s_.n));
    for (DType t : {s_.a_dtype, s_.b_dtype, s_.c_dtype})
      if (!detail::single_float(t)) fail(fmt::format("{} is not f16, bf16 or f32", dtype_name(t)));
    f32_ = entry(d_.compute_type, DType::kF32, "compute type");
    int_ = entry(d_.compute_type, DType::kI32, "compute type");
    if (s_.a_norm && s_.a_loop) fail("A is computed by a kernel or normalised, not both");
    if (s_.a_loop &&
        (s_.m != 1 || s_.b_k != 1 || s_.a_k != 1 || (s_.batch > 1 && s_.a_batch != s_.k)))
      fail("a kernel computing A needs single rows of A contiguous along k (the GEMV)");
    if (const auto& nm = s_.a_norm) {
      if (s_.m != 1 || s_.b_k != 1 || s_.a_k != 1)
        fail("a norm before the product needs one row of A contiguous along k (the GEMV)");
      if (nm->rms && nm->bias_buffer >= 0) fail("RMSNorm takes no bias");
      for (DType t : {nm->scale_dtype, nm->bias_dtype, nm->out_dtype})
        if (!detail::single_float(t))
          fail(fmt::format("{} is not f16, bf16 or f32", dtype_name(t)));
    }
  }

  MatmulKernel tiled() {
    Tile t = kTiles[std::size(kTiles) - 1];
    for (const Tile& c : kTiles)
      if (groups_of(c) >= kFillGroups && (c.tm <= 32 || s_.m > 32)) {
        t = c;
        break;
      }
    const int64_t tiles_m = ceil_div(s_.m, t.tm), tiles_n = ceil_div(s_.n, t.tn);
    const int64_t per_batch = tiles_m * tiles_n, groups = s_.batch * per_batch;
    const int64_t rm = t.tm / kGrid, rn = t.tn / kGrid;
    const int64_t lda = t.tm + 1, ldb = t.tn + 1;  // padded rows of the shared slices
    const std::string variant = fmt::format("tiled {}x{}", t.tm, t.tn);
    open(variant, {{"rlx_sa", kDepth * lda}, {"rlx_sb", kDepth * ldb}});
    ids(groups);
    let("bt", fmt::format("g / {}", per_batch));
    let("m0", fmt::format("((g % {}) / {}) * {}", per_batch, tiles_n, t.tm));
    let("n0", fmt::format("(g % {}) * {}", tiles_n, t.tn));
    small("tr", fmt::format("li / {}", kGrid));
    small("tc", fmt::format("li % {}", kGrid));
    let("abase", sum({scaled("bt", s_.a_batch)}));
    let("bbase", sum({scaled("bt", s_.b_batch)}));
    for (int64_t i = 0; i < rm; ++i)
      for (int64_t j = 0; j < rn; ++j) accumulator(fmt::format("c{}_{}", i, j));
    const Operand a{.p = "a",
                    .array = "rlx_sa",
                    .ld = lda,
                    .rows = t.tm,
                    .limit = s_.m,
                    .row_stride = s_.a_m,
                    .k_stride = s_.a_k,
                    .origin = "m0",
                    .base = "abase",
                    .position = s_.a_buffer,
                    .dt = s_.a_dtype};
    const Operand b{.p = "b",
                    .array = "rlx_sb",
                    .ld = ldb,
                    .rows = t.tn,
                    .limit = s_.n,
                    .row_stride = s_.b_n,
                    .k_stride = s_.b_k,
                    .origin = "n0",
                    .base = "bbase",
                    .position = s_.b_buffer,
                    .dt = s_.b_dtype};
    const int64_t slices = ceil_div(s_.k, kDepth);
    for (const Operand* o : {&a, &b}) {
      slice_layout(*o);
      fetch(*o, "0");
    }
    loop("t", slices);
    // A[m, k] into rlx_sa[k * lda + m], B[k, n] into rlx_sb[k * ldb + n].
    deposit(a);
    deposit(b);
    line(d_.barrier);
    // The next slice's reads are issued before this slice's products, which hide their latency
    // (a group of 64 has only two warps to switch between while it waits).
    if (slices > 1) {
      if_block(fmt::format("t + 1 < {}", slices));
      let("kn", fmt::format("(t + 1) * {}", kDepth));
      fetch(a, "kn");
      fetch(b, "kn");
      close();
    }
    // The next slice's copy waits at the barrier below until every invocation is done here.
    loop("kk", kDepth, int_);
    for (int64_t i = 0; i < rm; ++i)
      declare(f32_, fmt::format("ra{}", i),
              fmt::format("rlx_sa[kk * {} + {}]", lda, plus("tr", kGrid * i)));
    for (int64_t j = 0; j < rn; ++j)
      declare(f32_, fmt::format("rb{}", j),
              fmt::format("rlx_sb[kk * {} + {}]", ldb, plus("tc", kGrid * j)));
    for (int64_t i = 0; i < rm; ++i)
      for (int64_t j = 0; j < rn; ++j)
        accumulate(fmt::format("c{}_{}", i, j), fmt::format("ra{}", i), fmt::format("rb{}", j));
    close();
    line(d_.barrier);
    close();
    for (int64_t i = 0; i < rm; ++i) let(fmt::format("cm{}", i), "m0 + " + plus("tr", kGrid * i));
    for (int64_t j = 0; j < rn; ++j) let(fmt::format("cn{}", j), "n0 + " + plus("tc", kGrid * j));
    for (int64_t i = 0; i < rm; ++i)
      for (int64_t j = 0; j < rn; ++j) {
        std::string m = fmt::format("cm{}", i), n = fmt::format("cn{}", j);
        guarded_store(
            all_of({fmt::format("gi < {}", groups), below(m, s_.m, t.tm), below(n, s_.n, t.tn)}),
            fmt::format("(bt * {} + {}) * {} + {}", s_.m, m, s_.n, n), fmt::format("c{}_{}", i, j));
      }
    return finish(groups, variant);
  }

  MatmulKernel gemv() {
    const int64_t strips = ceil_div(s_.n, kStrip), groups = s_.batch * strips;
    open("gemv", {{"rlx_red", kStrip * kGroup}}, has_simd());
    ids(groups);
    let("bt", fmt::format("g / {}", strips));
    let("n0", fmt::format("(g % {}) * {}", strips, kStrip));
    let("abase", sum({scaled("bt", s_.a_batch)}));
    let("bbase", sum({scaled("bt", s_.b_batch)}));
    const std::string k_ok = s_.k % kGroup == 0 ? "" : fmt::format("k < {}", s_.k);
    if (s_.a_norm) row_statistics(k_ok);
    for (int64_t j = 0; j < kStrip; ++j) accumulator(fmt::format("c{}", j));
    loop("t", ceil_div(s_.k, kGroup));
    let("k", fmt::format("t * {} + li", kGroup));
    if (s_.a_loop) {
      // A's element computed here, only inside the row (its kernel's reads are unguarded).
      declare_mutable(f32_, "av", zero());
      if (!k_ok.empty()) if_block(k_ok);
      computed(*s_.a_loop, sum({"abase", "k"}), "ap");
      line("av = ap;");
      if (!k_ok.empty()) close();
    } else {
      declare(f32_, "av",
              guarded_load(k_ok, s_.a_buffer, s_.a_dtype, sum({"abase", scaled("k", s_.a_k)})));
    }
    if (s_.a_norm) normalise("av", k_ok);
    const std::string a_value = s_.a_norm ? "avn" : "av";
    for (int64_t j = 0; j < kStrip; ++j) {
      std::string n = plus("n0", j);
      std::string ok = all_of({k_ok, s_.n % kStrip == 0 ? "" : fmt::format("{} < {}", n, s_.n)});
      std::string bv = fmt::format("bv{}", j);
      declare(f32_, bv,
              guarded_load(ok, s_.b_buffer, s_.b_dtype,
                           sum({"bbase", scaled("k", s_.b_k), scaled("(" + n + ")", s_.b_n)})));
      accumulate(fmt::format("c{}", j), a_value, bv);
    }
    close();
    if (has_simd()) {
      // Each SIMD group sums its lanes' parts in registers and its lane 0 writes one slot per
      // output (at most 64 SIMD groups); one barrier, then the strip's invocations add the slots.
      for (int64_t j = 0; j < kStrip; ++j)
        declare(f32_, fmt::format("s{}", j), simd_sum(fmt::format("c{}", j)));
      if_block(fmt::format("{} == 0", d_.simd_lane));
      for (int64_t j = 0; j < kStrip; ++j)
        line(fmt::format("rlx_red[{} + {}] = s{};", j * kGroup, d_.simd_group, j));
      close();
      line(d_.barrier);
      declare_mutable(f32_, "total", zero());
      if_block(fmt::format("li < {}", kStrip));
      loop_to("s", cast(d_.index_type, d_.simd_groups));
      line(fmt::format("total = total + rlx_red[li * {} + s];", kGroup));
      close();
      close();
      guarded_store(all_of({fmt::format("gi < {}", groups), fmt::format("li < {}", kStrip),
                            s_.n % kStrip == 0 ? "" : fmt::format("n0 + li < {}", s_.n)}),
                    fmt::format("bt * {} + n0 + li", s_.n), "total");
      return finish(groups, "gemv");
    }
    for (int64_t j = 0; j < kStrip; ++j)
      line(fmt::format("rlx_red[{} + li] = c{};", j * kGroup, j));
    line(d_.barrier);
    // A tree over the group; the barrier stays outside the branch (uniform control flow).
    for (int64_t half = kGroup / 2; half >= 1; half /= 2) {
      line(fmt::format("if (li < {}) {{", half));
      ++indent_;
      for (int64_t j = 0; j < kStrip; ++j)
        line(fmt::format("rlx_red[{0} + li] = rlx_red[{0} + li] + rlx_red[{0} + li + {1}];",
                         j * kGroup, half));
      --indent_;
      line("}");
      line(d_.barrier);
    }
    guarded_store(all_of({fmt::format("gi < {}", groups), fmt::format("li < {}", kStrip),
                          s_.n % kStrip == 0 ? "" : fmt::format("n0 + li < {}", s_.n)}),
                  fmt::format("bt * {} + n0 + li", s_.n), fmt::format("rlx_red[li * {}]", kGroup));
    return finish(groups, "gemv");
  }

 private:
  const MatmulShape& s_;
  std::string f32_, int_;

  // The norm's statistics of A's row, as render_norm computes them (each invocation sums the
  // elements li, li + 64, ... in order, the group adds the parts the same way), so the product
  // sees the bits the norm would have stored: `mean` (LayerNorm) and `inv`. The reductions take
  // the start of rlx_red; a barrier after them lets the product's own sums reuse it.
  void row_statistics(const std::string& k_ok) {
    const MatmulNormPrologue& nm = *s_.a_norm;
    const std::string n = f32_literal(static_cast<double>(s_.k));
    auto pass = [&](const std::string& part, auto term) {
      declare_mutable(f32_, part, zero());
      loop("t", ceil_div(s_.k, kGroup));
      let("k", fmt::format("t * {} + li", kGroup));
      declare(f32_, "x", guarded_load(k_ok, s_.a_buffer, s_.a_dtype, sum({"abase", "k"})));
      const std::string add = fmt::format("{} + {}", part, term("x"));
      line(fmt::format("{} = {};", part, k_ok.empty() ? add : choose(k_ok, add, part)));
      close();
    };
    if (nm.rms) {
      pass("part", [](const std::string& x) { return x + " * " + x; });
      group_sum("part", "row_total", 0, "rlx_red", kGroup, int_);
    } else {
      pass("part", [](const std::string& x) { return x; });
      group_sum("part", "row_total", 0, "rlx_red", kGroup, int_);
      declare(f32_, "mean", fmt::format("row_total / {}", n));
      pass("dev",
           [](const std::string& x) { return fmt::format("({0} - mean) * ({0} - mean)", x); });
      group_sum("dev", "row_squares", kGroup, "rlx_red", kGroup, int_);
    }
    declare(f32_, "inv",
            fmt::format("{} / {}({} / {} + {})", f32_literal(1.0), math("sqrt"),
                        nm.rms ? "row_total" : "row_squares", n, f32_literal(nm.epsilon)));
    if (has_simd()) line(d_.barrier);  // the sums' slots are read above; the product rewrites them
  }

  // `av` normalised as render_norm's store computes it, then rounded to the norm's dtype.
  void normalise(const std::string& av, const std::string& k_ok) {
    const MatmulNormPrologue& nm = *s_.a_norm;
    std::string y = nm.rms ? fmt::format("{} * inv", av) : fmt::format("({} - mean) * inv", av);
    if (nm.scale_buffer >= 0)
      y = fmt::format("({}) * {}", y, guarded_load(k_ok, nm.scale_buffer, nm.scale_dtype, "k"));
    if (nm.bias_buffer >= 0)
      y = fmt::format("{} + {}", y, guarded_load(k_ok, nm.bias_buffer, nm.bias_dtype, "k"));
    if (nm.out_dtype != DType::kF32)
      y = fmt::format(
          fmt::runtime(entry(d_.load, nm.out_dtype, "load conversion")),
          fmt::arg("x", fmt::format(fmt::runtime(entry(d_.store, nm.out_dtype, "store conversion")),
                                    fmt::arg("x", y))));
    declare(f32_, av + "n", y);
  }

  int64_t groups_of(const Tile& t) const {
    return s_.batch * ceil_div(s_.m, t.tm) * ceil_div(s_.n, t.tn);
  }

  // Element offsets into buffers are index_type (64-bit in OpenCL C); what stays inside a group
  // (invocation and shared-array indices) is a 32-bit int, which the inner loop on NVIDIA
  // computes in one instruction where 64-bit arithmetic takes two.
  void small(const std::string& name, const std::string& x) { declare(int_, name, x); }
  void accumulator(const std::string& name) {
    line(fmt::format(fmt::runtime(d_.declare_mutable), fmt::arg("type", f32_),
                     fmt::arg("name", name), fmt::arg("x", zero())));
  }
  // "x < limit", or "" where a tile of `tile` always stays inside (limit a multiple of it).
  static std::string below(const std::string& x, int64_t limit, int64_t tile) {
    return limit % tile == 0 ? "" : fmt::format("{} < {}", x, limit);
  }

  void accumulate(const std::string& acc, const std::string& a, const std::string& b) {
    line(fmt::format("{} = {};", acc, multiply_add(a, b, acc)));
  }
  std::string zero() const { return f32_literal(0.0); }

  // Element `index` of buffer `position` in f32, or 0 where `ok` fails. The conditional reads
  // only inside the buffer where the language evaluates one branch; WGSL's select evaluates
  // both, and WebGPU clamps an out-of-range read (as the loop renderer relies on too).
  std::string guarded_load(const std::string& ok, int32_t position, DType dt,
                           const std::string& index) const {
    std::string v = load(position, dt, index);
    return ok.empty() ? v : choose(ok, v, zero());
  }

  void guarded_store(const std::string& ok, const std::string& index, const std::string& value) {
    if (s_.epilogue) {  // the element goes through the epilogue kernels, in a block of its own
      if (!ok.empty()) line(fmt::format("if ({}) {{", ok));
      out_ += render_epilogue(*s_.epilogue, d_, "(" + index + ")", value,
                              indent_ + (ok.empty() ? 0 : 1));
      if (!ok.empty()) line("}");
      return;
    }
    std::string stmt = store(s_.c_buffer, s_.c_dtype, index, value);
    if (ok.empty()) {
      line(stmt);
      return;
    }
    line(fmt::format("if ({}) {{", ok));
    line("  " + stmt);
    line("}");
  }

  // One operand of the tiled kernel: [rows, k] with element strides row_stride and k_stride,
  // staged into shared array `array` ([kDepth][ld]) a K slice at a time.
  struct Operand {
    const char *p, *array;
    int64_t ld, rows, limit, row_stride, k_stride;
    const char *origin, *base;
    int32_t position;
    DType dt;
  };
  int64_t per_invocation(const Operand& o) const { return o.rows * kDepth / kGroup; }

  // Which elements of a slice each invocation copies: rows * kDepth / 64 of them, consecutive
  // invocations taking consecutive elements along the operand's contiguous dim, so the global
  // reads coalesce. Element u of the invocation is at slice row <p>kk<u> of the tile's row
  // <p>s<u> (operand row <p>r<u>), and waits in register <p>v<u> between its read and its copy
  // to shared memory.
  void slice_layout(const Operand& o) {
    const std::string p = o.p;
    const bool k_fast = o.k_stride <= o.row_stride;
    const int64_t fast = k_fast ? kDepth : o.rows;  // divides kGroup (kTiles, kDepth)
    // (`as` is a WGSL keyword: hence "fast" and "slow" in full.)
    small(p + "fast", fmt::format("li % {}", fast));
    small(p + "slow", fmt::format("li / {}", fast));
    for (int64_t u = 0; u < per_invocation(o); ++u) {
      std::string slow = plus(p + "slow", u * (kGroup / fast));
      small(fmt::format("{}kk{}", p, u), k_fast ? p + "fast" : slow);
      small(fmt::format("{}s{}", p, u), k_fast ? slow : p + "fast");
      let(fmt::format("{}r{}", p, u), fmt::format("{} + {}s{}", o.origin, p, u));
      accumulator(fmt::format("{}v{}", p, u));
    }
  }

  // Reads the slice starting at k = `k0` into the operand's registers.
  void fetch(const Operand& o, const std::string& k0) {
    for (int64_t u = 0; u < per_invocation(o); ++u) {
      const std::string rv = fmt::format("{}r{}", o.p, u);
      const std::string kv = fmt::format("{}k{}", o.p, u);
      let(kv, fmt::format("{} + {}kk{}", k0, o.p, u));
      std::string ok = all_of({below(rv, o.limit, o.rows), below(kv, s_.k, kDepth)});
      line(fmt::format(
          "{}v{} = {};", o.p, u,
          guarded_load(ok, o.position, o.dt,
                       sum({o.base, scaled(rv, o.row_stride), scaled(kv, o.k_stride)}))));
    }
  }

  // Copies the registers into the shared slice.
  void deposit(const Operand& o) {
    for (int64_t u = 0; u < per_invocation(o); ++u)
      line(fmt::format("{0}[{1}kk{2} * {3} + {1}s{2}] = {1}v{2};", o.array, o.p, u, o.ld));
  }

  void ids(int64_t groups) { group_ids(groups, int_); }

  // The comment, shared arrays, signature and opening brace.
  void open(const std::string& variant,
            std::initializer_list<std::pair<const char*, int64_t>> arrays, bool simd = false) {
    std::vector<int32_t> positions = {s_.a_buffer, s_.b_buffer, s_.c_buffer};
    int32_t count = *std::max_element(positions.begin(), positions.end()) + 1;
    if (s_.epilogue) count = std::max(count, s_.epilogue->params);
    if (s_.a_norm)
      count = std::max({count, s_.a_norm->scale_buffer + 1, s_.a_norm->bias_buffer + 1});
    const int32_t own = count;
    if (s_.a_loop) count = std::max(count, s_.a_loop->params);
    std::vector<BufferParam> params(count);
    for (int32_t j = 0; j < count; ++j) params[j].storage = j;
    for (int32_t j = own; j < count; ++j)  // what the kernel computing A reads
      params[j].dtype = s_.a_loop->program.buffers.at(j).dtype;
    if (s_.a_loop && s_.a_loop->program.buffers.at(s_.a_buffer).dtype != s_.a_dtype)
      fail("A's position binds a buffer the kernel computing A reads, at its dtype");
    if (s_.epilogue)  // its parameters: A, B, what the kernels read, the last one's output
      for (int32_t j = 0; j < s_.epilogue->params; ++j)
        params[j].dtype = s_.epilogue->program.buffers.at(j).dtype;
    if (const auto& nm = s_.a_norm) {
      if (nm->scale_buffer >= 0) params[nm->scale_buffer].dtype = nm->scale_dtype;
      if (nm->bias_buffer >= 0) params[nm->bias_buffer].dtype = nm->bias_dtype;
    }
    params[s_.a_buffer].dtype = s_.a_dtype;
    params[s_.b_buffer].dtype = s_.b_dtype;
    if (!s_.epilogue) params[s_.c_buffer].dtype = s_.c_dtype;
    params[s_.c_buffer].written = true;
    if (s_.c_buffer == s_.a_buffer || s_.c_buffer == s_.b_buffer ||
        (s_.a_buffer == s_.b_buffer && s_.a_dtype != s_.b_dtype))
      fail("the output must be its own buffer, and one buffer has one dtype");
    if (s_.epilogue &&
        (params[s_.a_buffer].dtype != s_.a_dtype || params[s_.b_buffer].dtype != s_.b_dtype))
      fail("the epilogue's buffers disagree with the operands' dtypes");

    const std::string symbol = kernel_symbol(s_.name);
    std::string shared;
    for (auto& [name, size] : arrays) shared += shared_array(f32_, name, size);
    KernelText::open(
        symbol, params,
        fmt::format("{}: {} C[{}, {}, {}] = A[{}, {}, {}] (strides {}, {}, {}) x B[{}, {}, {}] "
                    "(strides {}, {}, {}), f32 accumulation",
                    symbol, variant, s_.batch, s_.m, s_.n, s_.batch, s_.m, s_.k, s_.a_batch, s_.a_m,
                    s_.a_k, s_.batch, s_.k, s_.n, s_.b_batch, s_.b_k, s_.b_n) +
            prologue_note() + epilogue_names(),
        shared, /*cooperative=*/true, simd);
  }

  // ", A normalised first (RMSNorm, epsilon 1e-06)" for a norm prologue.
  std::string prologue_note() const {
    if (s_.a_loop)
      return ", A computed by " +
             op_chain(prologue_kernel(*s_.a_loop).name);
    if (!s_.a_norm) return "";
    return fmt::format(", A normalised first ({}, epsilon {})",
                       s_.a_norm->rms ? "RMSNorm" : "LayerNorm", s_.a_norm->epsilon);
  }

  // A kernel's op chain without its "k<index>_": the layers of a model share one kernel text.
  static std::string op_chain(std::string_view name) {
    size_t i = name.size() > 1 && name[0] == 'k' ? 1 : 0;
    while (i > 0 && i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i;
    if (i > 1 && i < name.size() && name[i] == '_') name.remove_prefix(i + 1);
    return std::string(name);
  }

  // ", then <kernel>, <kernel>" for a fused epilogue.
  std::string epilogue_names() const {
    if (!s_.epilogue) return "";
    std::string names;
    for (const lir::Kernel& k : s_.epilogue->program.kernels) {
      names += names.empty() ? ", then " : ", ";
      names += op_chain(std::get<lir::LoopKernel>(k).name);
    }
    return names;
  }

  MatmulKernel finish(int64_t groups, const std::string& variant) {
    return {KernelText::finish(), groups, variant};
  }
};

// C[b, m, 0] and C[b, 0, m] are the same element: a single column is a single row of the
// transposed product (B^T A^T), which the GEMV reads contiguously when A is contiguous along k.
MatmulShape transposed(const MatmulShape& s) {
  MatmulShape t = s;
  std::swap(t.m, t.n);
  std::swap(t.a_dtype, t.b_dtype);
  std::swap(t.a_buffer, t.b_buffer);
  std::swap(t.a_batch, t.b_batch);
  std::swap(t.a_k, t.b_k);
  t.a_m = s.b_n;
  t.b_n = s.a_m;
  return t;
}

}  // namespace

MatmulKernel render_matmul(const MatmulShape& shape, const Dialect& dialect) {
  MatmulShape s = shape.n == 1 && shape.m > 1 ? transposed(shape) : shape;
  if (s.m == 1 && s.b_k == 1) return MatmulWriter(s, dialect).gemv();
  return MatmulWriter(shape, dialect).tiled();
}

}  // namespace rlx::sdk
