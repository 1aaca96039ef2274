// dot_general as matrix products of the shapes that stress a tiled kernel (sizes that are not
// multiples of a tile, a single row or column, batches, transposed operands, several K slices,
// 16-bit storage), each against a naive double-precision loop written here. Written for cpu and
// run on every target through RLX_TEST_TARGET; on the GPU-style targets they reach every variant
// of sdk::render_matmul (each tile size, the GEMV).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "rlx/core/half.h"
#include "test_support.h"

namespace rlx {
namespace {

using test::run_text;

struct Product {
  int64_t batch, m, n, k;
  bool a_transposed;  // A stored [k, m] (contracted first)
  bool b_transposed;  // B stored [n, k]: a Linear layer's weight
  DType dtype;
};

std::string describe(const Product& p) {
  return fmt::format("[{}] {}x{}x{} A{} B{} {}", p.batch, p.m, p.n, p.k, p.a_transposed ? "^T" : "",
                     p.b_transposed ? "^T" : "", dtype_name(p.dtype));
}

// Values in [-1, 1] as stored in `dtype` (returned as the stored values, for the reference).
Tensor random_tensor(DType dtype, const std::vector<int64_t>& shape, unsigned seed,
                     std::vector<double>& stored) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  Tensor t(dtype, shape);
  stored.resize(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < stored.size(); ++i) {
    float v = u(rng);
    if (dtype == DType::kF16) {
      t.as<uint16_t>()[i] = f32_to_f16(v);
      stored[i] = f16_to_f32(t.as<uint16_t>()[i]);
    } else if (dtype == DType::kBF16) {
      t.as<uint16_t>()[i] = f32_to_bf16(v);
      stored[i] = bf16_to_f32(t.as<uint16_t>()[i]);
    } else {
      t.as<float>()[i] = v;
      stored[i] = v;
    }
  }
  return t;
}

std::string dims(const std::vector<int64_t>& shape) {
  std::string s;
  for (int64_t d : shape) s += (s.empty() ? "" : ",") + std::to_string(d);
  return s;
}

// The largest error of the product, in units of sum_k |a * b| of its element (what f32
// accumulation in any order is bounded by, times K * epsilon), less the half ulp that rounding the
// output to a 16-bit `dtype` may add (so a rounding that is not to nearest still shows).
double worst_error(const Product& p) {
  const bool batched = p.batch > 1;
  std::vector<int64_t> a_shape =
      p.a_transposed ? std::vector<int64_t>{p.k, p.m} : std::vector<int64_t>{p.m, p.k};
  std::vector<int64_t> b_shape =
      p.b_transposed ? std::vector<int64_t>{p.n, p.k} : std::vector<int64_t>{p.k, p.n};
  std::vector<int64_t> c_shape = {p.m, p.n};
  if (batched) {
    a_shape.insert(a_shape.begin(), p.batch);
    b_shape.insert(b_shape.begin(), p.batch);
    c_shape.insert(c_shape.begin(), p.batch);
  }
  const int64_t off = batched ? 1 : 0;
  const std::string t(dtype_name(p.dtype));
  std::string ir = fmt::format(
      "graph @t(%a: {0}[{1}], %b: {0}[{2}]) {{\n"
      "  %y = dot_general(%a, %b) {{lhs_batch = [{3}], lhs_contract = [{4}], rhs_batch = [{3}], "
      "rhs_contract = [{5}]}} : {0}[{6}]\n  return %y\n}}\n",
      t, dims(a_shape), dims(b_shape), batched ? "0" : "", off + (p.a_transposed ? 0 : 1),
      off + (p.b_transposed ? 1 : 0), dims(c_shape));
  std::vector<double> a, b;
  NamedTensors in = {{"a", random_tensor(p.dtype, a_shape, 11, a)},
                     {"b", random_tensor(p.dtype, b_shape, 23, b)}};
  std::vector<double> got = test::values(run_text(ir, in).at("y"));
  EXPECT_EQ(static_cast<int64_t>(got.size()), p.batch * p.m * p.n) << describe(p);
  if (static_cast<int64_t>(got.size()) != p.batch * p.m * p.n) return INFINITY;
  const double half_ulp = p.dtype == DType::kF16    ? 1.0 / 2048
                          : p.dtype == DType::kBF16 ? 1.0 / 256
                                                    : 0;
  double worst = 0;
  for (int64_t bi = 0; bi < p.batch; ++bi)
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        double want = 0, scale = 0;
        for (int64_t kk = 0; kk < p.k; ++kk) {
          double x = a[bi * p.m * p.k + (p.a_transposed ? kk * p.m + i : i * p.k + kk)];
          double y = b[bi * p.k * p.n + (p.b_transposed ? j * p.k + kk : kk * p.n + j)];
          want += x * y;
          scale += std::fabs(x * y);
        }
        double e = std::fabs(got[(bi * p.m + i) * p.n + j] - want) - half_ulp * std::fabs(want);
        worst = std::max(worst, e / std::max(scale, 1e-30));
      }
  return worst;
}

// The worst errors measured on cpu, gpu (PoCL), vulkan (lavapipe), opengl (llvmpipe) and webgpu
// were 2.5e-7 (f32) and 2e-8 (f16, bf16); the bound is ten times the largest.
constexpr double kTolerance = 3e-6;

void check(const std::vector<Product>& products) {
  for (const Product& p : products) EXPECT_LT(worst_error(p), kTolerance) << describe(p);
}

constexpr DType kF32 = DType::kF32;

TEST(CpuMatmul, EdgesOfTilesInEveryDim) {
  check({{1, 1, 1, 1, false, false, kF32},
         {1, 7, 63, 5, false, false, kF32},
         {1, 65, 129, 300, false, false, kF32},
         {1, 130, 63, 1, false, true, kF32},
         {1, 65, 1, 300, false, false, kF32},
         {1, 130, 129, 5, true, false, kF32},
         {1, 64, 64, 32, false, false, kF32}});
}

TEST(CpuMatmul, SingleRowsAndColumns) {
  // m == 1 and n == 1 (B contiguous along k, or A: the GEMV), and m == 1 with B contiguous
  // along n (tiled).
  check({{1, 1, 129, 300, false, true, kF32},
         {1, 1, 63, 5, false, true, kF32},
         {1, 130, 1, 300, false, true, kF32},
         {1, 1, 129, 300, false, false, kF32},
         {3, 1, 65, 70, false, true, kF32}});
}

TEST(CpuMatmul, BatchedAndTransposedOperands) {
  check({{3, 65, 63, 300, false, false, kF32},
         {2, 7, 129, 33, false, true, kF32},
         {2, 33, 65, 17, true, true, kF32}});
}

TEST(CpuMatmul, LargeProductsUseEveryTileSize) {
  // Enough output tiles for the 64x64 and the 32x64 tile (render_matmul.cpp picks the largest
  // tile that still gives 264 groups).
  check({{1, 1100, 1000, 20, false, true, kF32}, {1, 600, 900, 20, false, false, kF32}});
}

TEST(CpuMatmul, SixteenBitStorage) {
  for (DType d : {DType::kF16, DType::kBF16})
    check({{1, 65, 129, 300, false, true, d},
           {2, 7, 63, 5, true, false, d},
           {1, 1, 129, 300, false, true, d},
           {1, 130, 1, 33, false, false, d}});
}

}  // namespace
}  // namespace rlx
