// Builds the 2D Poisson problem -laplace(u) = f on the unit square (5-point stencil, zero
// boundary) as a CSR matrix, and solves it through the IR with the CG op on every target
// named on the command line (default: cpu). With u = x (1 - x) y (1 - y) and f = -laplace(u) =
// 2 (x (1 - x) + y (1 - y)), the stencil's second differences are exact (u is quadratic in each
// variable), so the discrete solution equals u at the grid points and each solve is checked
// against it.
//
//   rlx_example_poisson_2d [--grid N] [--plugin-path DIR] [TARGET...]
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "rlx/core/builder.h"
#include "rlx/core/error.h"
#include "rlx/core/matrix_market.h"
#include "rlx/core/runtime.h"
#include "rlx/registry/registry.h"

int main(int argc, char** argv) {
  try {
    rlx::registry::Options options;
    std::vector<std::string> targets;
    int64_t g = 64;
    for (int i = 1; i < argc; ++i) {
      if (std::strcmp(argv[i], "--plugin-path") == 0 && i + 1 < argc)
        options.plugin_paths.push_back(argv[++i]);
      else if (std::strcmp(argv[i], "--grid") == 0 && i + 1 < argc)
        g = std::stoll(argv[++i]);
      else
        targets.emplace_back(argv[i]);
    }
    if (targets.empty()) targets = {"cpu"};
    auto registry = rlx::registry::Registry::discover(options);

    // A = the 5-point Laplacian over h^2, h = 1 / (g + 1).
    const int64_t n = g * g;
    const double h = 1.0 / static_cast<double>(g + 1), s = 1 / (h * h);
    std::vector<int64_t> r, c;
    std::vector<double> v, u(n), f(n);
    for (int64_t y = 0; y < g; ++y)
      for (int64_t x = 0; x < g; ++x) {
        const int64_t i = y * g + x;
        auto at = [&](int64_t j, double w) { r.push_back(i), c.push_back(j), v.push_back(w * s); };
        at(i, 4);
        if (x > 0) at(i - 1, -1);
        if (x + 1 < g) at(i + 1, -1);
        if (y > 0) at(i - g, -1);
        if (y + 1 < g) at(i + g, -1);
        const double px = h * static_cast<double>(x + 1), py = h * static_cast<double>(y + 1);
        u[i] = px * (1 - px) * py * (1 - py);
        f[i] = 2 * (px * (1 - px) + py * (1 - py));
      }
    rlx::CsrMatrix a = rlx::csr_from_triplets(n, n, r, c, v);

    int failures = 0;
    for (const std::string& name : targets) {
      auto target = registry.target(name);
      // f64 where the target has it; the GPU-style targets solve in f32.
      const rlx::DType dt = name == "cpu" ? rlx::DType::kF64 : rlx::DType::kF32;
      rlx::Graph graph;
      rlx::GraphBuilder b(graph);
      std::vector<rlx::ValueId> in = {b.input("indptr", {rlx::DType::kI64, {n + 1}}),
                                      b.input("indices", {rlx::DType::kI64, {a.nnz()}}),
                                      b.input("values", {dt, {a.nnz()}}), b.input("f", {dt, {n}})};
      auto outs = b.op_n("CG", in,
                         {{"tol", dt == rlx::DType::kF64 ? 1e-10 : 1e-5},
                          {"max_iter", int64_t{10 * g}},
                          {"preconditioner", std::string("jacobi")}});
      for (auto o : outs) b.output(o);
      rlx::Session session(target);
      rlx::CompiledModel model = session.compile(graph);
      std::vector<rlx::Tensor> csr = a.tensors(dt);
      rlx::Tensor ft =
          dt == rlx::DType::kF64
              ? rlx::Tensor::from<double>(dt, {n}, f)
              : rlx::Tensor::from<float>(dt, {n}, std::vector<float>(f.begin(), f.end()));
      auto out =
          model.run({{"indptr", csr[0]}, {"indices", csr[1]}, {"values", csr[2]}, {"f", ft}});
      const rlx::Tensor& x = out.at(graph.values[outs[0]].name);
      double err = 0;
      for (int64_t i = 0; i < n; ++i) err = std::max(err, std::abs(x.scalar_at(i) - u[i]));
      const bool ok = err < (dt == rlx::DType::kF64 ? 1e-8 : 1e-3);
      std::printf("%s: %lld unknowns, %g iterations, max |u - exact| = %.2e %s\n", name.c_str(),
                  static_cast<long long>(n), out.at(graph.values[outs[1]].name).scalar_at(0), err,
                  ok ? "ok" : "WRONG");
      failures += !ok;
    }
    return failures ? 1 : 0;
  } catch (const rlx::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
