// Shape, reduction, contraction, indexing and control-flow primitives on the cpu target, each
// against a naive loop written here.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <numeric>

#include "rlx/core/error.h"
#include "rlx/core/ir_text.h"
#include "test_support.h"

namespace rlx {
namespace {

using test::f32;
using test::run_text;
using test::values;

std::vector<float> iota_values(int n, float start = 0) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

TEST(CpuStructural, BroadcastInDimStretchesSizeOneDims) {
  auto out = run_text(
      "graph @t(%x: f32[3,1]) {\n  %y = broadcast_in_dim(%x) {dims = [1, 2], shape = [2, 3, 4]} : f32[2,3,4]\n  return %y\n}\n",
      {{"x", f32({3, 1}, {1, 2, 3})}});
  auto v = values(out.at("y"));
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 4; ++c) EXPECT_EQ(v[(a * 3 + b) * 4 + c], b + 1);
}

TEST(CpuStructural, TransposeAndReshapeCompose) {
  auto out = run_text(
      "graph @t(%x: f32[2,3,4]) {\n  %t = transpose(%x) {perm = [2, 0, 1]} : f32[4,2,3]\n"
      "  %r = reshape(%t) {shape = [8, 3]} : f32[8,3]\n  %y = neg(%r) : f32[8,3]\n  return %y\n}\n",
      {{"x", f32({2, 3, 4}, iota_values(24))}});
  auto v = values(out.at("y"));
  for (int c = 0; c < 4; ++c)
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 3; ++b) EXPECT_EQ(v[(c * 2 + a) * 3 + b], -((a * 3 + b) * 4 + c));
}

TEST(CpuStructural, StridedSlice) {
  auto out = run_text(
      "graph @t(%x: f32[4,5]) {\n  %y = slice(%x) {limit = [4, 5], start = [1, 0], strides = [2, 2]} : f32[2,3]\n  return %y\n}\n",
      {{"x", f32({4, 5}, iota_values(20))}});
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{5, 7, 9, 15, 17, 19}));
}

TEST(CpuStructural, ConcatAndPad) {
  auto out = run_text(
      "graph @t(%a: f32[2,2], %b: f32[2,1], %p: f32[]) {\n  %c = concat(%a, %b) {axis = 1} : f32[2,3]\n"
      "  %y = pad(%c, %p) {high = [0, 2], low = [1, 0]} : f32[3,5]\n  return %y\n}\n",
      {{"a", f32({2, 2}, {1, 2, 3, 4})}, {"b", f32({2, 1}, {5, 6})}, {"p", f32({}, {-1})}});
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{-1, -1, -1, -1, -1, 1, 2, 5, -1, -1, 3, 4, 6, -1, -1}));
}

TEST(CpuStructural, ReductionsOverEachAxis) {
  std::vector<float> x(24);
  for (int i = 0; i < 24; ++i) x[i] = static_cast<float>((i * 7) % 11) - 5;
  const int dims[3] = {2, 3, 4};
  for (const char* kind : {"sum", "max", "min", "prod"}) {
    for (int axis = 0; axis < 3; ++axis) {
      std::vector<int> out_dims;
      for (int d = 0; d < 3; ++d)
        if (d != axis) out_dims.push_back(dims[d]);
      std::string ir = fmt::format(
          "graph @t(%x: f32[2,3,4]) {{\n  %y = reduce_{}(%x) {{axes = [{}]}} : f32[{},{}]\n  return %y\n}}\n", kind,
          axis, out_dims[0], out_dims[1]);
      auto got = values(run_text(ir, {{"x", f32({2, 3, 4}, x)}}).at("y"));
      std::vector<double> want(out_dims[0] * out_dims[1]);
      for (int o = 0; o < out_dims[0] * out_dims[1]; ++o) {
        double acc = std::string(kind) == "sum" ? 0 : std::string(kind) == "prod" ? 1 : std::string(kind) == "max" ? -1e30 : 1e30;
        for (int r = 0; r < dims[axis]; ++r) {
          int idx[3], oo[2] = {o / out_dims[1], o % out_dims[1]}, k = 0;
          for (int d = 0; d < 3; ++d) idx[d] = d == axis ? r : oo[k++];
          double v = x[(idx[0] * 3 + idx[1]) * 4 + idx[2]];
          std::string s = kind;
          acc = s == "sum" ? acc + v : s == "prod" ? acc * v : s == "max" ? std::max(acc, v) : std::min(acc, v);
        }
        want[o] = acc;
      }
      EXPECT_EQ(got, want) << kind << " axis " << axis;
    }
  }
  auto all = values(run_text("graph @t(%x: f32[2,3,4]) {\n  %y = reduce_sum(%x) {axes = [0, 2]} : f32[3]\n  return %y\n}\n",
                             {{"x", f32({2, 3, 4}, iota_values(24))}}).at("y"));
  EXPECT_EQ(all, (std::vector<double>{0 + 1 + 2 + 3 + 12 + 13 + 14 + 15, 4 + 5 + 6 + 7 + 16 + 17 + 18 + 19,
                                      8 + 9 + 10 + 11 + 20 + 21 + 22 + 23}));
}

TEST(CpuStructural, DotGeneralWithBatchDims) {
  // lhs [b=2, k=3, m=2], rhs [b=2, n=2, k=3]; contract k, batch b -> [2, m, n].
  std::vector<float> a = iota_values(12, 1), b = iota_values(12, -6);
  auto out = run_text(
      "graph @t(%a: f32[2,3,2], %b: f32[2,2,3]) {\n"
      "  %y = dot_general(%a, %b) {lhs_batch = [0], lhs_contract = [1], rhs_batch = [0], rhs_contract = [2]} : f32[2,2,2]\n"
      "  return %y\n}\n",
      {{"a", f32({2, 3, 2}, a)}, {"b", f32({2, 2, 3}, b)}});
  std::vector<double> want;
  for (int bb = 0; bb < 2; ++bb)
    for (int m = 0; m < 2; ++m)
      for (int n = 0; n < 2; ++n) {
        double s = 0;
        for (int k = 0; k < 3; ++k) s += a[(bb * 3 + k) * 2 + m] * b[(bb * 2 + n) * 3 + k];
        want.push_back(s);
      }
  EXPECT_EQ(values(out.at("y")), want);
}

TEST(CpuStructural, DotGeneralAtF16AndI64) {
  auto h = run_text(
      "graph @t(%a: f32[2,3], %b: f32[3,2]) {\n  %ah = convert(%a) {dtype = f16} : f16[2,3]\n"
      "  %bh = convert(%b) {dtype = f16} : f16[3,2]\n"
      "  %y = dot_general(%ah, %bh) {lhs_batch = [], lhs_contract = [1], rhs_batch = [], rhs_contract = [0]} : f16[2,2]\n"
      "  return %y\n}\n",
      {{"a", f32({2, 3}, {1, 2, 3, 4, 5, 6})}, {"b", f32({3, 2}, {1, 0.5, -1, 2, 0.25, 1})}});
  EXPECT_EQ(values(h.at("y")), (std::vector<double>{1 - 2 + 0.75, 0.5 + 4 + 3, 4 - 5 + 1.5, 2 + 10 + 6}));
  auto i = run_text(
      "graph @t(%a: i64[2,2], %b: i64[2,2]) {\n"
      "  %y = dot_general(%a, %b) {lhs_batch = [], lhs_contract = [1], rhs_batch = [], rhs_contract = [0]} : i64[2,2]\n"
      "  return %y\n}\n",
      {{"a", Tensor::from<int64_t>(DType::kI64, {2, 2}, {1, 2, 3, 4})}, {"b", Tensor::from<int64_t>(DType::kI64, {2, 2}, {5, 6, 7, 8})}});
  EXPECT_EQ(values(i.at("y")), (std::vector<double>{19, 22, 43, 50}));
}

TEST(CpuStructural, GatherTakesRowsAndAcceptsNegativeIndices) {
  auto out = run_text(
      "graph @t(%x: f32[4,2], %i: i64[3]) {\n  %y = gather(%x, %i) {axis = 0} : f32[3,2]\n  return %y\n}\n",
      {{"x", f32({4, 2}, iota_values(8))}, {"i", Tensor::from<int64_t>(DType::kI64, {3}, {2, -1, 0})}});
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{4, 5, 6, 7, 0, 1}));
}

TEST(CpuStructural, GatherOutOfRangeIsAClearError) {
  try {
    run_text("graph @t(%x: f32[4,2], %i: i32[2]) {\n  %y = gather(%x, %i) {axis = 0} : f32[2,2]\n  return %y\n}\n",
             {{"x", f32({4, 2}, iota_values(8))}, {"i", Tensor::from<int32_t>(DType::kI32, {2}, {1, 4})}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "cpu plugin: gather: index 4 (at position 1 of the indices) is out of range for an axis of size 4");
  }
}

TEST(CpuStructural, ScatterReplacesOrAdds) {
  const char* ir =
      "graph @t(%x: f32[3,2], %i: i64[2], %u: f32[2,2]) {{\n"
      "  %y = scatter(%x, %i, %u) {{axis = 0, reduce = \"{}\"}} : f32[3,2]\n  return %y\n}}\n";
  NamedTensors in = {{"x", f32({3, 2}, {1, 1, 1, 1, 1, 1})},
                     {"i", Tensor::from<int64_t>(DType::kI64, {2}, {2, 0})},
                     {"u", f32({2, 2}, {5, 6, 7, 8})}};
  EXPECT_EQ(values(run_text(fmt::format(fmt::runtime(ir), "none"), in).at("y")), (std::vector<double>{7, 8, 1, 1, 5, 6}));
  EXPECT_EQ(values(run_text(fmt::format(fmt::runtime(ir), "add"), in).at("y")), (std::vector<double>{8, 9, 1, 1, 6, 7}));
}

TEST(CpuStructural, IotaAlongEachDim) {
  auto out = run_text(
      "graph @t() {\n  %a = iota() {dim = 0, dtype = i32, shape = [2, 3]} : i32[2,3]\n"
      "  %b = iota() {dim = 1, dtype = f32, shape = [2, 3]} : f32[2,3]\n  return %a, %b\n}\n", {});
  EXPECT_EQ(values(out.at("a")), (std::vector<double>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(values(out.at("b")), (std::vector<double>{0, 1, 2, 0, 1, 2}));
}

TEST(CpuStructural, WhileLoopSumsOneToTen) {
  const char* ir = test::kWhileSumsOneToTen;
  auto out = run_text(ir, {{"n", Tensor::from<int64_t>(DType::kI64, {}, {1000})}});
  EXPECT_EQ(out.at("i").as<int64_t>()[0], 10);
  EXPECT_EQ(out.at("y").as<int64_t>()[0], 1055);
}

TEST(CpuStructural, SymbolicBatchIsBoundPerRunAndCached) {
  const char* ir =
      "graph @t(%x: f32[B,2]) {\n  %s = reduce_sum(%x) {axes = [0]} : f32[2]\n  return %s\n}\n";
  Graph g = parse_graph(ir, "t");
  Session s(test::cpu_target());
  auto m = s.compile(g);
  EXPECT_EQ(values(m.run({{"x", f32({1, 2}, {1, 2})}}).at("s")), (std::vector<double>{1, 2}));
  EXPECT_EQ(values(m.run({{"x", f32({3, 2}, {1, 2, 3, 4, 5, 6})}}).at("s")), (std::vector<double>{9, 12}));
  try {
    m.run({{"x", f32({2, 3}, iota_values(6))}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "input 'x' has size 3 in dim 1, the model expects 2 (f32[B,2])");
  }
}

}  // namespace
}  // namespace rlx
