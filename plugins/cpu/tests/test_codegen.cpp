// Generated loop kernels on the cpu target (RLX_CPU_KERNELS=compiled): the same bits as the
// interpreter and as hand references, large kernels split over threads, runs that allocate
// nothing, and a visible mode when no compiler exists. The kernel cache has test_kernel_cache.cpp.

#include "codegen_test_support.h"


extern char** environ;

// Every operator new in this process is counted (the plugin's too: it resolves to these).
static std::atomic<long> g_allocations{0};
void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// The nothrow forms too (std::stable_sort's buffer): under ASan the runtime's own nothrow new
// would otherwise hand out memory that the delete above frees with free(), a mismatch it aborts on.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace rlx {
namespace {

using namespace codegen_test;


Tensor ramp(DType d, std::vector<int64_t> shape, double scale, double shift) {
  Tensor t(d, shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    // A spread of magnitudes and signs, exact in every dtype tested.
    double v = std::fmod(i * 7.0 + 3.0, 23.0) * scale + shift;
    switch (d) {
      case DType::kF16: t.as<uint16_t>()[i] = f32_to_f16(static_cast<float>(v)); break;
      case DType::kBF16: t.as<uint16_t>()[i] = f32_to_bf16(static_cast<float>(v)); break;
      case DType::kF32: t.as<float>()[i] = static_cast<float>(v); break;
      case DType::kF64: t.as<double>()[i] = v; break;
      case DType::kI32: t.as<int32_t>()[i] = static_cast<int32_t>(v * 1e8); break;
      case DType::kI64: t.as<int64_t>()[i] = static_cast<int64_t>(v * 1e17); break;
      default: ADD_FAILURE() << "unsupported dtype";
    }
  }
  return t;
}

NamedTensors run_in_mode(const char* mode, const std::string& ir, const NamedTensors& in) {
  ScopedEnv env;
  env.set("RLX_CPU_KERNELS", mode);
  return run_text(ir, in);
}

void expect_same_bits(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  ASSERT_EQ(a.shape(), b.shape()) << what;
  const auto* x = static_cast<const unsigned char*>(a.data());
  const auto* y = static_cast<const unsigned char*>(b.data());
  const size_t width = dtype_size(a.dtype());
  for (size_t i = 0; i < a.nbytes(); i += width)
    if (std::memcmp(x + i, y + i, width) != 0) {
      ADD_FAILURE() << what << ": element " << i / width << " differs (interpreted "
                    << a.scalar_at(static_cast<int64_t>(i / width)) << ", compiled "
                    << b.scalar_at(static_cast<int64_t>(i / width)) << ")";
      return;
    }
}

struct Case {
  const char* name;
  std::string ir;
  std::vector<std::pair<std::string, Tensor>> inputs;
};

std::vector<Case> fused_cases() {
  auto x32 = ramp(DType::kF32, {3, 5, 7}, 0.37, -4.0);
  auto y32 = ramp(DType::kF32, {3, 5, 7}, -0.21, 2.5);
  auto x16 = ramp(DType::kF16, {4, 9}, 0.5, -3.0);
  auto xb = ramp(DType::kBF16, {4, 9}, 0.25, -1.0);
  auto x64 = ramp(DType::kF64, {6, 5}, 0.1, -1.1);
  auto i32 = ramp(DType::kI32, {2, 17}, 1.0, -11.0);
  auto j32 = ramp(DType::kI32, {2, 17}, 0.5, -6.0);
  return {
      {"f32 chain with transcendental ops",
       "graph @t(%x: f32[3,5,7], %y: f32[3,5,7]) {\n"
       "  %a = mul(%x, %y) : f32[3,5,7]\n  %b = exp(%a) : f32[3,5,7]\n  %c = tanh(%x) : "
       "f32[3,5,7]\n"
       "  %d = erf(%y) : f32[3,5,7]\n  %e = div(%b, %c) : f32[3,5,7]\n  %f = max(%e, %d) : "
       "f32[3,5,7]\n"
       "  %g = rsqrt(%f) : f32[3,5,7]\n  %h = logistic(%g) : f32[3,5,7]\n  return %h\n}\n",
       {{"x", x32}, {"y", y32}}},
      {"f32 transpose and broadcast",
       "graph @t(%x: f32[3,5,7], %v: f32[7]) {\n"
       "  %t = transpose(%x) {perm = [2, 0, 1]} : f32[7,3,5]\n"
       "  %b = broadcast_in_dim(%v) {dims = [0], shape = [7, 3, 5]} : f32[7,3,5]\n"
       "  %s = sub(%t, %b) : f32[7,3,5]\n  %r = round(%s) : f32[7,3,5]\n  return %r\n}\n",
       {{"x", x32}, {"v", ramp(DType::kF32, {7}, 0.3, 0.0)}}},
      {"f16 rounds after every op",
       "graph @t(%x: f16[4,9]) {\n  %a = mul(%x, %x) : f16[4,9]\n  %b = add(%a, %x) : f16[4,9]\n"
       "  %c = exp(%b) : f16[4,9]\n  %d = sqrt(%c) : f16[4,9]\n  return %d\n}\n",
       {{"x", x16}}},
      {"bf16 with convert",
       "graph @t(%x: bf16[4,9]) {\n  %a = sin(%x) : bf16[4,9]\n  %b = convert(%a) {dtype = f32} : "
       "f32[4,9]\n"
       "  %c = cos(%b) : f32[4,9]\n  %d = convert(%c) {dtype = bf16} : bf16[4,9]\n  return %d\n}\n",
       {{"x", xb}}},
      {"f64 pow and rem",
       "graph @t(%x: f64[6,5]) {\n  %a = pow(%x, %x) : f64[6,5]\n  %b = rem(%a, %x) : f64[6,5]\n"
       "  %c = log(%b) : f64[6,5]\n  return %c\n}\n",
       {{"x", x64}}},
      {"i32 wraps and divides safely",
       "graph @t(%x: i32[2,17], %y: i32[2,17]) {\n  %a = mul(%x, %x) : i32[2,17]\n"
       "  %b = div(%a, %y) : i32[2,17]\n  %c = rem(%x, %y) : i32[2,17]\n  %d = sub(%b, %c) : "
       "i32[2,17]\n"
       "  %e = abs(%d) : i32[2,17]\n  return %e\n}\n",
       {{"x", i32}, {"y", j32}}},
      {"compare, select and saturating convert",
       "graph @t(%x: f32[3,5,7], %y: f32[3,5,7]) {\n  %m = lt(%x, %y) : bool[3,5,7]\n"
       "  %s = select(%m, %x, %y) : f32[3,5,7]\n  %k = mul(%s, %s) : f32[3,5,7]\n"
       "  %i = convert(%k) {dtype = i32} : i32[3,5,7]\n  return %i\n}\n",
       {{"x", x32}, {"y", y32}}},
      {"slice, concat and pad (guarded loads)",
       "graph @t(%a: f32[3,5,7], %p: f32[]) {\n"
       "  %s = slice(%a) {limit = [3, 5, 7], start = [1, 0, 2], strides = [1, 2, 1]} : f32[2,3,5]\n"
       "  %c = concat(%s, %s) {axis = 2} : f32[2,3,10]\n"
       "  %y = pad(%c, %p) {high = [1, 0, 2], low = [0, 1, 1]} : f32[3,4,13]\n  return %y\n}\n",
       {{"a", x32}, {"p", Tensor::from<float>(DType::kF32, {}, {-7.5f})}}},
      {"reduce max and min keep NaN and -0",
       "graph @t(%x: f32[3,5,7]) {\n  %l = log(%x) : f32[3,5,7]\n"
       "  %a = reduce_max(%l) {axes = [2]} : f32[3,5]\n  %b = reduce_min(%x) {axes = [0, 1]} : "
       "f32[7]\n"
       "  return %a, %b\n}\n",
       {{"x", x32}}},
      {"reductions down long columns (loops exchanged), over threads, NaN kept",
       "graph @t(%x: f32[3,300,257]) {\n  %l = log(%x) : f32[3,300,257]\n"
       "  %s = reduce_sum(%x) {axes = [1]} : f32[3,257]\n  %m = reduce_max(%l) {axes = [1]} : "
       "f32[3,257]\n"
       "  %p = reduce_min(%x) {axes = [0, 1]} : f32[257]\n  return %s, %m, %p\n}\n",
       {{"x", ramp(DType::kF32, {3, 300, 257}, 0.37, -4.0)}}},
      {"integer reductions",
       "graph @t(%x: i32[2,17]) {\n  %a = reduce_sum(%x) {axes = [1]} : i32[2]\n"
       "  %b = reduce_prod(%x) {axes = [0]} : i32[17]\n  return %a, %b\n}\n",
       {{"x", i32}}},
      {"iota",
       "graph @t() {\n  %a = iota() {dim = 1, dtype = i64, shape = [3, 4]} : i64[3,4]\n"
       "  %b = iota() {dim = 0, dtype = f16, shape = [3, 4]} : f16[3,4]\n  return %a, %b\n}\n",
       {}},
  };
}

TEST(CpuCodegen, CompiledKernelsGiveTheInterpretersBits) {
  REQUIRE_COMPILER();
  TempDir cache;
  ScopedEnv env;
  env.set("RLX_CACHE_DIR", cache.path().string());
  for (const Case& c : fused_cases()) {
    NamedTensors in(c.inputs.begin(), c.inputs.end());
    NamedTensors interpreted = run_in_mode("interpret", c.ir, in);
    NamedTensors compiled = run_in_mode("compiled", c.ir, in);
    ASSERT_EQ(interpreted.size(), compiled.size()) << c.name;
    for (auto& [name, t] : interpreted) expect_same_bits(t, compiled.at(name), c.name + (" " + name));
  }
}

// Every f16 and bf16 bit pattern to f32, and f32 values at and around each of them (rounding
// ties, NaN payloads, subnormals, overflow) back to 16 bits: the generated conversions give the
// host's (core/src/ir/half.cpp) bits.
TEST(CpuCodegen, SixteenBitConversionsMatchTheHostForEveryPattern) {
  REQUIRE_COMPILER();
  TempDir cache;
  ScopedEnv env;
  env.set("RLX_CACHE_DIR", cache.path().string());
  const int64_t n = 65536;
  Tensor h(DType::kF16, {n}), b(DType::kBF16, {n}), f(DType::kF32, {3 * n});
  // Signalling NaNs are left out: the interpreter converts through double, which sets their
  // quiet bit, while generated code keeps it (both are NaN).
  auto f16_snan = [](uint32_t x) { return (x & 0x7C00u) == 0x7C00u && (x & 0x3FFu) && !(x & 0x200u); };
  auto bf16_snan = [](uint32_t x) { return (x & 0x7F80u) == 0x7F80u && (x & 0x7Fu) && !(x & 0x40u); };
  for (int64_t i = 0; i < n; ++i) {
    auto u = static_cast<uint32_t>(i);
    h.as<uint16_t>()[i] = static_cast<uint16_t>(f16_snan(u) ? 0x7E00u : u);
    b.as<uint16_t>()[i] = static_cast<uint16_t>(bf16_snan(u) ? 0x7FC0u : u);
    uint32_t bits;
    float v = f16_to_f32(h.as<uint16_t>()[i]);
    std::memcpy(&bits, &v, 4);
    for (int d = 0; d < 3; ++d) {
      uint32_t near = bits + static_cast<uint32_t>(d) - 1u;
      std::memcpy(&f.as<float>()[3 * i + d], &near, 4);
    }
  }
  std::string ir = fmt::format(
      "graph @t(%h: f16[{0}], %b: bf16[{0}], %f: f32[{1}]) {{\n"
      "  %hf = convert(%h) {{dtype = f32}} : f32[{0}]\n  %bf = convert(%b) {{dtype = f32}} : f32[{0}]\n"
      "  %fh = convert(%f) {{dtype = f16}} : f16[{1}]\n  %fb = convert(%f) {{dtype = bf16}} : bf16[{1}]\n"
      "  return %hf, %bf, %fh, %fb\n}}\n",
      n, 3 * n);
  NamedTensors in = {{"h", h}, {"b", b}, {"f", f}};
  NamedTensors interpreted = run_in_mode("interpret", ir, in);
  NamedTensors compiled = run_in_mode("compiled", ir, in);
  for (auto& [name, t] : interpreted) expect_same_bits(t, compiled.at(name), name);
}

TEST(CpuCodegen, FloatSumsMatchWithinRounding) {
  REQUIRE_COMPILER();
  TempDir cache;
  ScopedEnv env;
  env.set("RLX_CACHE_DIR", cache.path().string());
  // The interpreter accumulates float sums in double; generated code in float, in order.
  std::string ir =
      "graph @t(%x: f32[6,300]) {\n  %s = reduce_sum(%x) {axes = [1]} : f32[6]\n"
      "  %p = reduce_prod(%x) {axes = [0]} : f32[300]\n  return %s, %p\n}\n";
  NamedTensors in = {{"x", ramp(DType::kF32, {6, 300}, 0.05, -0.4)}};
  NamedTensors c = run_in_mode("compiled", ir, in);
  auto x = values(in.at("x"));
  auto s = values(c.at("s")), p = values(c.at("p"));
  for (int r = 0; r < 6; ++r) {
    double want = 0;
    for (int j = 0; j < 300; ++j) want += x[r * 300 + j];
    EXPECT_NEAR(s[r], want, 1e-5 * 300) << r;
  }
  for (int j = 0; j < 300; ++j) {
    double want = 1;
    for (int r = 0; r < 6; ++r) want *= static_cast<float>(x[r * 300 + j]);
    EXPECT_NEAR(p[j], want, 1e-6 * std::max(1.0, std::fabs(want))) << j;
  }
}

// Big enough that the host splits them over threads, in ranges that start and end inside rows.
TEST(CpuCodegen, LargeKernelsSplitOverThreadsCorrectly) {
  REQUIRE_COMPILER();
  TempDir cache;
  ScopedEnv env;
  env.set("RLX_CACHE_DIR", cache.path().string()).set("RLX_CPU_KERNELS", "compiled");
  const int64_t rows = 97, cols = 1031, n = 300007;
  std::string ir = fmt::format(
      "graph @t(%x: f32[{0},{1}], %v: f32[{2}]) {{\n  %a = mul(%x, %x) : f32[{0},{1}]\n"
      "  %s = reduce_max(%a) {{axes = [1]}} : f32[{0}]\n  %t = transpose(%x) {{perm = [1, 0]}} : f32[{1},{0}]\n"
      "  %w = neg(%v) : f32[{2}]\n  return %s, %t, %w\n}}\n",
      rows, cols, n);
  NamedTensors in = {{"x", ramp(DType::kF32, {rows, cols}, 0.5, -5.0)},
                     {"v", ramp(DType::kF32, {n}, 1.0, -11.0)}};
  NamedTensors out = run_text(ir, in);
  auto x = values(in.at("x")), v = values(in.at("v"));
  auto s = values(out.at("s")), t = values(out.at("t")), w = values(out.at("w"));
  for (int64_t r = 0; r < rows; ++r) {
    float m = -INFINITY;
    for (int64_t c = 0; c < cols; ++c) m = std::max(m, static_cast<float>(x[r * cols + c] * x[r * cols + c]));
    ASSERT_EQ(s[r], m) << r;
  }
  for (int64_t c = 0; c < cols; ++c)
    for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(t[c * rows + r], x[r * cols + c]) << r << "," << c;
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(w[i], -v[i]) << i;
}

TEST(CpuCodegen, SteadyStateRunsAllocateNothing) {
  REQUIRE_COMPILER();
  TempDir cache;
  ScopedEnv env;
  env.set("RLX_CACHE_DIR", cache.path().string()).set("RLX_CPU_KERNELS", "compiled");
  Graph g = parse_graph(
      "graph @t(%x: f32[8,16]) {\n  %e = exp(%x) : f32[8,16]\n  %s = reduce_sum(%e) {axes = [1]} : f32[8]\n"
      "  %b = broadcast_in_dim(%s) {dims = [0], shape = [8, 16]} : f32[8,16]\n"
      "  %y = div(%e, %b) : f32[8,16]\n  return %y\n}\n",
      "softmax.rlx");
  Session session(test::cpu_target());
  lir::Program program = session.compile(g).lir_for({});
  std::unique_ptr<Executable> exe = test::cpu_target()->compile(program);
  Tensor x = ramp(DType::kF32, {8, 16}, 0.1, -1.0), y(DType::kF32, {8, 16});
  std::vector<void*> ptrs(program.buffers.size(), nullptr);
  ptrs[program.inputs.at(0).second] = x.data();
  ptrs[program.outputs.at(0).second] = y.data();
  exe->run(ptrs);
  long before = g_allocations.load();
  for (int i = 0; i < 1000; ++i) exe->run(ptrs);
  EXPECT_EQ(g_allocations.load() - before, 0) << "allocations in 1000 runs";
  auto xs = values(x), ys = values(y);
  for (int r = 0; r < 8; ++r) {
    double sum = 0;
    for (int c = 0; c < 16; ++c) sum += std::exp(xs[r * 16 + c]);
    for (int c = 0; c < 16; ++c) EXPECT_NEAR(ys[r * 16 + c], std::exp(xs[r * 16 + c]) / sum, 1e-6);
  }
}

// A weight converted from f16 is computed once when the executable is built, in both modes, and
// again only when a run binds other constant data.
TEST(CpuCodegen, KernelsOfConstantsRunOnceAndFollowNewConstantData) {
  for (const char* mode : {"compiled", "interpret"}) {
    if (std::string(mode) == "compiled" && !have_compiler()) continue;
    TempDir cache;
    ScopedEnv env;
    env.set("RLX_CACHE_DIR", cache.path().string()).set("RLX_CPU_KERNELS", mode);
    // %c has two consumers, so it is materialised by a kernel that reads only the weight.
    Graph g = parse_graph(
        "graph @t(%x: f32[4]) params(%w: f16[4]) {\n  %c = convert(%w) {dtype = f32} : f32[4]\n"
        "  %y = mul(%x, %c) : f32[4]\n  %z = add(%y, %c) : f32[4]\n  return %z\n}\n",
        "weights.rlx");
    Tensor w(DType::kF16, {4});
    for (int i = 0; i < 4; ++i) w.as<uint16_t>()[i] = f32_to_f16(0.5f * static_cast<float>(i + 1));
    g.weights["w"] = w;
    Session session(test::cpu_target());
    lir::Program program = session.compile(g).lir_for({});
    std::unique_ptr<Executable> exe = test::cpu_target()->compile(program);
    Tensor x = test::f32({4}, {1, 2, 3, 4}), y(DType::kF32, {4});
    std::vector<void*> ptrs(program.buffers.size(), nullptr);
    ptrs[program.inputs.at(0).second] = x.data();
    ptrs[program.outputs.at(0).second] = y.data();
    for (int run = 0; run < 2; ++run) {
      exe->run(ptrs);
      EXPECT_EQ(values(y), (std::vector<double>{1, 3, 6, 10})) << mode;
    }
    Tensor w2(DType::kF16, {4});
    for (int i = 0; i < 4; ++i) w2.as<uint16_t>()[i] = f32_to_f16(-1.0f);
    for (const auto& b : program.buffers)
      if (b.kind == lir::BufferKind::kConstant) ptrs[b.id] = w2.data();
    exe->run(ptrs);
    EXPECT_EQ(values(y), (std::vector<double>{-2, -3, -4, -5})) << mode;
  }
}

TEST(CpuCodegen, WithoutACompilerKernelsAreInterpretedVisibly) {
  ScopedEnv env;
  env.set("RLX_CC", "/nonexistent/cc").unset("RLX_CPU_KERNELS");
  Verdict v = test::cpu_target()->can_execute();
  EXPECT_TRUE(v.ok);
  EXPECT_NE(v.reason.find("kernels interpreted"), std::string::npos) << v.reason;
  EXPECT_EQ(run_small(), kSmallWant);
  env.set("RLX_CPU_KERNELS", "compiled");
  try {
    run_small();
    ADD_FAILURE() << "compiled mode without a compiler ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("RLX_CPU_KERNELS=interpret"), std::string::npos) << e.what();
  }
}

TEST(CpuCodegen, ListingSaysHowKernelsRun) {
  REQUIRE_COMPILER();
  ScopedEnv env;
  env.unset("RLX_CC").unset("RLX_CPU_KERNELS");
  Verdict v = test::cpu_target()->can_execute();
  EXPECT_TRUE(v.ok);
  EXPECT_NE(v.reason.find("kernels compiled by"), std::string::npos) << v.reason;
  // ... and what the products run on (the ISA names of gemm.h and int8_gemm.h).
  EXPECT_NE(v.reason.find("; products: f32 GEMM "), std::string::npos) << v.reason;
  EXPECT_NE(v.reason.find(", int8 GEMM "), std::string::npos) << v.reason;
  env.set("RLX_CPU_KERNELS", "interpret");
  EXPECT_NE(test::cpu_target()->can_execute().reason.find("RLX_CPU_KERNELS=interpret"),
            std::string::npos);
}

}  // namespace
}  // namespace rlx
