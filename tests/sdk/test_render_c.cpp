// The C dialect of the SDK renderer, end to end: IR text -> LIR -> C source -> the system C
// compiler -> dlopen -> run on hand-made buffers -> compare with hand-computed values.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <sstream>

#include "rlx/core/error.h"
#include "rlx/core/half.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/passes.h"
#include "rlx/sdk/render.h"

namespace rlx::sdk {
namespace {

namespace fs = std::filesystem;

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

// The C compiler: $CC, else cc, gcc or clang from PATH; empty when there is none.
std::string find_cc() {
  std::vector<std::string> names;
  if (const char* cc = std::getenv("CC"); cc && *cc) names.push_back(cc);
  names.insert(names.end(), {"cc", "gcc", "clang"});
  for (const std::string& n : names)
    if (std::system(("command -v '" + n + "' >/dev/null 2>&1").c_str()) == 0) return n;
  return "";
}

// A C source compiled into a temporary shared library and loaded.
class CLibrary {
 public:
  CLibrary(const std::string& cc, const std::string& source) {
    std::string tmpl = (fs::temp_directory_path() / "rlx_render_c_XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    std::ofstream(dir_ / "kernels.c") << source;
    std::string cmd = "'" + cc + "' -O1 -shared -fPIC -o '" + (dir_ / "kernels.so").string() +
                      "' '" + (dir_ / "kernels.c").string() + "' -lm 2>'" +
                      (dir_ / "cc.log").string() + "'";
    if (std::system(cmd.c_str()) != 0) {
      std::stringstream log;
      log << std::ifstream(dir_ / "cc.log").rdbuf();
      throw std::runtime_error("the C compiler rejected the rendered source:\n" + log.str() +
                               "\n--- source ---\n" + source);
    }
    handle_ = dlopen((dir_ / "kernels.so").c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) throw std::runtime_error(std::string("dlopen: ") + dlerror());
  }
  ~CLibrary() {
    if (handle_) dlclose(handle_);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void* symbol(const std::string& name) const {
    void* s = dlsym(handle_, name.c_str());
    if (!s) throw std::runtime_error("no symbol " + name + " in the rendered library");
    return s;
  }

 private:
  fs::path dir_;
  void* handle_ = nullptr;
};

using Tensors = std::map<std::string, Tensor>;

class RenderC : public ::testing::Test {
 protected:
  void SetUp() override {
    cc_ = find_cc();
    if (cc_.empty()) GTEST_SKIP() << "no C compiler found ($CC, cc, gcc, clang): nothing to run";
  }

  // Lowers IR text (through the default passes unless `optimize` is false: constant folding
  // would turn an iota into a constant buffer), renders the program with `dialect`, compiles it
  // and runs every kernel in order. Each storage buffer gets its own allocation; kernels get
  // the table buffers[id] -> storage of id.
  Tensors run(const char* ir, const Tensors& inputs, bool optimize = true) {
    Graph g = parse_graph(ir);
    if (optimize) run_default_passes(g);
    program_ = lower_to_lir(g);
    source_ = render_program(program_, c_dialect());
    CLibrary lib(cc_, source_);

    std::vector<Tensor> mem(program_.buffers.size());
    for (const lir::Buffer& b : program_.buffers) {
      if (b.kind == lir::BufferKind::kAlias) continue;
      mem[b.id] = b.kind == lir::BufferKind::kConstant ? b.data : Tensor(b.dtype, b.shape);
    }
    for (auto& [name, id] : program_.inputs) {
      const Tensor& in = inputs.at(name);
      EXPECT_EQ(in.nbytes(), mem[id].nbytes()) << "input " << name;
      std::memcpy(mem[id].data(), in.data(), in.nbytes());
    }
    std::vector<char*> table(program_.buffers.size(), nullptr);
    for (size_t i = 0; i < table.size(); ++i)
      table[i] = static_cast<char*>(mem[program_.storage_of(static_cast<int32_t>(i))].data());
    for (const lir::Kernel& k : program_.kernels) {
      auto* loop = std::get_if<lir::LoopKernel>(&k);
      if (!loop) throw std::runtime_error("the program has a library call");
      reinterpret_cast<void (*)(char* const*)>(lib.symbol(kernel_symbol(*loop)))(table.data());
    }
    Tensors out;
    for (auto& [name, id] : program_.outputs) out[name] = mem[id];
    return out;
  }

  std::string cc_;
  lir::Program program_;
  std::string source_;
};

template <typename T>
std::vector<T> values(const Tensor& t) {
  EXPECT_EQ(dtype_size(t.dtype()), sizeof(T));
  return std::vector<T>(t.as<T>(), t.as<T>() + t.numel());
}

template <typename T>
Tensor tensor(DType dt, std::vector<int64_t> shape, std::vector<T> v) {
  return Tensor::from<T>(dt, std::move(shape), v);
}

Tensor f32(std::vector<int64_t> shape, std::vector<float> v) {
  return tensor(DType::kF32, std::move(shape), std::move(v));
}

// Float vectors compare bit-exactly where the reference is exact and treat NaN as equal to NaN.
void expect_floats(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i << " is " << got[i];
    else
      EXPECT_FLOAT_EQ(got[i], want[i]) << "element " << i;
  }
}

TEST_F(RenderC, ElementwiseChainWithBroadcastAndScalarConstant) {
  auto out = run(R"(graph @g(%x: f32[2,3], %b: f32[3]) {
  %bb = broadcast_in_dim(%b) {dims = [1], shape = [2, 3]} : f32[2,3]
  %m = mul(%x, %bb) : f32[2,3]
  %e = exp(%m) : f32[2,3]
  %c = constant() {value = dense<f32[]: [0.5]>} : f32[]
  %cc = broadcast_in_dim(%c) {dims = [], shape = [2, 3]} : f32[2,3]
  %y = sub(%e, %cc) : f32[2,3]
  return %y
}
)",
                 {{"x", f32({2, 3}, {0, 1, 2, -1, -2, 0.5f})}, {"b", f32({3}, {1, 0.5f, -1})}});
  expect_floats(values<float>(out.at("y")),
                {std::exp(0.f) - 0.5f, std::exp(0.5f) - 0.5f, std::exp(-2.f) - 0.5f,
                 std::exp(-1.f) - 0.5f, std::exp(-1.f) - 0.5f, std::exp(-0.5f) - 0.5f});
}

TEST_F(RenderC, TransposeReadsWithPermutedStrides) {
  auto out = run(R"(graph @g(%x: f32[2,3]) {
  %t = transpose(%x) {perm = [1, 0]} : f32[3,2]
  return %t
}
)",
                 {{"x", f32({2, 3}, {1, 2, 3, 4, 5, 6})}});
  expect_floats(values<float>(out.at("t")), {1, 4, 2, 5, 3, 6});
}

TEST_F(RenderC, ReduceSumAndMaxOverAxesWithNaN) {
  std::vector<float> x(24);
  for (int i = 0; i < 24; ++i) x[i] = static_cast<float>(i % 7) - 3;  // x[a][b][c], 2x3x4
  x[1 * 12 + 2 * 4 + 3] = kNaN;
  auto out = run(R"(graph @g(%x: f32[2,3,4]) {
  %s = reduce_sum(%x) {axes = [1]} : f32[2,4]
  %m = reduce_max(%x) {axes = [0, 2]} : f32[3]
  %n = reduce_min(%x) {axes = [2]} : f32[2,3]
  return %s, %m, %n
}
)",
                 {{"x", f32({2, 3, 4}, x)}});
  auto at = [&](int a, int b, int c) { return x[a * 12 + b * 4 + c]; };
  std::vector<float> sum(8), max(3, -kInf), min(6, kInf);
  for (int a = 0; a < 2; ++a)
    for (int c = 0; c < 4; ++c) sum[a * 4 + c] = at(a, 0, c) + at(a, 1, c) + at(a, 2, c);
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 4; ++c) {
        max[b] = std::max(max[b], at(a, b, c));
        min[a * 3 + b] = std::min(min[a * 3 + b], at(a, b, c));
      }
  max[2] = kNaN;  // NaN propagates through max and min (render.h)
  min[5] = kNaN;
  sum[7] = kNaN;
  expect_floats(values<float>(out.at("s")), sum);
  expect_floats(values<float>(out.at("m")), max);
  expect_floats(values<float>(out.at("n")), min);
}

TEST_F(RenderC, IntegerReductionsStartFromTheTypeLimits) {
  auto out = run(R"(graph @g(%x: i32[2,3]) {
  %p = reduce_prod(%x) {axes = [1]} : i32[2]
  %mx = reduce_max(%x) {axes = [1]} : i32[2]
  %mn = reduce_min(%x) {axes = [0]} : i32[3]
  %all = reduce_sum(%x) {axes = [0, 1]} : i32[]
  return %p, %mx, %mn, %all
}
)",
                 {{"x", tensor<int32_t>(DType::kI32, {2, 3}, {-5, -2, -9, 4, 100000, 100000})}});
  // 4 * 10^10 wraps modulo 2^32.
  EXPECT_EQ(values<int32_t>(out.at("p")),
            (std::vector<int32_t>{-90, static_cast<int32_t>(static_cast<uint32_t>(
                                           4ull * 100000 * 100000 % (1ull << 32)))}));
  EXPECT_EQ(values<int32_t>(out.at("mx")), (std::vector<int32_t>{-2, 100000}));
  EXPECT_EQ(values<int32_t>(out.at("mn")), (std::vector<int32_t>{-5, -2, -9}));
  EXPECT_EQ(values<int32_t>(out.at("all")), (std::vector<int32_t>{199988}));  // no loop left
}

// u64 above 2^63: max starts from 0 and min from 2^64 - 1, not from int64's limits (a max
// starting at INT64_MIN = 2^63 as u64 would win over every smaller value).
TEST_F(RenderC, U64ReductionsStartFromItsOwnLimits) {
  const uint64_t big = (uint64_t{1} << 63) + 5, top = ~uint64_t{0};
  auto out = run(R"(graph @g(%x: u64[2,2], %f: f64[4]) {
  %mx = reduce_max(%x) {axes = [1]} : u64[2]
  %mn = reduce_min(%x) {axes = [1]} : u64[2]
  %c = convert(%f) {dtype = u64} : u64[4]
  return %mx, %mn, %c
}
)",
                 {{"x", tensor<uint64_t>(DType::kU64, {2, 2}, {3, 7, big, top})},
                  {"f", tensor<double>(DType::kF64, {4}, {-3.5, 1e19, 1e30, 12.75})}});
  EXPECT_EQ(values<uint64_t>(out.at("mx")), (std::vector<uint64_t>{7, top}));
  EXPECT_EQ(values<uint64_t>(out.at("mn")), (std::vector<uint64_t>{3, big}));
  EXPECT_EQ(values<uint64_t>(out.at("c")), (std::vector<uint64_t>{0, 10000000000000000000ull, top, 12}));
}

TEST_F(RenderC, PadWritesThePadValueOutsideTheOperand) {
  auto out = run(R"(graph @g(%x: f32[2,2], %v: f32[]) {
  %p = pad(%x, %v) {low = [1, 0], high = [0, 2]} : f32[3,4]
  return %p
}
)",
                 {{"x", f32({2, 2}, {1, 2, 3, 4})}, {"v", f32({}, {-1})}});
  expect_floats(values<float>(out.at("p")), {-1, -1, -1, -1, 1, 2, -1, -1, 3, 4, -1, -1});
}

TEST_F(RenderC, ConcatSelectsTheOperandByRange) {
  auto out = run(R"(graph @g(%a: f32[2,2], %b: f32[2,1], %c: f32[2,2]) {
  %y = concat(%a, %b, %c) {axis = 1} : f32[2,5]
  return %y
}
)",
                 {{"a", f32({2, 2}, {1, 2, 3, 4})},
                  {"b", f32({2, 1}, {5, 6})},
                  {"c", f32({2, 2}, {7, 8, 9, 10})}});
  expect_floats(values<float>(out.at("y")), {1, 2, 5, 7, 8, 3, 4, 6, 9, 10});
}

TEST_F(RenderC, F16AndBF16RoundToNearestEven) {
  // f32 -> f16: ties to even (1+2^-11 -> 1, 1+3*2^-11 -> 1+2^-9), 65520 -> inf, 65519 -> max,
  // 2^-25 -> 0 (tie), 1.5*2^-25 -> smallest subnormal, -0 kept, NaN quiet.
  std::vector<float> to_half = {1 + 0x1p-11f, 1 + 0x3p-11f, 65520, 65519, 0x1p-25f,
                                0x3p-26f,     -0.0f,        kInf,  kNaN};
  // f32 -> bf16: 1+2^-8 ties to 1, 1+3*2^-8 ties to 1+2^-6, just above a tie rounds up.
  std::vector<float> to_bf = {1 + 0x1p-8f, 1 + 0x3p-8f, 1 + 0x1p-8f + 0x1p-20f, 3, kNaN};
  // f16 * f16 in float, rounded once at the store: (1+2^-10)^2 = 1+2^-9+2^-20 -> 1+2^-9.
  std::vector<uint16_t> a = {0x3C01, 0x4000, 0x7BFF, 0x0001};
  std::vector<uint16_t> b = {0x3C01, 0xC200, 0x4000, 0x3800};
  auto out = run(R"(graph @g(%h: f32[9], %f: f32[5], %a: f16[4], %b: f16[4], %w: bf16[2]) {
  %hh = convert(%h) {dtype = f16} : f16[9]
  %bb = convert(%f) {dtype = bf16} : bf16[5]
  %p = mul(%a, %b) : f16[4]
  %wa = convert(%a) {dtype = bf16} : bf16[4]
  %wf = convert(%w) {dtype = f32} : f32[2]
  return %hh, %bb, %p, %wa, %wf
}
)",
                 {{"h", f32({9}, to_half)},
                  {"f", f32({5}, to_bf)},
                  {"a", tensor(DType::kF16, {4}, a)},
                  {"b", tensor(DType::kF16, {4}, b)},
                  {"w", tensor<uint16_t>(DType::kBF16, {2}, {0x3F81, 0xC0A0})}});
  EXPECT_EQ(values<uint16_t>(out.at("hh")),
            (std::vector<uint16_t>{0x3C00, 0x3C02, 0x7C00, 0x7BFF, 0x0000, 0x0001, 0x8000, 0x7C00,
                                   0x7E00}));
  EXPECT_EQ(values<uint16_t>(out.at("bb")),
            (std::vector<uint16_t>{0x3F80, 0x3F82, 0x3F81, 0x4040, 0x7FC0}));
  // 2 * -3 = -6; 65504 * 2 overflows to inf; 2^-24 * 0.5 ties to 0.
  EXPECT_EQ(values<uint16_t>(out.at("p")), (std::vector<uint16_t>{0x3C02, 0xC600, 0x7C00, 0x0000}));
  // f16 -> bf16: 1+2^-10 -> 1, 2, 65504 -> 65536 (0x4780), 2^-24 exactly.
  EXPECT_EQ(values<uint16_t>(out.at("wa")),
            (std::vector<uint16_t>{0x3F80, 0x4000, 0x4780, 0x3380}));
  expect_floats(values<float>(out.at("wf")), {1.0078125f, -5});
  for (size_t i = 0; i < a.size(); ++i)  // and the host's own conversions agree
    EXPECT_EQ(values<uint16_t>(out.at("p"))[i], f32_to_f16(f16_to_f32(a[i]) * f16_to_f32(b[i])));
}

TEST_F(RenderC, F16ChainRoundsAfterEveryOp) {
  // Each f16 op rounds its result, fused or not: 2048 + 1 ties to even (2048), minus 1 is 2047.
  // Rounding only at the store would give 2048.
  auto out = run(R"(graph @g(%x: f16[1], %y: f16[1]) {
  %s = add(%x, %y) : f16[1]
  %d = sub(%s, %y) : f16[1]
  return %d
}
)",
                 {{"x", tensor<uint16_t>(DType::kF16, {1}, {0x6800})},
                  {"y", tensor<uint16_t>(DType::kF16, {1}, {0x3C00})}});
  EXPECT_EQ(values<uint16_t>(out.at("d")), (std::vector<uint16_t>{0x67FF}));
}

TEST_F(RenderC, IntegerArithmeticWrapsAndDivisionByZeroIsZero) {
  const int32_t kMin = INT32_MIN, kMax = INT32_MAX;
  auto out = run(R"(graph @g(%a: i32[7], %b: i32[7]) {
  %q = div(%a, %b) : i32[7]
  %r = rem(%a, %b) : i32[7]
  %s = add(%a, %b) : i32[7]
  %m = mul(%a, %b) : i32[7]
  %n = neg(%a) : i32[7]
  %ab = abs(%a) : i32[7]
  %sg = sign(%a) : i32[7]
  %mx = max(%a, %b) : i32[7]
  %an = and(%a, %b) : i32[7]
  %o = or(%a, %b) : i32[7]
  %x = xor(%a, %b) : i32[7]
  %nt = not(%a) : i32[7]
  return %q, %r, %s, %m, %n, %ab, %sg, %mx, %an, %o, %x, %nt
}
)",
                 {{"a", tensor<int32_t>(DType::kI32, {7}, {7, -7, 7, kMin, 5, kMax, 0})},
                  {"b", tensor<int32_t>(DType::kI32, {7}, {2, 2, 0, -1, -3, 1, 0})}});
  auto v = [&](const char* n) { return values<int32_t>(out.at(n)); };
  using V = std::vector<int32_t>;
  EXPECT_EQ(v("q"), (V{3, -3, 0, kMin, -1, kMax, 0}));  // truncates; /0 -> 0; MIN/-1 wraps
  EXPECT_EQ(v("r"), (V{1, -1, 0, 0, 2, 0, 0}));         // sign of the dividend; %0 -> 0
  EXPECT_EQ(v("s"), (V{9, -5, 7, kMax, 2, kMin, 0}));   // MIN + -1 and MAX + 1 wrap
  EXPECT_EQ(v("m"), (V{14, -14, 0, kMin, -15, kMax, 0}));
  EXPECT_EQ(v("n"), (V{-7, 7, -7, kMin, -5, -kMax, 0}));
  EXPECT_EQ(v("ab"), (V{7, 7, 7, kMin, 5, kMax, 0}));
  EXPECT_EQ(v("sg"), (V{1, -1, 1, -1, 1, 1, 0}));
  EXPECT_EQ(v("mx"), (V{7, 2, 7, -1, 5, kMax, 0}));
  EXPECT_EQ(v("an"), (V{7 & 2, -7 & 2, 0, kMin & -1, 5 & -3, kMax & 1, 0}));
  EXPECT_EQ(v("o"), (V{7 | 2, -7 | 2, 7, -1, 5 | -3, kMax, 0}));
  EXPECT_EQ(v("x"), (V{7 ^ 2, -7 ^ 2, 7, kMin ^ -1, 5 ^ -3, kMax ^ 1, 0}));
  EXPECT_EQ(v("nt"), (V{~7, ~-7, ~7, ~kMin, ~5, ~kMax, ~0}));
}

TEST_F(RenderC, NarrowAndWideIntegers) {
  auto out = run(
      R"(graph @g(%a: i64[3], %b: i64[3], %c: u8[3], %d: u8[3], %e: i8[3], %p: i32[4], %k: i32[4]) {
  %q = div(%a, %b) : i64[3]
  %r = rem(%a, %b) : i64[3]
  %cq = div(%c, %d) : u8[3]
  %cs = add(%c, %d) : u8[3]
  %en = neg(%e) : i8[3]
  %em = mul(%e, %e) : i8[3]
  %pw = pow(%p, %k) : i32[4]
  return %q, %r, %cq, %cs, %en, %em, %pw
}
)",
      {{"a", tensor<int64_t>(DType::kI64, {3}, {INT64_MIN, 9, -9})},
       {"b", tensor<int64_t>(DType::kI64, {3}, {-1, 0, 4})},
       {"c", tensor<uint8_t>(DType::kU8, {3}, {200, 7, 255})},
       {"d", tensor<uint8_t>(DType::kU8, {3}, {100, 0, 1})},
       {"e", tensor<int8_t>(DType::kI8, {3}, {-128, 100, -3})},
       {"p", tensor<int32_t>(DType::kI32, {4}, {2, -2, 3, 2})},
       {"k", tensor<int32_t>(DType::kI32, {4}, {10, 3, -1, 31})}});
  EXPECT_EQ(values<int64_t>(out.at("q")), (std::vector<int64_t>{INT64_MIN, 0, -2}));
  EXPECT_EQ(values<int64_t>(out.at("r")), (std::vector<int64_t>{0, 0, -1}));
  EXPECT_EQ(values<uint8_t>(out.at("cq")), (std::vector<uint8_t>{2, 0, 255}));
  EXPECT_EQ(values<uint8_t>(out.at("cs")), (std::vector<uint8_t>{44, 7, 0}));  // wraps mod 256
  EXPECT_EQ(values<int8_t>(out.at("en")), (std::vector<int8_t>{-128, -100, 3}));
  EXPECT_EQ(values<int8_t>(out.at("em")), (std::vector<int8_t>{0, 16, 9}));  // 10000 mod 256 = 16
  // 3^-1 -> 0; 2^31 wraps to INT32_MIN.
  EXPECT_EQ(values<int32_t>(out.at("pw")), (std::vector<int32_t>{1024, -8, 0, INT32_MIN}));
}

TEST_F(RenderC, ComparisonsSelectAndNaNPropagatingMaxMin) {
  auto out = run(R"(graph @g(%x: f32[5], %y: f32[5]) {
  %lt = lt(%x, %y) : bool[5]
  %eq = eq(%x, %y) : bool[5]
  %ne = ne(%x, %y) : bool[5]
  %ge = ge(%x, %y) : bool[5]
  %s = select(%lt, %x, %y) : f32[5]
  %both = and(%lt, %ne) : bool[5]
  %nb = not(%both) : bool[5]
  %mx = max(%x, %y) : f32[5]
  %mn = min(%x, %y) : f32[5]
  return %lt, %eq, %ne, %ge, %s, %nb, %mx, %mn
}
)",
                 {{"x", f32({5}, {1, 2, kNaN, 4, -0.5f})}, {"y", f32({5}, {2, 2, 1, kNaN, -1})}});
  using B = std::vector<uint8_t>;
  EXPECT_EQ(values<uint8_t>(out.at("lt")), (B{1, 0, 0, 0, 0}));
  EXPECT_EQ(values<uint8_t>(out.at("eq")), (B{0, 1, 0, 0, 0}));
  EXPECT_EQ(values<uint8_t>(out.at("ne")), (B{1, 0, 1, 1, 1}));
  EXPECT_EQ(values<uint8_t>(out.at("ge")), (B{0, 1, 0, 0, 1}));
  EXPECT_EQ(values<uint8_t>(out.at("nb")), (B{0, 1, 1, 1, 1}));
  expect_floats(values<float>(out.at("s")), {1, 2, 1, kNaN, -1});
  expect_floats(values<float>(out.at("mx")), {2, 2, kNaN, kNaN, -0.5f});
  expect_floats(values<float>(out.at("mn")), {1, 2, kNaN, kNaN, -1});
}

TEST_F(RenderC, FloatUnaryOpsAndSaturatingConversions) {
  std::vector<float> x = {0.5f, 1.5f, 2.5f, -0.5f, -2.7f, 3.3f};
  auto out = run(R"(graph @g(%x: f32[6], %p: f32[6], %c: f32[6]) {
  %rnd = round(%x) : f32[6]
  %fl = floor(%x) : f32[6]
  %ce = ceil(%x) : f32[6]
  %sg = sign(%x) : f32[6]
  %ab = abs(%x) : f32[6]
  %ex = exp(%x) : f32[6]
  %ta = tanh(%x) : f32[6]
  %er = erf(%x) : f32[6]
  %si = sin(%x) : f32[6]
  %co = cos(%x) : f32[6]
  %lg = logistic(%x) : f32[6]
  %lo = log(%p) : f32[6]
  %sq = sqrt(%p) : f32[6]
  %rs = rsqrt(%p) : f32[6]
  %pw = pow(%p, %x) : f32[6]
  %rm = rem(%x, %p) : f32[6]
  %ci = convert(%c) {dtype = i32} : i32[6]
  %cu = convert(%c) {dtype = u8} : u8[6]
  %cb = convert(%c) {dtype = bool} : bool[6]
  return %rnd, %fl, %ce, %sg, %ab, %ex, %ta, %er, %si, %co, %lg, %lo, %sq, %rs, %pw, %rm, %ci, %cu, %cb
}
)",
                 {{"x", f32({6}, x)},
                  {"p", f32({6}, {4, 2, 0.25f, 9, 1, 0.3f})},
                  {"c", f32({6}, {1e10f, -1e10f, kNaN, -3.7f, 3.7f, 300})}});
  auto v = [&](const char* n) { return values<float>(out.at(n)); };
  std::vector<float> p = {4, 2, 0.25f, 9, 1, 0.3f};
  auto map1 = [&](auto f, const std::vector<float>& in) {
    std::vector<float> r;
    for (float a : in) r.push_back(f(a));
    return r;
  };
  expect_floats(v("rnd"), {0, 2, 2, -0.0f, -3, 3});  // ties to even
  EXPECT_TRUE(std::signbit(v("rnd")[3]));
  expect_floats(v("fl"), {0, 1, 2, -1, -3, 3});
  expect_floats(v("ce"), {1, 2, 3, -0.0f, -2, 4});
  expect_floats(v("sg"), {1, 1, 1, -1, -1, 1});
  expect_floats(v("ab"), {0.5f, 1.5f, 2.5f, 0.5f, 2.7f, 3.3f});
  expect_floats(v("ex"), map1([](float a) { return std::exp(a); }, x));
  expect_floats(v("ta"), map1([](float a) { return std::tanh(a); }, x));
  expect_floats(v("er"), map1([](float a) { return std::erf(a); }, x));
  expect_floats(v("si"), map1([](float a) { return std::sin(a); }, x));
  expect_floats(v("co"), map1([](float a) { return std::cos(a); }, x));
  expect_floats(v("lg"), map1([](float a) { return 1 / (1 + std::exp(-a)); }, x));
  expect_floats(v("lo"), map1([](float a) { return std::log(a); }, p));
  expect_floats(v("sq"), {2, std::sqrt(2.f), 0.5f, 3, 1, std::sqrt(0.3f)});
  expect_floats(v("rs"), {0.5f, 1 / std::sqrt(2.f), 2, 1 / 3.f, 1, 1 / std::sqrt(0.3f)});
  std::vector<float> pw, rm;
  for (size_t i = 0; i < x.size(); ++i) {
    pw.push_back(std::pow(p[i], x[i]));
    rm.push_back(std::fmod(x[i], p[i]));
  }
  expect_floats(v("pw"), pw);
  expect_floats(v("rm"), rm);
  // Saturating, NaN -> 0, truncating toward zero.
  EXPECT_EQ(values<int32_t>(out.at("ci")),
            (std::vector<int32_t>{INT32_MAX, INT32_MIN, 0, -3, 3, 300}));
  EXPECT_EQ(values<uint8_t>(out.at("cu")), (std::vector<uint8_t>{255, 0, 0, 0, 3, 255}));
  EXPECT_EQ(values<uint8_t>(out.at("cb")), (std::vector<uint8_t>{1, 1, 1, 1, 1, 1}));
}

TEST_F(RenderC, F64ComputesInDouble) {
  auto out = run(R"(graph @g(%x: f64[2,2]) {
  %m = mul(%x, %x) : f64[2,2]
  %s = reduce_sum(%m) {axes = [1]} : f64[2]
  return %s
}
)",
                 {{"x", tensor<double>(DType::kF64, {2, 2}, {1e-200, 1e-200, 0.1, 3})}});
  auto s = values<double>(out.at("s"));
  EXPECT_EQ(s[0], 0.0);  // 1e-400 underflows even in double
  EXPECT_DOUBLE_EQ(s[1], 0.1 * 0.1 + 9);
  EXPECT_NE(s[1], static_cast<double>(0.1f * 0.1f + 9.f));
}

TEST_F(RenderC, IotaThroughATransposeAndAsFloat) {
  auto out = run(R"(graph @g(%x: i32[2,3]) {
  %i = iota() {dim = 1, dtype = i32, shape = [2, 3]} : i32[2,3]
  %y = add(%i, %x) : i32[2,3]
  %j = iota() {dim = 0, dtype = f32, shape = [3, 2]} : f32[3,2]
  %t = transpose(%j) {perm = [1, 0]} : f32[2,3]
  return %y, %t
}
)",
                 {{"x", tensor<int32_t>(DType::kI32, {2, 3}, {10, 10, 10, 20, 20, 20})}},
                 /*optimize=*/false);
  EXPECT_EQ(values<int32_t>(out.at("y")), (std::vector<int32_t>{10, 11, 12, 20, 21, 22}));
  expect_floats(values<float>(out.at("t")), {0, 1, 2, 0, 1, 2});
}

// A kernel written by hand: the LIR forms lowering does not produce today (an index expression
// without an affine map, a guard on a reduced dim) render as lir.h defines them.
TEST_F(RenderC, HandWrittenKernelWithGuardedReduction) {
  lir::Program p;
  p.buffers = {
      {.id = 0,
       .name = "x",
       .dtype = DType::kF32,
       .shape = {2, 4},
       .kind = lir::BufferKind::kInput},
      {.id = 1, .name = "y", .dtype = DType::kF32, .shape = {2}, .kind = lir::BufferKind::kOutput}};
  lir::LoopKernel k;
  k.name = "k0.guarded sum";  // not an identifier: kernel_symbol() fixes it
  k.domain = {2, 4};
  k.num_parallel = 1;
  k.reduce = "sum";
  lir::Expr load{.kind = lir::ExprKind::kLoad, .dtype = DType::kF32};
  load.load = {.buffer = 0, .offset = 0, .strides = {4, 1}, .guards = {{1, 1, 3}}};
  lir::Expr index{.kind = lir::ExprKind::kIndex, .dtype = DType::kF32, .dim = 1};
  lir::Expr mul{.kind = lir::ExprKind::kBinary, .dtype = DType::kF32, .op = "mul", .args = {0, 1}};
  k.exprs = {load, index, mul};
  k.stores = {{.buffer = 1, .expr = 2}};
  p.kernels.push_back(k);
  EXPECT_EQ(kernel_symbol(k), "k0_guarded_sum");

  CLibrary lib(cc_, render_program(p, c_dialect()));
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8}, y(2, -1);
  char* table[] = {reinterpret_cast<char*>(x.data()), reinterpret_cast<char*>(y.data())};
  reinterpret_cast<void (*)(char* const*)>(lib.symbol("k0_guarded_sum"))(table);
  expect_floats(y, {2 * 1 + 3 * 2, 6 * 1 + 7 * 2});  // only columns 1 and 2, times their index
}

// The same renderer with a GPU-style mapping: one call per work-item, one pointer parameter per
// buffer, the global id composed from group and local ids. This is how OpenCL or CUDA dialects
// reuse the renderer, checked here on the CPU by calling the kernel once per work-item.
TEST_F(RenderC, WorkItemDialectRunsOneOutputElementPerCall) {
  Dialect d = c_dialect();
  d.name = "c-work-items";
  d.mapping = DomainMapping::kWorkItemPerOutput;
  d.buffer_params = BufferParams::kOnePerBuffer;
  d.group_id[0] = "group";
  d.group_size[0] = "4";
  d.local_id[0] = "local";
  d.extra_params = {"int64_t group", "int64_t local"};

  Graph g = parse_graph(R"(graph @g(%x: f32[3,5]) {
  %s = reduce_sum(%x) {axes = [0]} : f32[5]
  return %s
}
)");
  lir::Program p = lower_to_lir(g);
  ASSERT_EQ(p.kernels.size(), 1u);
  const auto& k = std::get<lir::LoopKernel>(p.kernels[0]);
  std::string src = d.prelude + render_kernel(k, p, d);
  EXPECT_NE(src.find("if (gid >= 5) { return; }"), std::string::npos) << src;
  ASSERT_EQ(kernel_buffers(k, p), (std::vector<int32_t>{0, 1}));
  ASSERT_EQ(work_items(k), 5);

  CLibrary lib(cc_, src);
  auto fn = reinterpret_cast<void (*)(const float*, float*, int64_t, int64_t)>(
      lib.symbol(kernel_symbol(k)));
  std::vector<float> x(15), y(8, -1);  // y is longer than the output: extra items must not write
  for (int i = 0; i < 15; ++i) x[i] = static_cast<float>(i);
  for (int64_t group = 0; group < 2; ++group)
    for (int64_t local = 0; local < 4; ++local) fn(x.data(), y.data(), group, local);
  expect_floats(y, {15, 18, 21, 24, 27, -1, -1, -1});
}

TEST(RenderCText, LibraryCallsBecomeCommentsAndUnknownTypesAreRefused) {
  Graph g = parse_graph(R"(graph @g(%a: f32[2,3], %b: f32[3,4]) {
  %d = dot_general(%a, %b) {lhs_batch = [], lhs_contract = [1], rhs_batch = [], rhs_contract = [0]} : f32[2,4]
  %y = exp(%d) : f32[2,4]
  return %y
}
)");
  lir::Program p = lower_to_lir(g);
  std::string src = render_program(p, c_dialect());
  EXPECT_NE(src.find("// kernel 0: library call dot_general(b0, b1) -> b2"), std::string::npos)
      << src;
  EXPECT_NE(src.find("void k1_exp(char* const* buffers) {"), std::string::npos) << src;

  lir::Program c;
  c.buffers = {
      {.id = 0, .name = "z", .dtype = DType::kC64, .shape = {2}, .kind = lir::BufferKind::kOutput}};
  lir::LoopKernel k{.name = "k0_zero", .domain = {2}, .num_parallel = 1};
  k.exprs = {{.kind = lir::ExprKind::kConst, .dtype = DType::kC64}};
  k.stores = {{0, 0}};
  try {
    render_kernel(k, c, c_dialect());
    FAIL() << "rendering c64 should fail";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot render kernel k0_zero in dialect c: the dialect has no storage type for c64");
  }
}

}  // namespace
}  // namespace rlx::sdk

namespace rlx::sdk {
namespace {

// The wide unsigned types exist in C (the cpu computes u16/u32 and moves u64); the shader
// dialects built from the C table must not inherit C's spellings of them (uint16_t is no OpenCL
// or GLSL type): they have no rows, so their targets refuse the dtypes.
TEST(DialectTables, WideUnsignedTypesAreCOnly) {
  for (DType t : {DType::kU16, DType::kU32, DType::kU64}) {
    const auto i = static_cast<size_t>(t);
    EXPECT_FALSE(c_dialect().storage_type[i].empty()) << dtype_name(t);
    for (const Dialect* d : {&opencl_dialect(), &glsl_vulkan_dialect(), &glsl_opengl_dialect(),
                             &hlsl_dialect(), &wgsl_dialect()}) {
      EXPECT_TRUE(d->storage_type[i].empty()) << d->name << " " << dtype_name(t);
      EXPECT_TRUE(d->compute_type[i].empty()) << d->name << " " << dtype_name(t);
    }
  }
}

}  // namespace
}  // namespace rlx::sdk
