// split-i64 on the cpu target with its 64-bit integers taken away (what WebGPU in browsers is):
// sums that carry between the words, comparisons, conversions, token ids through a gather and
// i64 outputs, exactly as cpu computes them in i64; an index that does not fit 32 bits is an
// error, never a wrap.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <limits>

#include "rlx/core/dispatch.h"
#include "rlx/core/error.h"
#include "rlx/core/ir_text.h"
#include "test_support.h"

namespace rlx {
namespace {

bool uses_i64(const NodeSignature& s) {
  for (const auto* l : {&s.inputs, &s.outputs})
    for (const TensorType& t : *l)
      if (t.dtype == DType::kI64) return true;
  return false;
}

// The cpu target without 64-bit integers (bitcast aside, the view that reaches the words).
std::shared_ptr<Target> cpu_without_int64() {
  return test::cpu_refusing([](const NodeSignature& s, bool native) -> std::optional<std::string> {
    if (uses_i64(s) && (native || s.op != "bitcast")) return "the test target has no i64";
    return std::nullopt;
  });
}

Tensor i64(std::vector<int64_t> shape, std::vector<int64_t> v) {
  return Tensor::from<int64_t>(DType::kI64, std::move(shape), v);
}

std::vector<int64_t> ints(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::kI64);
  return std::vector<int64_t>(t.as<int64_t>(), t.as<int64_t>() + t.numel());
}

constexpr int64_t kBig = int64_t{1} << 40;

TEST(Int64Words, ArithmeticAndComparisonsMatchTheCpusI64) {
  const char* ir = R"(graph @t(%a: i64[6], %b: i64[6]) {
  %s = add(%a, %b) : i64[6]
  %d = sub(%a, %b) : i64[6]
  %n = neg(%a) : i64[6]
  %m = max(%a, %b) : i64[6]
  %lt = lt(%a, %b) : bool[6]
  %ge = ge(%a, %b) : bool[6]
  %eq = eq(%a, %b) : bool[6]
  %f = convert(%a) {dtype = f32} : f32[6]
  %w = convert(%a) {dtype = i32} : i32[6]
  %k = add(%a, %b) : i64[6]
  %c = iota() {shape = [6], dim = 0, dtype = i64} : i64[6]
  %kc = add(%k, %c) : i64[6]
  %p = mul(%a, %b) : i64[6]
  %q = mul(%p, %b) : i64[6]
  %rs = reduce_sum(%a) {axes = [0]} : i64[]
  %rx = reduce_max(%a) {axes = [0]} : i64[]
  %rn = reduce_min(%b) {axes = [0]} : i64[]
  return %s, %d, %n, %m, %lt, %ge, %eq, %f, %w, %kc, %p, %q, %rs, %rx, %rn
}
)";
  // Carries and borrows across the words, signs on both sides of zero, values past 2^32.
  NamedTensors in = {{"a", i64({6}, {4294967295, -1, kBig + 7, -kBig, 5, INT64_MIN + 3})},
                     {"b", i64({6}, {1, 1, -8, kBig, 5, -2})}};
  NamedTensors want = test::run_text(ir, in, test::cpu_target());
  auto words = cpu_without_int64();
  NamedTensors got = test::run_text(ir, in, words);
  for (const char* name : {"s", "d", "n", "m", "kc", "p", "q", "rs", "rx", "rn"})
    EXPECT_EQ(ints(got.at(name)), ints(want.at(name))) << name;
  for (const char* name : {"lt", "ge", "eq", "w"})
    EXPECT_EQ(test::values(got.at(name)), test::values(want.at(name))) << name;
  // hi * 2^32 + lo rounds twice where cpu rounds once: within one f32 ulp.
  auto f = test::values(got.at("f")), fw = test::values(want.at("f"));
  for (size_t i = 0; i < f.size(); ++i) EXPECT_NEAR(f[i], fw[i], std::abs(fw[i]) * 1.2e-7) << i;
  DispatchResult r = dispatch(parse_graph(ir), *words);
  for (const DispatchEntry& e : r.report.entries) {
    EXPECT_EQ(e.path, LoweringPath::kRewritten) << e.op;
    EXPECT_EQ(e.detail, "split-i64") << e.op;
  }
}

TEST(Int64Words, TokenIdsReachAGatherAndAnIndexPast32BitsIsAnError) {
  const char* fixed = R"(graph @t(%table: f32[5,2], %ids: i64[3]) {
  %rows = gather(%table, %ids) {axis = 0} : f32[3,2]
  return %rows
}
)";
  auto words = cpu_without_int64();
  Tensor table = test::f32({5, 2}, {0, 1, 10, 11, 20, 21, 30, 31, 40, 41});
  NamedTensors out =
      test::run_text(fixed, {{"table", table}, {"ids", i64({3}, {4, 0, -1})}}, words);
  EXPECT_EQ(test::values(out.at("rows")), (std::vector<double>{40, 41, 0, 1, 40, 41}));
  // 2^32 + 1 would be row 1 if the high word were dropped.
  try {
    test::run_text(fixed, {{"table", table}, {"ids", i64({3}, {0, (int64_t{1} << 32) + 1, 2})}},
                   words);
    FAIL() << "an index of 2^32 + 1 was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of range for an axis of size 5"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("position 1"), std::string::npos) << e.what();
  }
}

TEST(Int64Words, ConstantsAndMovesKeepBothWords) {
  const char* ir = R"(graph @t(%a: i64[2,2]) {
  %t = transpose(%a) {perm = [1, 0]} : i64[2,2]
  %c = constant() {value = dense<i64[2,2]: [4294967296, -4294967297, 3, -1]>} : i64[2,2]
  %j = concat(%t, %c) {axis = 0} : i64[4,2]
  %b = convert(%j) {dtype = bool} : bool[4,2]
  return %j, %a, %b
}
)";
  NamedTensors in = {{"a", i64({2, 2}, {kBig, -kBig, 1, 0})}};
  NamedTensors got = test::run_text(ir, in, cpu_without_int64());
  EXPECT_EQ(ints(got.at("j")),
            (std::vector<int64_t>{kBig, 1, -kBig, 0, 4294967296, -4294967297, 3, -1}));
  EXPECT_EQ(ints(got.at("a")), ints(in.at("a")));
  EXPECT_EQ(test::values(got.at("b")), (std::vector<double>{1, 1, 1, 0, 1, 1, 1, 1}));
}

// Quotients and remainders on words against C's i64 ones, over every pair of dividends and
// divisors of all sizes and signs: the extremes, powers of two and their neighbours, values
// whose f32 estimates round, division by 0 (0) and INT64_MIN / -1 (wraps).
TEST(Int64Words, QuotientsAndRemaindersMatchCsI64) {
  const int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  const std::vector<int64_t> values = {kMin,          kMin + 1,      kMax,        kMax - 1,
                                       0,             1,             -1,          2,
                                       3,             -7,            4294967295,  4294967296,
                                       -4294967297,   kBig + 12345,  -kBig - 3,   1000000007,
                                       (int64_t{1} << 62) + 1,       -(int64_t{1} << 53) - 1,
                                       123456789012345678,           -987654321987654321};
  std::vector<int64_t> a, b, want_q, want_r;
  for (int64_t n : values)
    for (int64_t d : values) {
      a.push_back(n), b.push_back(d);
      if (d == 0) {
        want_q.push_back(0), want_r.push_back(0);
      } else if (d == -1) {  // the cpu's kernel: negation with wrap, remainder 0
        want_q.push_back(static_cast<int64_t>(0 - static_cast<uint64_t>(n))), want_r.push_back(0);
      } else {
        want_q.push_back(n / d), want_r.push_back(n % d);
      }
    }
  const int64_t count = static_cast<int64_t>(a.size());
  const std::string ir = fmt::format(R"(graph @t(%a: i64[{0}], %b: i64[{0}]) {{
  %q = div(%a, %b) : i64[{0}]
  %r = rem(%a, %b) : i64[{0}]
  return %q, %r
}}
)",
                                     count);
  NamedTensors in = {{"a", i64({count}, a)}, {"b", i64({count}, b)}};
  NamedTensors got = test::run_text(ir, in, cpu_without_int64());
  const std::vector<int64_t> q = ints(got.at("q")), r = ints(got.at("r"));
  for (int64_t i = 0; i < count; ++i) {
    EXPECT_EQ(q[i], want_q[i]) << a[i] << " / " << b[i];
    EXPECT_EQ(r[i], want_r[i]) << a[i] << " % " << b[i];
  }
  // The same program on the cpu's own i64 kernels.
  NamedTensors native = test::run_text(ir, in, test::cpu_target());
  EXPECT_EQ(ints(native.at("q")), want_q);
  EXPECT_EQ(ints(native.at("r")), want_r);
}

}  // namespace
}  // namespace rlx
