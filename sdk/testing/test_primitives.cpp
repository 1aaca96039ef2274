// Every elementwise MIR primitive on the cpu target at every dtype it supports, against
// references computed here in double precision (the C library) or by hand, then rounded once to
// the dtype under test.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "rlx/core/half.h"
#include "test_support.h"

namespace rlx {
namespace {

using test::run_text;

const std::vector<double> kX = {-2.0, -0.5, 0.0, 0.5, 2.0, 3.0};
const std::vector<double> kY = {1.5, -0.25, 2.0, 0.5, -3.0, 4.0};

Tensor make(DType d, const std::vector<double>& v) {
  Tensor t(d, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) {
    switch (d) {
      case DType::kF16: t.as<uint16_t>()[i] = f32_to_f16(static_cast<float>(v[i])); break;
      case DType::kBF16: t.as<uint16_t>()[i] = f32_to_bf16(static_cast<float>(v[i])); break;
      case DType::kF32: t.as<float>()[i] = static_cast<float>(v[i]); break;
      case DType::kF64: t.as<double>()[i] = v[i]; break;
      case DType::kI32: t.as<int32_t>()[i] = static_cast<int32_t>(v[i]); break;
      case DType::kI64: t.as<int64_t>()[i] = static_cast<int64_t>(v[i]); break;
      case DType::kBool: t.as<uint8_t>()[i] = v[i] != 0; break;
      default: ADD_FAILURE() << "unsupported dtype in test";
    }
  }
  return t;
}

double round_to(DType d, double v) {
  switch (d) {
    case DType::kF16: return f16_to_f32(f32_to_f16(static_cast<float>(v)));
    case DType::kBF16: return bf16_to_f32(f32_to_bf16(static_cast<float>(v)));
    case DType::kF32: return static_cast<float>(v);
    default: return v;
  }
}

double tolerance(DType d) {
  switch (d) {
    case DType::kF16: return 1e-3;
    case DType::kBF16: return 8e-3;
    case DType::kF32: return 2e-6;
    default: return 1e-13;
  }
}

void expect_close(DType d, const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " [" << i << "] = " << got[i];
      continue;
    }
    if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << what << " [" << i << "]";
      continue;
    }
    EXPECT_NEAR(got[i], want[i], tolerance(d) * std::max(1.0, std::fabs(want[i]))) << what << " [" << i << "]";
  }
}

std::string unary_ir(const std::string& op, DType d) {
  auto t = fmt::format("{}[6]", dtype_name(d));
  return fmt::format("graph @t(%x: {0}) {{\n  %y = {1}(%x) : {0}\n  return %y\n}}\n", t, op);
}

std::string binary_ir(const std::string& op, DType d, DType out) {
  return fmt::format("graph @t(%x: {0}[6], %y: {0}[6]) {{\n  %z = {1}(%x, %y) : {2}[6]\n  return %z\n}}\n",
                     dtype_name(d), op, dtype_name(out));
}

struct FloatUnary {
  const char* op;
  std::function<double(double)> ref;
};

const std::vector<FloatUnary> kFloatUnary = {
    {"neg", [](double x) { return -x; }},
    {"abs", [](double x) { return std::fabs(x); }},
    {"sign", [](double x) { return double((x > 0) - (x < 0)); }},
    {"exp", [](double x) { return std::exp(x); }},
    {"log", [](double x) { return std::log(x); }},
    {"sqrt", [](double x) { return std::sqrt(x); }},
    {"rsqrt", [](double x) { return 1 / std::sqrt(x); }},
    {"tanh", [](double x) { return std::tanh(x); }},
    {"erf", [](double x) { return std::erf(x); }},
    {"sin", [](double x) { return std::sin(x); }},
    {"cos", [](double x) { return std::cos(x); }},
    {"floor", [](double x) { return std::floor(x); }},
    {"ceil", [](double x) { return std::ceil(x); }},
    {"round", [](double x) { return std::nearbyint(x); }},  // ties to even: -0.5 -> -0, 0.5 -> 0
    {"logistic", [](double x) { return 1 / (1 + std::exp(-x)); }},
};

struct FloatBinary {
  const char* op;
  std::function<double(double, double)> ref;
};

const std::vector<FloatBinary> kFloatBinary = {
    {"add", [](double a, double b) { return a + b; }},
    {"sub", [](double a, double b) { return a - b; }},
    {"mul", [](double a, double b) { return a * b; }},
    {"div", [](double a, double b) { return a / b; }},
    {"max", [](double a, double b) { return std::max(a, b); }},
    {"min", [](double a, double b) { return std::min(a, b); }},
    {"pow", [](double a, double b) { return std::pow(a, b); }},
    {"rem", [](double a, double b) { return std::fmod(a, b); }},
};

const DType kFloats[] = {DType::kF32, DType::kF64, DType::kF16, DType::kBF16};

TEST(CpuPrimitives, FloatUnaryOpsAtEveryFloatDtype) {
  for (DType d : kFloats) {
    for (const auto& c : kFloatUnary) {
      auto out = run_text(unary_ir(c.op, d), {{"x", make(d, kX)}});
      std::vector<double> want;
      for (double x : kX) want.push_back(round_to(d, c.ref(round_to(d, x))));
      expect_close(d, test::values(out.at("y")), want, fmt::format("{} {}", c.op, dtype_name(d)));
    }
  }
}

TEST(CpuPrimitives, FloatBinaryOpsAtEveryFloatDtype) {
  for (DType d : kFloats) {
    for (const auto& c : kFloatBinary) {
      auto out = run_text(binary_ir(c.op, d, d), {{"x", make(d, kX)}, {"y", make(d, kY)}});
      std::vector<double> want;
      for (size_t i = 0; i < kX.size(); ++i) want.push_back(round_to(d, c.ref(kX[i], kY[i])));
      expect_close(d, test::values(out.at("z")), want, fmt::format("{} {}", c.op, dtype_name(d)));
    }
  }
}

TEST(CpuPrimitives, ComparisonsYieldBool) {
  const std::vector<std::pair<const char*, std::function<bool(double, double)>>> cases = {
      {"eq", [](double a, double b) { return a == b; }}, {"ne", [](double a, double b) { return a != b; }},
      {"lt", [](double a, double b) { return a < b; }},  {"le", [](double a, double b) { return a <= b; }},
      {"gt", [](double a, double b) { return a > b; }},  {"ge", [](double a, double b) { return a >= b; }}};
  std::vector<double> y = {-2.0, 1.0, 0.0, 0.25, 2.0, 5.0};
  for (DType d : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kI32, DType::kI64}) {
    for (auto& [op, ref] : cases) {
      auto out = run_text(binary_ir(op, d, DType::kBool), {{"x", make(d, kX)}, {"y", make(d, y)}});
      EXPECT_EQ(out.at("z").dtype(), DType::kBool);
      std::vector<double> want;
      for (size_t i = 0; i < kX.size(); ++i) {
        double a = is_integer(d) ? std::trunc(kX[i]) : kX[i];
        double b = is_integer(d) ? std::trunc(y[i]) : y[i];
        want.push_back(ref(a, b));
      }
      EXPECT_EQ(test::values(out.at("z")), want) << op << " " << dtype_name(d);
    }
  }
}

TEST(CpuPrimitives, IntegerArithmeticTruncatesAndDivisionByZeroGivesZero) {
  std::vector<double> a = {-7, -1, 0, 3, 8, 100}, b = {2, -3, 5, 0, 3, -7};
  const std::vector<std::pair<const char*, std::vector<double>>> cases = {
      {"add", {-5, -4, 5, 3, 11, 93}},   {"sub", {-9, 2, -5, 3, 5, 107}},
      {"mul", {-14, 3, 0, 0, 24, -700}}, {"div", {-3, 0, 0, 0, 2, -14}},
      {"rem", {-1, -1, 0, 0, 2, 2}},     {"max", {2, -1, 5, 3, 8, 100}},
      {"min", {-7, -3, 0, 0, 3, -7}},    {"and", {-7 & 2, -1 & -3, 0 & 5, 3 & 0, 8 & 3, 100 & -7}},
      {"or", {-7 | 2, -1 | -3, 0 | 5, 3 | 0, 8 | 3, 100 | -7}},
      {"xor", {-7 ^ 2, -1 ^ -3, 0 ^ 5, 3 ^ 0, 8 ^ 3, 100 ^ -7}}};
  for (DType d : {DType::kI32, DType::kI64})
    for (auto& [op, want] : cases) {
      auto out = run_text(binary_ir(op, d, d), {{"x", make(d, a)}, {"y", make(d, b)}});
      EXPECT_EQ(test::values(out.at("z")), want) << op << " " << dtype_name(d);
    }
}

TEST(CpuPrimitives, IntegerUnaryAndWrapAround) {
  auto out = run_text(unary_ir("neg", DType::kI32), {{"x", make(DType::kI32, {-7, -1, 0, 3, 8, 100})}});
  EXPECT_EQ(test::values(out.at("y")), (std::vector<double>{7, 1, 0, -3, -8, -100}));
  out = run_text(unary_ir("abs", DType::kI64), {{"x", make(DType::kI64, {-7, -1, 0, 3, 8, 100})}});
  EXPECT_EQ(test::values(out.at("y")), (std::vector<double>{7, 1, 0, 3, 8, 100}));
  out = run_text(unary_ir("not", DType::kBool), {{"x", make(DType::kBool, {1, 0, 1, 1, 0, 0})}});
  EXPECT_EQ(test::values(out.at("y")), (std::vector<double>{0, 1, 0, 0, 1, 1}));
  // i32 wraps: 2^31 - 1 + 1 = -2^31.
  Tensor big = Tensor::from<int32_t>(DType::kI32, {1}, {2147483647});
  Tensor one = Tensor::from<int32_t>(DType::kI32, {1}, {1});
  out = run_text("graph @t(%x: i32[1], %y: i32[1]) {\n  %z = add(%x, %y) : i32[1]\n  return %z\n}\n",
                 {{"x", big}, {"y", one}});
  EXPECT_EQ(out.at("z").as<int32_t>()[0], -2147483647 - 1);
}

TEST(CpuPrimitives, LogicalOpsOnBool) {
  std::vector<double> a = {1, 1, 0, 0, 1, 0}, b = {1, 0, 1, 0, 1, 1};
  auto run = [&](const char* op) {
    return test::values(run_text(binary_ir(op, DType::kBool, DType::kBool),
                                 {{"x", make(DType::kBool, a)}, {"y", make(DType::kBool, b)}}).at("z"));
  };
  EXPECT_EQ(run("and"), (std::vector<double>{1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(run("or"), (std::vector<double>{1, 1, 1, 0, 1, 1}));
  EXPECT_EQ(run("xor"), (std::vector<double>{0, 1, 1, 0, 0, 1}));
}

TEST(CpuPrimitives, ConvertRoundsTruncatesAndSaturatesAsDocumented) {
  std::vector<double> x = {-2.7, -0.5, 0.0, 0.5, 2.7, 65519.0};
  auto conv = [&](DType to) {
    std::string ir = fmt::format("graph @t(%x: f32[6]) {{\n  %y = convert(%x) {{dtype = {0}}} : {0}[6]\n  return %y\n}}\n", dtype_name(to));
    return test::values(run_text(ir, {{"x", make(DType::kF32, x)}}).at("y"));
  };
  EXPECT_EQ(conv(DType::kI32), (std::vector<double>{-2, 0, 0, 0, 2, 65519}));  // toward zero
  EXPECT_EQ(conv(DType::kBool), (std::vector<double>{1, 1, 0, 1, 1, 1}));
  auto h = conv(DType::kF16);
  EXPECT_EQ(h[0], f16_to_f32(f32_to_f16(-2.7f)));
  EXPECT_EQ(h[5], 65504.0);  // 65519 rounds to the largest finite f16
  auto bf = conv(DType::kBF16);
  EXPECT_EQ(bf[4], bf16_to_f32(f32_to_bf16(2.7f)));
}

// f32 -> f16 rounds to nearest, ties to even, on every target, whatever its kernel language
// converts with (the GPU's instructions, OpenCL's vstore_half_rte, a port of the host's code):
// ties at normal and subnormal exponents, the overflow threshold, signed zeros, infinities and
// NaN, then a sweep over f16's whole range, against GCC's _Float16 conversion.
TEST(CpuPrimitives, HalfRoundingIsToNearestEven) {
  std::vector<float> x = {1.0f + 0x1p-11f,
                          1.0f + 3 * 0x1p-11f,
                          -1.0f - 0x1p-11f,
                          0x1p-25f,
                          3 * 0x1p-25f,
                          0x1p-24f,
                          0x1.8p-24f,
                          0x1p-26f,
                          65519.0f,
                          65520.0f,
                          -65520.0f,
                          1e10f,
                          -0.0f,
                          0.0f,
                          INFINITY,
                          -INFINITY,
                          NAN,
                          0x1.ffep-15f,
                          0x1p-14f,
                          2049.0f,
                          2051.0f,
                          -3.0e-5f,
                          6.1e-5f,
                          0.1f};
  for (int i = 0; i < 4000; ++i)  // |x| from 2^-26 to 2^16, mantissas that are not ties
    x.push_back((i % 2 ? -1.0f : 1.0f) *
                std::ldexp(1.0f + 0.61803398f * (i % 97) / 97.0f, -26 + i % 43));
  const int64_t n = static_cast<int64_t>(x.size());
  const std::string ir = fmt::format(
      "graph @t(%x: f32[{0}]) {{\n  %h = convert(%x) {{dtype = f16}} : f16[{0}]\n"
      "  %y = convert(%h) {{dtype = f32}} : f32[{0}]\n  return %y\n}}\n",
      n);
  if (!test::compile_error(ir, test::target_under_test()).empty()) GTEST_SKIP() << "no f16";
  std::vector<double> in(x.begin(), x.end());
  auto got = test::values(run_text(ir, {{"x", make(DType::kF32, in)}}).at("y"));
  int wrong = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double want = static_cast<double>(static_cast<_Float16>(x[i]));
    const bool same = std::isnan(want)
                          ? std::isnan(got[i])
                          : got[i] == want && std::signbit(got[i]) == std::signbit(want);
    if (!same && ++wrong <= 8)
      ADD_FAILURE() << "f16 of " << std::hexfloat << x[i] << " is " << got[i] << ", not " << want;
  }
  EXPECT_EQ(wrong, 0);
}

// Every f16 value but the NaNs (subnormals, both zeros, both infinities) widens to f32 exactly.
TEST(CpuPrimitives, EveryHalfWidensExactly) {
  Tensor h(DType::kF16, {63490});
  std::vector<double> want;
  for (uint32_t bits = 0; bits < 0x10000u; ++bits) {
    if ((bits & 0x7C00u) == 0x7C00u && (bits & 0x3FFu) != 0) continue;  // NaN
    _Float16 v;
    const uint16_t b = static_cast<uint16_t>(bits);
    std::memcpy(&v, &b, 2);
    h.as<uint16_t>()[want.size()] = b;
    want.push_back(static_cast<double>(v));
  }
  ASSERT_EQ(want.size(), 63490u);
  const std::string ir =
      "graph @t(%x: f16[63490]) {\n  %y = convert(%x) {dtype = f32} : f32[63490]\n"
      "  return %y\n}\n";
  if (!test::compile_error(ir, test::target_under_test()).empty()) GTEST_SKIP() << "no f16";
  auto got = test::values(run_text(ir, {{"x", h}}).at("y"));
  int wrong = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if ((got[i] != want[i] || std::signbit(got[i]) != std::signbit(want[i])) && ++wrong <= 8)
      ADD_FAILURE() << "f16 bits " << std::hex << h.as<uint16_t>()[i] << " widen to "
                    << std::hexfloat << got[i] << ", not " << want[i];
  EXPECT_EQ(wrong, 0);
}

// Out of range, a float saturates at the destination's limits and NaN gives 0 (docs/ir.md), on
// every target: each integer dtype the target takes, from f32.
TEST(CpuPrimitives, ConvertSaturatesAtTheDestinationsRange) {
  const std::vector<double> x = {3e9, -3e9, NAN, 1e30, -1e30, -1.5, 300.5, 2.9};
  struct Want {
    DType to;
    std::vector<double> values;
  };
  const double i64_max = 9223372036854775807.0, u64_max = 18446744073709551615.0;
  const std::vector<Want> wants = {
      {DType::kI32, {2147483647, -2147483648.0, 0, 2147483647, -2147483648.0, -1, 300, 2}},
      {DType::kU32, {3e9, 0, 0, 4294967295.0, 0, 0, 300, 2}},
      {DType::kI16, {32767, -32768, 0, 32767, -32768, -1, 300, 2}},
      {DType::kU8, {255, 0, 0, 255, 0, 0, 255, 2}},
      {DType::kI8, {127, -128, 0, 127, -128, -1, 127, 2}},
      {DType::kI64, {3e9, -3e9, 0, i64_max, -i64_max - 1, -1, 300, 2}},
      {DType::kU64, {3e9, 0, 0, u64_max, 0, 0, 300, 2}},
  };
  int checked = 0;
  for (const Want& w : wants) {
    const std::string ir = fmt::format(
        "graph @t(%x: f32[8]) {{\n  %y = convert(%x) {{dtype = {0}}} : {0}[8]\n  return %y\n}}\n",
        dtype_name(w.to));
    if (!test::compile_error(ir, test::target_under_test()).empty()) continue;  // refused by name
    NamedTensors out;
    try {
      out = run_text(ir, {{"x", make(DType::kF32, x)}});
    } catch (const std::exception& e) {
      // Some kernel languages find a storage type missing only when the kernel is written; the
      // error names it.
      EXPECT_NE(std::string(e.what()).find(dtype_name(w.to)), std::string::npos) << e.what();
      continue;
    }
    EXPECT_EQ(test::values(out.at("y")), w.values) << dtype_name(w.to);
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

// Reductions of many elements into few outputs run as partial results over chunks of one
// reduced dim, then their reduction (core/src/passes/split_reduction.h): every reduction kind,
// over all dims and over two of three, against sums and extremes taken here in double.
TEST(CpuPrimitives, LongReductionsIntoFewOutputs) {
  const int64_t a = 3, b = 1024, c = 70;
  std::vector<double> x(static_cast<size_t>(a * b * c)), xi(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = std::sin(0.37 * static_cast<double>(i)) * 2 + 0.25;
    xi[i] = static_cast<double>(i % 7) - 3;
  }
  const std::string ir = fmt::format(R"(graph @t(%x: f32[{0},{1},{2}], %i: i32[{0},{1},{2}]) {{
  %s = reduce_sum(%x) {{axes = [0, 1, 2]}} : f32[]
  %m = reduce_max(%x) {{axes = [0, 1, 2]}} : f32[]
  %n = reduce_min(%x) {{axes = [1, 2]}} : f32[{0}]
  %r = reduce_sum(%x) {{axes = [1, 2]}} : f32[{0}]
  %k = reduce_sum(%i) {{axes = [0, 1, 2]}} : i32[]
  return %s, %m, %n, %r, %k
}}
)",
                                     a, b, c);
  std::vector<float> xf(x.begin(), x.end());
  Tensor ti(DType::kI32, {a, b, c});
  for (size_t i = 0; i < xi.size(); ++i) ti.as<int32_t>()[i] = static_cast<int32_t>(xi[i]);
  auto out = run_text(ir, {{"x", test::f32({a, b, c}, xf)}, {"i", ti}});
  double sum = 0, top = -1e9, isum = 0;
  std::vector<double> low(a, 1e9), rows(a, 0);
  for (size_t i = 0; i < x.size(); ++i) {
    const auto f = static_cast<double>(static_cast<float>(x[i]));
    sum += f, top = std::max(top, f), isum += xi[i];
    low[i / (b * c)] = std::min(low[i / (b * c)], f);
    rows[i / (b * c)] += f;
  }
  EXPECT_NEAR(test::values(out.at("s"))[0], sum, 1e-5 * x.size());
  EXPECT_EQ(test::values(out.at("m"))[0], top);
  EXPECT_EQ(test::values(out.at("n")), low);
  for (int64_t j = 0; j < a; ++j) EXPECT_NEAR(test::values(out.at("r"))[j], rows[j], 1e-5 * b * c);
  EXPECT_EQ(test::values(out.at("k"))[0], isum);
}

TEST(CpuPrimitives, SelectPicksPerElement) {
  auto out = run_text(
      "graph @t(%p: bool[4], %a: f32[4], %b: f32[4]) {\n  %y = select(%p, %a, %b) : f32[4]\n  return %y\n}\n",
      {{"p", make(DType::kBool, {1, 0, 0, 1})}, {"a", test::f32({4}, {1, 2, 3, 4})}, {"b", test::f32({4}, {-1, -2, -3, -4})}});
  EXPECT_EQ(test::values(out.at("y")), (std::vector<double>{1, -2, -3, 4}));
}

TEST(CpuPrimitives, NanPropagatesThroughMaxAndMin) {
  auto out = run_text(binary_ir("max", DType::kF32, DType::kF32),
                      {{"x", make(DType::kF32, {NAN, 1, 2, 3, 4, 5})}, {"y", make(DType::kF32, {0, NAN, 1, 1, 1, 1})}});
  auto v = test::values(out.at("z"));
  EXPECT_TRUE(std::isnan(v[0]) && std::isnan(v[1]));
  EXPECT_EQ(v[2], 2);
}

}  // namespace
}  // namespace rlx
