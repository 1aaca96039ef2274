// CSR ops on the cpu target (SpMV, SpMM, SparseSolve through UMFPACK and KLU) and Matrix Market
// files, checked against dense products and residuals computed here in double; malformed structure
// must fail with a message naming the position.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "linalg_test_util.h"
#include "rlx/core/error.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/matrix_market.h"
#include "rlx/core/runtime.h"

namespace rlx::test {
namespace {

// A nonsymmetric convection-diffusion matrix: the Laplacian plus an upwind x-derivative.
CsrMatrix convection_diffusion(int64_t g, double peclet) {
  CsrMatrix a = poisson_2d(g);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t k = a.indptr[i]; k < a.indptr[i + 1]; ++k) {
      if (a.indices[k] == i) a.values[k] += peclet;
      if (a.indices[k] == i - 1) a.values[k] -= peclet;
    }
  return a;
}

std::string csr_graph(const std::string& op, DType d, int64_t m, int64_t nnz,
                      const std::string& x_dims, const std::string& y_dims,
                      DType index = DType::kI64, const std::string& attrs = "") {
  return fmt::format(
      "graph @t(%p: {0}[{1}], %i: {0}[{2}], %v: {3}[{2}], %x: {3}[{4}]) {{\n"
      "  %y = {5}(%p, %i, %v, %x){7} : {3}[{6}]\n  return %y\n}}\n",
      dtype_name(index), m + 1, nnz, dtype_name(d), x_dims, op, y_dims, attrs);
}

NamedTensors csr_feed(const CsrMatrix& a, DType d, const Tensor& x) {
  auto t = a.tensors(d);
  return {{"p", t[0]}, {"i", t[1]}, {"v", t[2]}, {"x", x}};
}

TEST(Sparse, SpmvAndSpmmMatchTheDenseProduct) {
  CsrMatrix a = convection_diffusion(7, 0.5);  // 49 x 49, nonsymmetric
  Mat dense = a.dense();
  for (DType d : {DType::kF32, DType::kF64}) {
    Mat x = random_matrix(a.cols, 3, 21);
    auto y = run_text(csr_graph("SpMM", d, a.rows, a.nnz(), fmt::format("{},3", a.cols),
                                fmt::format("{},3", a.rows)),
                      csr_feed(a, d, tensor(d, {a.cols, 3}, x)), cpu_target());
    EXPECT_LT(max_abs_diff(values(y.at("y")), mul(dense, x, a.rows, a.cols, 3)),
              d == DType::kF64 ? 1e-13 : 1e-5);
    Mat xv(x.begin(), x.begin() + a.cols);
    auto yv = run_text(
        csr_graph("SpMV", d, a.rows, a.nnz(), fmt::format("{}", a.cols), fmt::format("{}", a.rows)),
        csr_feed(a, d, tensor(d, {a.cols}, xv)), cpu_target());
    EXPECT_LT(max_abs_diff(values(yv.at("y")), mul(dense, xv, a.rows, a.cols, 1)),
              d == DType::kF64 ? 1e-13 : 1e-5);
  }
}

TEST(Sparse, SpmvWithI32IndicesAndEmptyRows) {
  // [[0, 0, 0], [1, 0, 2], [0, 0, 0], [0, 3, 0]] (rows 0 and 2 empty) times [1, 2, 3].
  NamedTensors feed{{"p", Tensor::from<int32_t>(DType::kI32, {5}, {0, 0, 2, 2, 3})},
                    {"i", Tensor::from<int32_t>(DType::kI32, {3}, {0, 2, 1})},
                    {"v", tensor(DType::kF64, {3}, {1, 2, 3})},
                    {"x", tensor(DType::kF64, {3}, {1, 2, 3})}};
  auto y =
      run_text(csr_graph("SpMV", DType::kF64, 4, 3, "3", "4", DType::kI32), feed, cpu_target());
  EXPECT_EQ(values(y.at("y")), (Mat{0, 7, 0, 6}));
}

TEST(Sparse, MalformedStructureIsAnErrorNamingThePosition) {
  const std::string ir = csr_graph("SpMV", DType::kF64, 2, 3, "3", "2");
  auto run = [&](std::vector<int64_t> p, std::vector<int64_t> i) {
    return error_of([&] {
      run_text(ir,
               {{"p", Tensor::from<int64_t>(DType::kI64, {3}, p)},
                {"i", Tensor::from<int64_t>(DType::kI64, {3}, i)},
                {"v", tensor(DType::kF64, {3}, {1, 1, 1})},
                {"x", tensor(DType::kF64, {3}, {1, 1, 1})}},
               cpu_target());
    });
  };
  EXPECT_EQ(run({0, 2, 3}, {0, 2, 1}), "");
  std::string e = run({0, 4, 3}, {0, 1, 2});
  EXPECT_NE(e.find("indptr decreases or passes nnz at row 0"), std::string::npos) << e;
  e = run({0, 2, 3}, {0, 3, 1});
  EXPECT_NE(e.find("column index 3"), std::string::npos) << e;
  e = run({0, 2, 3}, {2, 0, 1});
  EXPECT_NE(e.find("unsorted or repeated"), std::string::npos) << e;
  e = run({1, 2, 3}, {0, 1, 2});
  EXPECT_NE(e.find("indptr[0] is 1"), std::string::npos) << e;
  e = run({0, 2, 2}, {0, 1, 2});
  EXPECT_NE(e.find("there are 3 values"), std::string::npos) << e;
}

// Both factorizations: UMFPACK (the default) and KLU.
const char* const kSolverAttrs[] = {"", " {solver = \"umfpack\"}", " {solver = \"klu\"}"};

TEST(Sparse, SparseLuSolvesPoissonAndConvectionDiffusion) {
  for (const char* attrs : kSolverAttrs)
    for (const CsrMatrix& a : {poisson_2d(12), convection_diffusion(10, 3.0)}) {
      SCOPED_TRACE(attrs);
      Mat b = random_matrix(a.rows, 1, 31);
      auto x =
          run_text(csr_graph("SparseSolve", DType::kF64, a.rows, a.nnz(), fmt::format("{}", a.rows),
                             fmt::format("{}", a.rows), DType::kI64, attrs),
                   csr_feed(a, DType::kF64, tensor(DType::kF64, {a.rows}, b)), cpu_target());
      EXPECT_LT(relative_residual(a, values(x.at("y")), b), 1e-13);
      // Several right-hand sides at once: each column solved.
      Mat b3 = random_matrix(a.rows, 3, 33);
      auto x3 = run_text(
          csr_graph("SparseSolve", DType::kF64, a.rows, a.nnz(), fmt::format("{},3", a.rows),
                    fmt::format("{},3", a.rows), DType::kI64, attrs),
          csr_feed(a, DType::kF64, tensor(DType::kF64, {a.rows, 3}, b3)), cpu_target());
      Mat got = values(x3.at("y"));
      for (int64_t c = 0; c < 3; ++c) {
        Mat col_b, col_x;
        for (int64_t i = 0; i < a.rows; ++i) {
          col_b.push_back(b3[i * 3 + c]);
          col_x.push_back(got[i * 3 + c]);
        }
        EXPECT_LT(relative_residual(a, col_x, col_b), 1e-13) << "column " << c;
      }
    }
}

TEST(Sparse, SparseLuReportsASingularMatrix) {
  // Row 1 is twice row 0.
  CsrMatrix a = csr_from_triplets(3, 3, {0, 0, 1, 1, 2}, {0, 1, 0, 1, 2}, {1, 2, 2, 4, 1});
  for (const char* attrs : kSolverAttrs) {
    std::string e = error_of([&] {
      run_text(csr_graph("SparseSolve", DType::kF64, 3, a.nnz(), "3", "3", DType::kI64, attrs),
               csr_feed(a, DType::kF64, tensor(DType::kF64, {3}, {1, 1, 1})), cpu_target());
    });
    EXPECT_NE(e.find("singular"), std::string::npos) << attrs << ": " << e;
  }
}

TEST(Sparse, AnUnknownSolverIsRefusedByName) {
  std::string e = error_of([&] {
    parse_graph(csr_graph("SparseSolve", DType::kF64, 3, 3, "3", "3", DType::kI64,
                          " {solver = \"superlu\"}"));
  });
  EXPECT_NE(e.find("solver must be \"umfpack\" or \"klu\""), std::string::npos) << e;
}

TEST(Sparse, F32SparseSolveFactorsInF64AndSaysSo) {
  CsrMatrix a = convection_diffusion(6, 1.0);
  Mat b = random_matrix(a.rows, 1, 32);
  const std::string ir = csr_graph("SparseSolve", DType::kF32, a.rows, a.nnz(),
                                   fmt::format("{}", a.rows), fmt::format("{}", a.rows));
  Session session(cpu_target());
  CompiledModel m = session.compile(parse_graph(ir));
  EXPECT_NE(m.report().entries.at(0).detail.find("in f64: f32 values and b widened"),
            std::string::npos);
  auto x = m.run(csr_feed(a, DType::kF32, tensor(DType::kF32, {a.rows}, b)));
  // f32 inputs, f64 factorization: x is the f64 solution rounded once.
  Mat bf(b.begin(), b.end());
  for (double& v : bf) v = static_cast<float>(v);
  CsrMatrix af = a;
  for (double& v : af.values) v = static_cast<float>(v);
  EXPECT_LT(relative_residual(af, values(x.at("y")), bf), 1e-6);
}

TEST(MatrixMarket, ReadsSymmetricCoordinateAndArrayFiles) {
  TempDir dir;
  {
    std::ofstream f(dir.path() / "s.mtx");
    f << "%%MatrixMarket matrix coordinate real symmetric\n% a comment\n3 3 4\n1 1 4\n2 1 -1\n"
         "3 3 2.5\n2 2 4\n";
  }
  CsrMatrix a = read_matrix_market(dir.path() / "s.mtx");
  EXPECT_EQ(a.dense(), (Mat{4, -1, 0, -1, 4, 0, 0, 0, 2.5}));
  {
    std::ofstream f(dir.path() / "b.mtx");
    f << "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n";  // column-major
  }
  EXPECT_EQ(read_matrix_market(dir.path() / "b.mtx").dense(), (Mat{1, 3, 2, 4}));
  CsrMatrix p = poisson_2d(4);
  write_matrix_market(dir.path() / "p.mtx", p);
  CsrMatrix back = read_matrix_market(dir.path() / "p.mtx");
  EXPECT_EQ(back.indptr, p.indptr);
  EXPECT_EQ(back.indices, p.indices);
  EXPECT_EQ(back.values, p.values);
}

TEST(MatrixMarket, BadFilesNameTheLine) {
  TempDir dir;
  auto err = [&](const std::string& text) {
    std::ofstream(dir.path() / "x.mtx") << text;
    return error_of([&] { read_matrix_market(dir.path() / "x.mtx"); });
  };
  std::string e = err("%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1\n");
  EXPECT_NE(e.find("x.mtx:3"), std::string::npos) << e;
  e = err("%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n");
  EXPECT_NE(e.find("complex"), std::string::npos) << e;
  e = err("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n");
  EXPECT_NE(e.find("ends after 1 of its 2"), std::string::npos) << e;
  e = err("hello\n");
  EXPECT_NE(e.find("not a Matrix Market file"), std::string::npos) << e;
}

}  // namespace
}  // namespace rlx::test
