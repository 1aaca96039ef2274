// Generated loop kernels on the cpu target (RLX_CPU_KERNELS=compiled): the same bits as the
// interpreter and as hand references, large kernels split over threads, the persistent kernel
// cache (hit without a compiler run, key covering the flags, two processes at once), runs that
// allocate nothing, and a visible mode when no compiler exists.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <new>
#include <optional>

#include "rlx/core/error.h"
#include "rlx/core/half.h"
#include "rlx/core/ir_text.h"
#include "test_support.h"

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

namespace fs = std::filesystem;
using test::run_text;
using test::values;

// Sets environment variables for one scope and restores what was there.
class ScopedEnv {
 public:
  ScopedEnv& set(const char* name, const std::string& value) {
    save(name);
    ::setenv(name, value.c_str(), 1);
    return *this;
  }
  ScopedEnv& unset(const char* name) {
    save(name);
    ::unsetenv(name);
    return *this;
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) ::setenv(it->first.c_str(), it->second->c_str(), 1);
      else ::unsetenv(it->first.c_str());
    }
  }

 private:
  void save(const char* name) {
    const char* v = std::getenv(name);
    saved_.emplace_back(name, v ? std::optional<std::string>(v) : std::nullopt);
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "rlx-codegen-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

int count_files(const fs::path& dir, const std::string& ext) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir / "kernels"))
    n += e.path().extension() == ext && e.path().string().find(".tmp.") == std::string::npos;
  return n;
}

int count_lines(const fs::path& file) {
  std::ifstream in(file);
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

// A compiler wrapper that logs each compile (not `--version`) to `log` and runs cc.
fs::path logging_compiler(const fs::path& dir, const fs::path& log) {
  fs::path script = dir / "logging-cc";
  std::ofstream(script) << fmt::format(
      "#!/bin/sh\nif [ \"$1\" != --version ]; then echo run >> '{}'; fi\n"
      "exec cc \"$@\"\n",
      log.string());
  fs::permissions(script, fs::perms::owner_all);
  return script;
}

// A compiler wrapper for two processes that must compile at the same time: each compile (not
// `--version`) logs itself to `log`, announces itself in `barrier`, and waits there until the
// other has arrived too before it runs cc. Neither can finish before both have started, however
// the machine schedules them; one that waits 120 s in vain fails, naming the barrier.
fs::path rendezvous_compiler(const fs::path& dir, const fs::path& log, const fs::path& barrier) {
  fs::create_directories(barrier);
  fs::path script = dir / "rendezvous-cc";
  std::ofstream(script) << fmt::format(
      "#!/bin/sh\n"
      "if [ \"$1\" != --version ]; then\n"
      "  echo run >> '{0}'\n"
      "  : > '{1}'/$$\n"
      "  n=0\n"
      "  while [ \"$(ls '{1}' | wc -l)\" -lt 2 ]; do\n"
      "    n=$((n + 1))\n"
      "    if [ $n -gt 12000 ]; then echo 'rendezvous-cc: the other compile never came' >&2; "
      "exit 1; fi\n"
      "    sleep 0.01\n"
      "  done\n"
      "fi\n"
      "exec cc \"$@\"\n",
      log.string(), barrier.string());
  fs::permissions(script, fs::perms::owner_all);
  return script;
}

bool have_compiler() { return std::system("cc --version > /dev/null 2>&1") == 0; }

#define REQUIRE_COMPILER() \
  if (!have_compiler()) GTEST_SKIP() << "no C compiler (cc) on this machine"

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
       "  %a = mul(%x, %y) : f32[3,5,7]\n  %b = exp(%a) : f32[3,5,7]\n  %c = tanh(%x) : f32[3,5,7]\n"
       "  %d = erf(%y) : f32[3,5,7]\n  %e = div(%b, %c) : f32[3,5,7]\n  %f = max(%e, %d) : f32[3,5,7]\n"
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
       "graph @t(%x: bf16[4,9]) {\n  %a = sin(%x) : bf16[4,9]\n  %b = convert(%a) {dtype = f32} : f32[4,9]\n"
       "  %c = cos(%b) : f32[4,9]\n  %d = convert(%c) {dtype = bf16} : bf16[4,9]\n  return %d\n}\n",
       {{"x", xb}}},
      {"f64 pow and rem",
       "graph @t(%x: f64[6,5]) {\n  %a = pow(%x, %x) : f64[6,5]\n  %b = rem(%a, %x) : f64[6,5]\n"
       "  %c = log(%b) : f64[6,5]\n  return %c\n}\n",
       {{"x", x64}}},
      {"i32 wraps and divides safely",
       "graph @t(%x: i32[2,17], %y: i32[2,17]) {\n  %a = mul(%x, %x) : i32[2,17]\n"
       "  %b = div(%a, %y) : i32[2,17]\n  %c = rem(%x, %y) : i32[2,17]\n  %d = sub(%b, %c) : i32[2,17]\n"
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
       "  %a = reduce_max(%l) {axes = [2]} : f32[3,5]\n  %b = reduce_min(%x) {axes = [0, 1]} : f32[7]\n"
       "  return %a, %b\n}\n",
       {{"x", x32}}},
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

const char* kSmallGraph =
    "graph @t(%x: f32[4], %y: f32[4]) {\n  %a = mul(%x, %y) : f32[4]\n  %b = add(%a, %x) : f32[4]\n"
    "  return %b\n}\n";

std::vector<double> run_small() {
  NamedTensors in = {{"x", test::f32({4}, {1, 2, 3, 4})}, {"y", test::f32({4}, {0.5f, -1, 2, 10})}};
  return values(run_text(kSmallGraph, in).at("b"));
}
const std::vector<double> kSmallWant = {1.5, 0, 9, 44};

TEST(CpuCodegen, SecondCompileHitsTheCacheWithoutACompiler) {
  REQUIRE_COMPILER();
  TempDir dir;
  fs::path log = dir.path() / "cc.log";
  ScopedEnv env;
  env.set("RLX_CACHE_DIR", (dir.path() / "cache").string())
      .set("RLX_CC", logging_compiler(dir.path(), log).string())
      .set("RLX_CPU_KERNELS", "compiled");
  EXPECT_EQ(run_small(), kSmallWant);
  EXPECT_EQ(count_lines(log), 1);
  EXPECT_EQ(count_files(dir.path() / "cache", ".so"), 1);
  EXPECT_EQ(run_small(), kSmallWant);  // a new session: compiles the program again
  EXPECT_EQ(count_lines(log), 1) << "the second compile ran the compiler";
}

TEST(CpuCodegen, CacheKeyCoversIsaAndFlags) {
  REQUIRE_COMPILER();
  TempDir dir;
  fs::path cache = dir.path() / "cache";
  ScopedEnv env;
  env.set("RLX_CACHE_DIR", cache.string()).set("RLX_CPU_KERNELS", "compiled");
  EXPECT_EQ(run_small(), kSmallWant);
  EXPECT_EQ(count_files(cache, ".so"), 1);
  {
    ScopedEnv isa;
    isa.set("RLX_CPU_ISA", "baseline");
    EXPECT_EQ(run_small(), kSmallWant);
    EXPECT_EQ(count_files(cache, ".so"), 2);
  }
  {
    ScopedEnv flags;
    flags.set("RLX_CPU_CFLAGS", "-DRLX_UNUSED_MACRO=1");
    EXPECT_EQ(run_small(), kSmallWant);
    EXPECT_EQ(count_files(cache, ".so"), 3);
  }
  EXPECT_EQ(run_small(), kSmallWant);
  EXPECT_EQ(count_files(cache, ".so"), 3);
}

// A cache entry damaged outside rlx (a truncated .so, as a full disk or a killed copy leaves it)
// is caught by its checksum and compiled again; mapping it would end the process with SIGBUS.
// Temporaries of a compile whose process is gone are removed.
TEST(CpuCodegen, DamagedCacheEntriesAreRebuiltNotLoaded) {
  REQUIRE_COMPILER();
  TempDir dir;
  fs::path cache = dir.path() / "cache", log = dir.path() / "cc.log";
  ScopedEnv env;
  env.set("RLX_CACHE_DIR", cache.string())
      .set("RLX_CC", logging_compiler(dir.path(), log).string())
      .set("RLX_CPU_KERNELS", "compiled");
  EXPECT_EQ(run_small(), kSmallWant);
  ASSERT_EQ(count_files(cache, ".so"), 1);
  fs::path object;
  for (const auto& e : fs::directory_iterator(cache / "kernels"))
    if (e.path().extension() == ".so") object = e.path();
  const auto size = fs::file_size(object);
  fs::resize_file(object, 1000);
  pid_t gone = 0;
  char true_cmd[] = "true";
  char* argv[] = {true_cmd, nullptr};
  ASSERT_EQ(posix_spawnp(&gone, "true", nullptr, nullptr, argv, environ), 0);
  ASSERT_EQ(::waitpid(gone, nullptr, 0), gone);
  const fs::path orphan = cache / "kernels" / ("0123.tmp." + std::to_string(gone) + ".0.c");
  std::ofstream(orphan) << "left by a killed compile";

  testing::internal::CaptureStderr();
  EXPECT_EQ(run_small(), kSmallWant);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("was damaged"), std::string::npos) << err;
  EXPECT_EQ(count_lines(log), 2) << "the damaged entry was not compiled again";
  EXPECT_EQ(fs::file_size(object), size);
  EXPECT_FALSE(fs::exists(orphan));
  EXPECT_EQ(run_small(), kSmallWant);
  EXPECT_EQ(count_lines(log), 2) << "the rebuilt entry was not a hit";
}

// The kernels of another graph than kSmallGraph (a cache miss where kSmallGraph hits).
std::vector<double> run_other() {
  NamedTensors in = {{"x", test::f32({4}, {1, 2, 3, 4})}};
  return values(
      run_text("graph @t(%x: f32[4]) {\n  %a = mul(%x, %x) : f32[4]\n  %b = neg(%a) : f32[4]\n"
               "  return %b\n}\n",
               in)
          .at("b"));
}

std::string user_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUser) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return {};
}

// A cache folder that cannot be made (its parent is a regular file, which stops root too) fails
// the compile with the folder, the reason and what to do; nothing is compiled elsewhere.
TEST(CpuCodegen, ACacheFolderThatCannotBeMadeIsAClearError) {
  REQUIRE_COMPILER();
  TempDir dir;
  std::ofstream(dir.path() / "file") << "not a folder";
  ScopedEnv env;
  env.set("RLX_CACHE_DIR", (dir.path() / "file" / "cache").string())
      .set("RLX_CPU_KERNELS", "compiled");
  const std::string e = user_error_of([] { run_small(); });
  EXPECT_NE(e.find("cannot create the kernel cache folder " +
                   (dir.path() / "file" / "cache" / "kernels").string() + " (Not a directory)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("set RLX_CACHE_DIR to a writable folder"), std::string::npos) << e;
}

// A read-only cache (say one shipped with an application) still serves the kernels it holds; a
// miss fails with the folder and what to do rather than compiling somewhere else unseen.
TEST(CpuCodegen, AReadOnlyCacheServesItsKernelsAndRefusesMissesClearly) {
  REQUIRE_COMPILER();
  TempDir dir;
  const fs::path cache = dir.path() / "cache", kernels = cache / "kernels";
  ScopedEnv env;
  env.set("RLX_CACHE_DIR", cache.string()).set("RLX_CPU_KERNELS", "compiled");
  EXPECT_EQ(run_small(), kSmallWant);
  fs::permissions(kernels, fs::perms::owner_read | fs::perms::owner_exec);
  struct Restore {
    fs::path p;
    ~Restore() { fs::permissions(p, fs::perms::owner_all); }
  } restore{kernels};
  // Root writes into read-only folders: then this cannot be tested here.
  if (std::ofstream(kernels / "probe")) {
    fs::remove(kernels / "probe");
    GTEST_SKIP() << "this process writes into a folder without write permission (root?), so a "
                    "read-only cache cannot be made here";
  }
  EXPECT_EQ(run_small(), kSmallWant) << "a hit needs no write";
  const std::string e = user_error_of([] { run_other(); });
  EXPECT_NE(e.find("the kernel cache folder " + kernels.string() + " is not writable"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("Permission denied"), std::string::npos) << e;
  EXPECT_NE(e.find("set RLX_CACHE_DIR to a writable folder"), std::string::npos) << e;
}

// Without RLX_CACHE_DIR the cache is $XDG_CACHE_HOME/rlx/kernels, else ~/.cache/rlx/kernels; an
// empty variable counts as unset.
TEST(CpuCodegen, WithoutRlxCacheDirTheCacheFollowsXdgThenHome) {
  REQUIRE_COMPILER();
  TempDir dir;
  const fs::path xdg = dir.path() / "xdg", home = dir.path() / "home";
  ScopedEnv env;
  env.unset("RLX_CACHE_DIR").set("XDG_CACHE_HOME", xdg.string()).set("HOME", home.string());
  env.set("RLX_CPU_KERNELS", "compiled");
  EXPECT_EQ(run_small(), kSmallWant);
  EXPECT_EQ(count_files(xdg / "rlx", ".so"), 1);
  EXPECT_FALSE(fs::exists(home));
  env.set("RLX_CACHE_DIR", "").unset("XDG_CACHE_HOME");
  EXPECT_EQ(run_small(), kSmallWant);
  EXPECT_EQ(count_files(home / ".cache" / "rlx", ".so"), 1);
}

// A compiler that does not finish within RLX_CC_TIMEOUT_S is stopped with everything it started,
// and the compile fails saying what to change.
TEST(CpuCodegen, ACompilerPastItsTimeLimitIsStoppedWithAClearError) {
  TempDir dir;
  const fs::path pid_file = dir.path() / "child.pid", script = dir.path() / "hanging-cc";
  std::ofstream(script) << fmt::format(
      "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'hanging-cc 1.0'; exit 0; fi\n"
      "sleep 1000 &\necho $! > '{}'\nwait\n",
      pid_file.string());
  fs::permissions(script, fs::perms::owner_all);
  ScopedEnv env;
  env.set("RLX_CACHE_DIR", (dir.path() / "cache").string())
      .set("RLX_CC", script.string())
      .set("RLX_CPU_KERNELS", "compiled")
      .set("RLX_CC_TIMEOUT_S", "1");
  const std::string e = user_error_of([] { run_small(); });
  EXPECT_NE(e.find("ran longer than 1 s on the generated kernels and was stopped"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("set RLX_CC_TIMEOUT_S to more seconds (0 for no limit)"), std::string::npos)
      << e;
  // The compiler's own child was stopped too: gone, or a zombie nobody reaps (PID 1 in a
  // container may not).
  int child = 0;
  std::ifstream(pid_file) >> child;
  ASSERT_GT(child, 0);
  auto stopped = [&] {
    std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;
    const size_t paren = line.rfind(')');
    return paren != std::string::npos && line.size() > paren + 2 && line[paren + 2] == 'Z';
  };
  for (int i = 0; i < 1000 && !stopped(); ++i) ::usleep(10000);
  EXPECT_TRUE(stopped()) << "the compiler's child " << child << " still runs";

  env.set("RLX_CC_TIMEOUT_S", "soon");
  EXPECT_NE(
      user_error_of([] { run_small(); }).find("RLX_CC_TIMEOUT_S=soon is not a number of seconds"),
      std::string::npos);
}

// What each of the concurrent processes runs: skipped unless a parent started it.
TEST(CpuCodegenChild, CompileAndRun) {
  if (!std::getenv("RLX_CODEGEN_CHILD")) GTEST_SKIP() << "run by ConcurrentProcessesShareTheCache";
  EXPECT_EQ(run_small(), kSmallWant);
}

TEST(CpuCodegen, ConcurrentProcessesShareTheCache) {
  REQUIRE_COMPILER();
  TempDir dir;
  fs::path cache = dir.path() / "cache", log = dir.path() / "cc.log";
  ScopedEnv env;
  // Both processes miss the cache and compile at the same time: the compiler waits for both.
  env.set("RLX_CACHE_DIR", cache.string())
      .set("RLX_CC", rendezvous_compiler(dir.path(), log, dir.path() / "barrier").string())
      .set("RLX_CPU_KERNELS", "compiled")
      .set("RLX_CODEGEN_CHILD", "1");
  std::string self = fs::read_symlink("/proc/self/exe").string();
  std::string filter = "--gtest_filter=CpuCodegenChild.CompileAndRun";
  std::vector<pid_t> pids;
  for (int i = 0; i < 2; ++i) {
    char* argv[] = {self.data(), filter.data(), nullptr};
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv, environ), 0);
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a child failed";
  }
  EXPECT_EQ(count_files(cache, ".so"), 1);
  EXPECT_EQ(count_lines(log), 2) << "both processes compiled, at the same time";
  for (const auto& e : fs::directory_iterator(cache / "kernels"))
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << "left behind: " << e.path();
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
  env.set("RLX_CPU_KERNELS", "interpret");
  EXPECT_NE(test::cpu_target()->can_execute().reason.find("RLX_CPU_KERNELS=interpret"),
            std::string::npos);
}

}  // namespace
}  // namespace rlx
