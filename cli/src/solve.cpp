// `rlx solve A.mtx --rhs b.mtx|ones --method lu|klu|cg|pcg`: solves a sparse linear system read
// from Matrix Market files through the same IR and dispatch contract as every model: lu and klu
// are the SparseSolve op (UMFPACK or KLU on cpu), cg and pcg the CG op (a while loop of SpMV,
// dot and axpy; pcg with the Jacobi preconditioner). Prints iterations, the residual
// ||A x - b|| / ||b|| (recomputed here in double, not the solver's own estimate) and the times.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "commands.h"
#include "errors.h"
#include "json_out.h"
#include "model.h"
#include "options.h"
#include "rlx/core/builder.h"
#include "rlx/core/matrix_market.h"
#include "rlx/core/runtime.h"

namespace rlx::cli {
namespace {

struct SolveOptions {
  std::string matrix, rhs = "ones", method = "lu", target = "cpu", dtype = "f64";
  std::optional<double> tol;
  int64_t max_iter = 1000;
  bool json = false;
};

bool positive(double v) {
  return v > 0;
}

void declare_solve_options(CLI::App& app, SolveOptions& o) {
  add_argument(app, "A.mtx", o.matrix, Presence::kRequired);
  add_value(app, "--rhs", "b.mtx|ones", o.rhs,
            "the right-hand side: a Matrix Market file with one column (or row), or ones "
            "(default)");
  add_value(app, "--method", "M", o.method,
            "lu (sparse LU: UMFPACK on cpu, f64), klu (sparse LU by KLU, for circuit-like "
            "matrices that barely fill in), cg (conjugate gradients, A symmetric positive "
            "definite) or pcg (cg with the Jacobi preconditioner); default lu");
  add_number(app, "--tol", "TOL", positive, "(0, inf)", o.tol,
             "cg/pcg: stop once ||r|| <= TOL ||b|| (default 1e-10)");
  add_integer(app, "--max-iter", "N", 0, o.max_iter, "cg/pcg: iteration limit (default 1000)");
  add_value(app, "--dtype", "D", o.dtype,
            "f64 (default) or f32, for targets without f64 (cpu lu factors in f64 either way)");
  add_target_option(app, o.target, "solve on");
  add_flag(app, "--json", o.json, "print the result as one JSON object");
}

std::vector<double> read_rhs(const SolveOptions& o, int64_t rows) {
  if (o.rhs == "ones") return std::vector<double>(static_cast<size_t>(rows), 1.0);
  CsrMatrix b = read_matrix_market(o.rhs);
  if (!((b.cols == 1 && b.rows == rows) || (b.rows == 1 && b.cols == rows)))
    throw CliError(
        fmt::format("--rhs {} is {} x {}, but A has {} rows", o.rhs, b.rows, b.cols, rows),
        fmt::format("give a {} x 1 Matrix Market file, or --rhs ones", rows));
  return b.dense();
}

double residual(const CsrMatrix& a, const Tensor& x, const std::vector<double>& b) {
  double r = 0, n = 0;
  for (int64_t i = 0; i < a.rows; ++i) {
    double ax = 0;
    for (int64_t k = a.indptr[i]; k < a.indptr[i + 1]; ++k)
      ax += a.values[k] * x.scalar_at(a.indices[k]);
    r += (ax - b[i]) * (ax - b[i]), n += b[i] * b[i];
  }
  return n > 0 ? std::sqrt(r / n) : std::sqrt(r);
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int solve_main(const SolveOptions& o, const GlobalOptions& global) {
  const bool direct = o.method == "lu" || o.method == "klu";
  if (!direct && o.method != "cg" && o.method != "pcg")
    throw UsageError(fmt::format("--method {} is not one of lu, klu, cg, pcg", o.method));
  if (o.dtype != "f64" && o.dtype != "f32")
    throw UsageError(fmt::format("--dtype {} is not one of f64, f32", o.dtype));
  if (direct && (o.tol || o.max_iter != 1000))
    throw UsageError(
        fmt::format("--tol and --max-iter apply to cg and pcg; {} is a direct solve", o.method));
  const DType dt = o.dtype == "f64" ? DType::kF64 : DType::kF32;

  auto t_read = std::chrono::steady_clock::now();
  CsrMatrix a = read_matrix_market(o.matrix);
  if (a.rows != a.cols)
    throw CliError(
        fmt::format("{} is {} x {}; rlx solve needs a square matrix", o.matrix, a.rows, a.cols));
  std::vector<double> b = read_rhs(o, a.rows);
  const double read_ms = ms_since(t_read);

  Graph g;
  GraphBuilder gb(g);
  std::vector<Tensor> csr = a.tensors(dt);
  std::vector<ValueId> in = {gb.input("indptr", {DType::kI64, {a.rows + 1}}),
                             gb.input("indices", {DType::kI64, {a.nnz()}}),
                             gb.input("values", {dt, {a.nnz()}}), gb.input("b", {dt, {a.rows}})};
  gb.set_loc(o.matrix);
  std::vector<ValueId> outs;
  if (direct) {
    outs = {
        gb.op("SparseSolve", in, {{"solver", std::string(o.method == "lu" ? "umfpack" : "klu")}})};
  } else {
    outs = gb.op_n("CG", in,
                   {{"tol", o.tol.value_or(1e-10)},
                    {"max_iter", o.max_iter},
                    {"preconditioner", std::string(o.method == "pcg" ? "jacobi" : "none")}});
  }
  for (ValueId v : outs) gb.output(v);

  const registry::Registry& reg = plugin_registry(global, /*build_legality=*/false);
  std::shared_ptr<Target> target = choose_target(reg, o.target);
  require_can_execute(*target, target->name(), o.matrix);
  auto t_compile = std::chrono::steady_clock::now();
  Session session(target);
  CompiledModel m = session.compile(g);
  const double compile_ms = ms_since(t_compile);
  Tensor bt = dt == DType::kF64
                  ? Tensor::from<double>(dt, {a.rows}, b)
                  : Tensor::from<float>(dt, {a.rows}, std::vector<float>(b.begin(), b.end()));
  NamedTensors feed{{"indptr", csr[0]}, {"indices", csr[1]}, {"values", csr[2]}, {"b", bt}};
  auto t_solve = std::chrono::steady_clock::now();
  NamedTensors result = m.run(feed);
  const double solve_ms = ms_since(t_solve);

  const Tensor& x = result.at(g.values[outs[0]].name);
  const double res = residual(a, x, b);
  const int64_t iterations =
      direct ? 0 : static_cast<int64_t>(result.at(g.values[outs[1]].name).scalar_at(0));
  const bool converged =
      direct || result.at(g.values[outs[2]].name).scalar_at(0) <= o.tol.value_or(1e-10);
  if (o.json) {
    json::Object j{{"matrix", jstring(o.matrix)},
                   {"rows", jint(a.rows)},
                   {"nnz", jint(a.nnz())},
                   {"method", jstring(o.method)},
                   {"target", jstring(target->name())},
                   {"dtype", jstring(o.dtype)},
                   {"iterations", jint(iterations)},
                   {"converged", json::Value{converged}},
                   {"residual", jnumber(res)},
                   {"read_ms", jms(read_ms)},
                   {"compile_ms", jms(compile_ms)},
                   {"solve_ms", jms(solve_ms)}};
    std::fputs((to_json_text(json::Value{std::move(j)}) + "\n").c_str(), stdout);
  } else {
    std::printf("%s: %lld x %lld, %lld nonzeros, %s on %s (%s)\n", o.matrix.c_str(),
                static_cast<long long>(a.rows), static_cast<long long>(a.rows),
                static_cast<long long>(a.nnz()), o.method.c_str(), target->name().c_str(),
                o.dtype.c_str());
    if (!direct)
      std::printf("iterations: %lld%s\n", static_cast<long long>(iterations),
                  converged ? "" : " (iteration limit reached before --tol)");
    std::printf(
        "residual ||Ax-b||/||b||: %.3e\ntime: solve %.3f ms, compile %.3f ms, read %.3f ms\n", res,
        solve_ms, compile_ms, read_ms);
  }
  return converged ? 0 : 3;
}

}  // namespace

Command solve_command() {
  return make_command<SolveOptions>(
      {"solve", "solve a sparse linear system A x = b from Matrix Market files",
       "A.mtx [--rhs b.mtx|ones] [--method lu|klu|cg|pcg] [--tol TOL] [--max-iter N] "
       "[--dtype f64|f32] [-t T] [--json]",
       "Reads A (a square Matrix Market matrix) and b, builds a graph of one SparseSolve (lu,\n"
       "klu) or CG (cg, pcg) op, compiles it for the target and runs it. lu factors A by sparse\n"
       "LU (SuiteSparse UMFPACK on cpu, in f64; klu: KLU, for circuit-like matrices that barely\n"
       "fill in); cg and pcg are conjugate gradients for a symmetric\n"
       "positive definite A, lowered to a while loop of SpMV, dot and axpy that every target\n"
       "with those primitives runs (pcg: Jacobi preconditioner). Prints the iterations, the\n"
       "residual ||A x - b|| / ||b|| recomputed in double, and the solve and compile times.\n"
       "Exit status 3 when cg/pcg stops at --max-iter before reaching --tol."},
      &declare_solve_options, &solve_main);
}

}  // namespace rlx::cli
