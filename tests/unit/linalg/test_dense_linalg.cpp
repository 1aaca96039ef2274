// Dense linear-algebra ops, f32 and f64, odd shapes and batches, on the target under test: the
// cpu (LAPACKE) in rlx_linalg_tests, cuda (cuSOLVER) in its conformance program, which compiles
// this file too.
// Each result is checked against its defining equation computed here in double (L L^T = A,
// P A = L U, Q R = A with Q^T Q = I, U S V^T = A, A V = V diag(w), A X = B) and against
// hand-computed values; bad inputs must fail with the op's message, never return numbers.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cmath>

#include "linalg_test_util.h"
#include "rlx/core/error.h"

namespace rlx::test {
namespace {

const DType kFloats[] = {DType::kF32, DType::kF64};
double tol(DType d) {
  return d == DType::kF64 ? 1e-10 : 2e-4;
}
const char* name(DType d) {
  return d == DType::kF64 ? "f64" : "f32";
}

// Runs `%r... = Op(%a[, %b]) {attrs}` with the given result types and returns the results.
NamedTensors run_op(const std::string& op, const std::vector<Tensor>& ins,
                    const std::vector<std::string>& result_types, const std::string& attrs = "") {
  std::string params, args, results, rets;
  NamedTensors feed;
  for (size_t i = 0; i < ins.size(); ++i) {
    const std::string n = i ? "b" : "a";
    params += fmt::format("{}%{}: {}[{}]", i ? ", " : "", n, dtype_name(ins[i].dtype()),
                          dims(ins[i].shape()));
    args += fmt::format("{}%{}", i ? ", " : "", n);
    feed[n] = ins[i];
  }
  for (size_t i = 0; i < result_types.size(); ++i) {
    results += fmt::format("{}%r{}", i ? ", " : "", i);
    rets += fmt::format("{}{}", i ? ", " : "", result_types[i]);
  }
  std::string ir =
      fmt::format("graph @t({}) {{\n  {} = {}({}){} : {}\n  return {}\n}}\n", params, results, op,
                  args, attrs.empty() ? "" : " {" + attrs + "}", rets, results);
  return run_text(ir, feed, target_under_test());
}

std::string type(DType d, std::vector<int64_t> s) {
  return fmt::format("{}[{}]", dtype_name(d), dims(s));
}

TEST(DenseLinalg, CholeskyOfABatchReconstructsEachMatrix) {
  for (DType d : kFloats) {
    const int64_t n = 7;
    Mat a0 = random_spd(n, 1), a1 = random_spd(n, 2), both = a0;
    both.insert(both.end(), a1.begin(), a1.end());
    auto r = run_op("Cholesky", {tensor(d, {2, n, n}, both)}, {type(d, {2, n, n})});
    Mat l = values(r.at("r0"));
    for (int b = 0; b < 2; ++b) {
      Mat lb(l.begin() + b * n * n, l.begin() + (b + 1) * n * n);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = i + 1; j < n; ++j) EXPECT_EQ(lb[i * n + j], 0.0) << "upper half zeroed";
      Mat llt = mul(lb, transpose(lb, n, n), n, n, n);
      EXPECT_LT(max_abs_diff(llt, b ? a1 : a0), tol(d) * n * n) << name(d);
    }
  }
}

TEST(DenseLinalg, CholeskyByHand) {
  // [[4, 2], [2, 3]] = [[2, 0], [1, sqrt 2]] [[2, 1], [0, sqrt 2]]
  auto r = run_op("Cholesky", {tensor(DType::kF64, {2, 2}, {4, 2, 2, 3})}, {"f64[2,2]"});
  Mat l = values(r.at("r0"));
  EXPECT_DOUBLE_EQ(l[0], 2);
  EXPECT_DOUBLE_EQ(l[1], 0);
  EXPECT_DOUBLE_EQ(l[2], 1);
  EXPECT_NEAR(l[3], std::sqrt(2.0), 1e-15);
}

TEST(DenseLinalg, CholeskyOfAnIndefiniteMatrixIsAnError) {
  std::string e = error_of([] {
    run_op("Cholesky", {tensor(DType::kF64, {3, 3}, {1, 2, 0, 2, 1, 0, 0, 0, 1})}, {"f64[3,3]"});
  });
  EXPECT_NE(e.find("not positive definite"), std::string::npos) << e;
  EXPECT_NE(e.find("order 2"), std::string::npos) << e;
}

// P A = L U, with P from the 0-based row swaps applied in order.
void check_lu(DType d, int64_t m, int64_t n, uint32_t seed) {
  const int64_t k = std::min(m, n);
  Mat a = random_matrix(m, n, seed);
  auto r = run_op("LU", {tensor(d, {m, n}, a)}, {type(d, {m, n}), type(DType::kI32, {k})});
  Mat lu = values(r.at("r0"));
  Mat piv = values(r.at("r1"));
  Mat l(static_cast<size_t>(m * k), 0.0), u(static_cast<size_t>(k * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < k; ++j) l[i * k + j] = i == j ? 1 : (j < i ? lu[i * n + j] : 0);
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = i; j < n; ++j) u[i * n + j] = lu[i * n + j];
  Mat pa = a;
  for (int64_t i = 0; i < k; ++i) {
    ASSERT_GE(piv[i], i);
    ASSERT_LT(piv[i], m);
    for (int64_t j = 0; j < n; ++j)
      std::swap(pa[i * n + j], pa[static_cast<int64_t>(piv[i]) * n + j]);
  }
  // Rounding grows with the length of the products.
  const double bound = tol(d) * 10 * static_cast<double>(std::max<int64_t>(1, k / 4));
  EXPECT_LT(max_abs_diff(mul(l, u, m, k, n), pa), bound) << name(d) << " " << m << "x" << n;
  // Partial pivoting: the pivot is the largest in its column, so no multiplier exceeds 1.
  for (double x : l) ASSERT_LE(std::abs(x), 1.0) << name(d) << " " << m << "x" << n;
}

TEST(DenseLinalg, LuWithPivotsReconstructsSquareTallAndWide) {
  for (DType d : kFloats) {
    check_lu(d, 6, 6, 3);
    check_lu(d, 7, 5, 4);
    check_lu(d, 5, 7, 5);
    // Several panels of the blocked factorization (row_major_lu.cpp: 32 columns each), square,
    // tall and wide, with a last panel that is not full.
    check_lu(d, 100, 100, 6);
    check_lu(d, 130, 70, 7);
    check_lu(d, 70, 130, 8);
  }
  // [[0, 1], [1, 0]] must swap its rows first: pivots [1, 1].
  auto r = run_op("LU", {tensor(DType::kF64, {2, 2}, {0, 1, 1, 0})}, {"f64[2,2]", "i32[2]"});
  EXPECT_EQ(values(r.at("r1")), (Mat{1, 1}));
}

TEST(DenseLinalg, SolveMatrixAndVectorRightHandSides) {
  for (DType d : kFloats) {
    const int64_t n = 9, k = 3;
    Mat a = random_matrix(n, n, 6);
    for (int64_t i = 0; i < n; ++i) a[i * n + i] += 4;  // well conditioned
    Mat b = random_matrix(n, k, 7);
    auto r = run_op("Solve", {tensor(d, {n, n}, a), tensor(d, {n, k}, b)}, {type(d, {n, k})});
    EXPECT_LT(max_abs_diff(mul(a, values(r.at("r0")), n, n, k), b), tol(d) * 10) << name(d);
    Mat bv = random_matrix(n, 1, 8);
    auto rv = run_op("Solve", {tensor(d, {n, n}, a), tensor(d, {n}, bv)}, {type(d, {n})});
    EXPECT_LT(max_abs_diff(mul(a, values(rv.at("r0")), n, n, 1), bv), tol(d) * 10) << name(d);
  }
}

TEST(DenseLinalg, SolveWithASingularMatrixIsAnError) {
  std::string e = error_of([] {
    run_op("Solve",
           {tensor(DType::kF64, {3, 3}, {1, 2, 3, 2, 4, 6, 1, 0, 1}),
            tensor(DType::kF64, {3}, {1, 1, 1})},
           {"f64[3]"});
  });
  EXPECT_NE(e.find("singular"), std::string::npos) << e;
  EXPECT_NE(e.find("Solve"), std::string::npos) << e;
}

TEST(DenseLinalg, TriangularSolveEveryForm) {
  const int64_t n = 5, k = 2;
  for (DType d : kFloats) {
    for (int lower : {0, 1})
      for (int trans : {0, 1})
        for (int unit : {0, 1}) {
          Mat a = random_matrix(n, n, 9);
          for (int64_t i = 0; i < n; ++i) a[i * n + i] += 3;
          Mat t(a.size(), 0.0);  // the triangle the op reads, with its diagonal
          for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < n; ++j)
              if (i == j)
                t[i * n + j] = unit ? 1 : a[i * n + j];
              else if (lower ? j < i : j > i)
                t[i * n + j] = a[i * n + j];
          Mat op = trans ? transpose(t, n, n) : t;
          Mat b = random_matrix(n, k, 10);
          auto r = run_op(
              "TriangularSolve", {tensor(d, {n, n}, a), tensor(d, {n, k}, b)}, {type(d, {n, k})},
              fmt::format("lower = {}, transpose = {}, unit_diagonal = {}", lower, trans, unit));
          EXPECT_LT(max_abs_diff(mul(op, values(r.at("r0")), n, n, k), b), tol(d) * 10)
              << name(d) << lower << trans << unit;
        }
  }
}

TEST(DenseLinalg, InverseTimesMatrixIsIdentity) {
  for (DType d : kFloats) {
    const int64_t n = 11;
    Mat a = random_matrix(n, n, 11);
    for (int64_t i = 0; i < n; ++i) a[i * n + i] += 3;
    auto r = run_op("Inverse", {tensor(d, {n, n}, a)}, {type(d, {n, n})});
    Mat eye(static_cast<size_t>(n * n), 0.0);
    for (int64_t i = 0; i < n; ++i) eye[i * n + i] = 1;
    EXPECT_LT(max_abs_diff(mul(a, values(r.at("r0")), n, n, n), eye), tol(d) * 10) << name(d);
  }
  std::string e = error_of([] {
    run_op("Inverse", {tensor(DType::kF32, {2, 2}, {1, 2, 2, 4})}, {"f32[2,2]"});
  });
  EXPECT_NE(e.find("singular"), std::string::npos) << e;
}

TEST(DenseLinalg, DeterminantsByHand) {
  auto det = [](Mat a, int64_t n) {
    return values(run_op("Det", {tensor(DType::kF64, {n, n}, a)}, {"f64[]"}).at("r0"))[0];
  };
  EXPECT_NEAR(det({2, 1, 1, 3}, 2), 5, 1e-14);
  EXPECT_NEAR(det({0, 1, 1, 0}, 2), -1, 1e-14);  // one row swap
  EXPECT_NEAR(det({2, 0, 0, 0, 3, 0, 0, 0, -4}, 3), -24, 1e-13);
  EXPECT_EQ(det({1, 2, 2, 4}, 2), 0);  // singular: zero, not an error
  auto r = run_op("LogDet", {tensor(DType::kF64, {2, 2, 2}, {0, 1, 1, 0, 1, 2, 2, 4})},
                  {"f64[2]", "f64[2]"});
  EXPECT_EQ(values(r.at("r0")), (Mat{-1, 0}));
  EXPECT_NEAR(values(r.at("r1"))[0], 0, 1e-15);
  EXPECT_TRUE(std::isinf(values(r.at("r1"))[1]) && values(r.at("r1"))[1] < 0);
}

TEST(DenseLinalg, LogDetOfALargeMatrixDoesNotOverflow) {
  // diag(1e3) of size 200: det = 1e600 overflows double, log|det| = 600 ln 10 does not.
  const int64_t n = 200;
  Mat a(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) a[i * n + i] = i == 3 ? -1e3 : 1e3;
  auto r = run_op("LogDet", {tensor(DType::kF64, {n, n}, a)}, {"f64[]", "f64[]"});
  EXPECT_EQ(values(r.at("r0"))[0], -1);
  EXPECT_NEAR(values(r.at("r1"))[0], 600 * std::log(10.0), 1e-9);
}

void check_qr(DType d, int64_t m, int64_t n) {
  const int64_t k = std::min(m, n);
  Mat a = random_matrix(m, n, 12);
  auto r = run_op("QR", {tensor(d, {m, n}, a)}, {type(d, {m, k}), type(d, {k, n})});
  Mat q = values(r.at("r0")), rr = values(r.at("r1"));
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < i; ++j) EXPECT_EQ(rr[i * n + j], 0.0);
  Mat qtq = mul(transpose(q, m, k), q, k, m, k);
  for (int64_t i = 0; i < k; ++i) qtq[i * k + i] -= 1;
  EXPECT_LT(max_abs_diff(qtq, Mat(qtq.size(), 0.0)), tol(d) * 10) << name(d);
  EXPECT_LT(max_abs_diff(mul(q, rr, m, k, n), a), tol(d) * 10) << name(d) << m << "x" << n;
}

TEST(DenseLinalg, ReducedQrOfTallAndWideMatrices) {
  for (DType d : kFloats) {
    check_qr(d, 7, 4);
    check_qr(d, 4, 7);
    check_qr(d, 5, 5);
  }
}

void check_svd(DType d, int64_t m, int64_t n) {
  const int64_t k = std::min(m, n);
  Mat a = random_matrix(m, n, 13);
  auto r = run_op("SVD", {tensor(d, {m, n}, a)}, {type(d, {m, k}), type(d, {k}), type(d, {k, n})});
  Mat u = values(r.at("r0")), s = values(r.at("r1")), vt = values(r.at("r2"));
  for (int64_t i = 1; i < k; ++i) EXPECT_GE(s[i - 1], s[i]) << "descending";
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < k; ++j) u[i * k + j] *= s[j];
  EXPECT_LT(max_abs_diff(mul(u, vt, m, k, n), a), tol(d) * 10) << name(d) << m << "x" << n;
}

TEST(DenseLinalg, ReducedSvdReconstructs) {
  for (DType d : kFloats) {
    check_svd(d, 6, 4);
    check_svd(d, 4, 6);
  }
  // [[3, 0], [4, 5]]: A^T A = [[25, 20], [20, 25]] has eigenvalues 45 and 5.
  auto r = run_op("SVD", {tensor(DType::kF64, {2, 2}, {3, 0, 4, 5})},
                  {"f64[2,2]", "f64[2]", "f64[2,2]"});
  Mat s = values(r.at("r1"));
  EXPECT_NEAR(s[0], std::sqrt(45.0), 1e-13);
  EXPECT_NEAR(s[1], std::sqrt(5.0), 1e-13);
}

TEST(DenseLinalg, EighEigenpairs) {
  for (DType d : kFloats) {
    const int64_t n = 6;
    Mat a = random_spd(n, 14);
    auto r = run_op("Eigh", {tensor(d, {n, n}, a)}, {type(d, {n}), type(d, {n, n})});
    Mat w = values(r.at("r0")), v = values(r.at("r1"));
    for (int64_t i = 1; i < n; ++i) EXPECT_LE(w[i - 1], w[i]) << "ascending";
    Mat av = mul(a, v, n, n, n), vw = v;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) vw[i * n + j] *= w[j];
    EXPECT_LT(max_abs_diff(av, vw), tol(d) * 100) << name(d);
  }
  auto r = run_op("Eigh", {tensor(DType::kF64, {2, 2}, {2, 1, 1, 2})}, {"f64[2]", "f64[2,2]"});
  Mat w = values(r.at("r0"));
  EXPECT_NEAR(w[0], 1, 1e-14);
  EXPECT_NEAR(w[1], 3, 1e-14);
  // Only the triangle `lower` names is read: [[2, 100], [1, 2]] is [[2, 1], [1, 2]] from below
  // (eigenvalues 1, 3) and [[2, 100], [100, 2]] from above (-98, 102).
  for (int64_t lower : {1, 0}) {
    auto t = run_op("Eigh", {tensor(DType::kF64, {2, 2}, {2, 100, 1, 2})}, {"f64[2]", "f64[2,2]"},
                    fmt::format("lower = {}", lower));
    Mat e = values(t.at("r0"));
    EXPECT_NEAR(e[0], lower ? 1 : -98, 1e-12) << "lower " << lower;
    EXPECT_NEAR(e[1], lower ? 3 : 102, 1e-12) << "lower " << lower;
  }
}

TEST(DenseLinalg, NonFiniteInputIsAnError) {
  std::string e = error_of([] {
    run_op("SVD", {tensor(DType::kF64, {2, 2}, {1, NAN, 0, 1})},
           {"f64[2,2]", "f64[2]", "f64[2,2]"});
  });
  EXPECT_NE(e.find("non-finite"), std::string::npos) << e;
}

TEST(DenseLinalg, InferenceRejectsBadShapes) {
  std::string e = error_of([] {
    run_op("Cholesky", {tensor(DType::kF64, {2, 3}, Mat(6, 1.0))}, {"f64[2,3]"});
  });
  EXPECT_NE(e.find("must be square"), std::string::npos) << e;
  e = error_of([] {
    run_op("Solve", {tensor(DType::kF64, {3, 3}, Mat(9, 1.0)), tensor(DType::kF64, {2}, {1, 1})},
           {"f64[2]"});
  });
  EXPECT_NE(e.find("b needs 3 rows"), std::string::npos) << e;
}

// A target without a native kernel refuses the op by name (the dispatch contract).
TEST(DenseLinalg, OtherTargetsRefuseByName) {
  std::shared_ptr<Target> gpu;
  try {
    gpu = target_named("gpu");
  } catch (const std::exception& e) {
    GTEST_SKIP() << "the gpu target cannot run here: " << e.what();
  }
  std::string e = compile_error(
      "graph @t(%a: f32[3,3]) {\n  %l = Cholesky(%a) : f32[3,3]\n  return %l\n}\n", gpu);
  EXPECT_NE(e.find("Cholesky"), std::string::npos) << e;
  EXPECT_NE(e.find("gpu"), std::string::npos) << e;
}

}  // namespace
}  // namespace rlx::test
