// CG natively on the cpu: the loop of CG's decomposition (core/src/ops/ops_krylov.cpp: the same
// recurrence, stopping rule and outputs) with each iteration's work fused into three passes over
// the vectors instead of an SpMV, three dot products and four updates. The dot products are
// taken while the vectors stream by:
//   pass 1  q = A p, and p.q
//   pass 2  x += alpha p, r -= alpha q, z = r / diag(A) (PCG), and r.z, r.r
//   pass 3  p = z + beta p
// Rows go to threads in fixed chunks whose partial sums (in double) are added in chunk order, so
// the result does not depend on the thread count or on scheduling.
#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "rlx/core/error.h"
#include "sparse_csr.h"

namespace rlx::cpu {

namespace {

// Rows per chunk: small enough that two threads split a 64k-row system evenly, large enough
// that scheduling a chunk costs far less than computing it.
constexpr int64_t kChunkRows = 4096;

struct Sums {
  double a = 0, b = 0;
};

// Runs body(begin, end, sums) over the row chunks in parallel and returns the chunk sums added
// in chunk order.
template <typename Body>
Sums over_chunks(int64_t rows, std::vector<Sums>& partial, Body body) {
  const int64_t chunks = (rows + kChunkRows - 1) / kChunkRows;
  auto run = [&](int64_t c) {
    Sums s;
    body(c * kChunkRows, std::min(rows, (c + 1) * kChunkRows), s);
    partial[c] = s;
  };
  if (chunks == 1) {
    run(0);
  } else {
    tbb::parallel_for(
        tbb::blocked_range<int64_t>(0, chunks, 1),
        [&](const tbb::blocked_range<int64_t>& r) {
          for (int64_t c = r.begin(); c < r.end(); ++c) run(c);
        },
        tbb::static_partitioner());
  }
  Sums total;
  for (int64_t c = 0; c < chunks; ++c) total.a += partial[c].a, total.b += partial[c].b;
  return total;
}

template <typename T, typename I>
void cg_loop(const Csr& a, const T* values, const T* rhs, const CgOptions& o, T* x,
             int32_t* iterations, T* residual) {
  const int64_t n = a.rows;
  const I* ptr = static_cast<const I*>(a.indptr);
  const I* col = static_cast<const I*>(a.indices);
  std::vector<T> r(rhs, rhs + n), p(n), q(n), dinv;
  std::vector<Sums> partial(static_cast<size_t>((n + kChunkRows - 1) / kChunkRows));
  if (o.jacobi) {  // 1 / diag(A); a zero diagonal gives an infinity, as the decomposition does
    dinv.assign(n, T(0));
    for (int64_t i = 0; i < n; ++i) {
      T d = T(0);
      for (I j = ptr[i]; j < ptr[i + 1]; ++j)
        if (col[j] == i) d += values[j];
      dinv[i] = T(1) / d;
    }
  }
  const T* dv = o.jacobi ? dinv.data() : nullptr;
  // x = 0, r = b, p = z = dinv b; rz = r.z, rr = b.b.
  Sums start = over_chunks(n, partial, [&](int64_t lo, int64_t hi, Sums& s) {
    for (int64_t i = lo; i < hi; ++i) {
      x[i] = T(0);
      p[i] = dv ? dv[i] * r[i] : r[i];
      s.a += static_cast<double>(r[i]) * p[i];
      s.b += static_cast<double>(r[i]) * r[i];
    }
  });
  const double bb = start.b, limit = bb * o.tol * o.tol;
  double rz = start.a, rr = bb;
  int32_t k = 0;
  while (k < o.max_iter && rr > limit) {
    const double pq = over_chunks(n, partial, [&](int64_t lo, int64_t hi, Sums& s) {
                        for (int64_t i = lo; i < hi; ++i) {
                          T sum = T(0);
                          for (I j = ptr[i]; j < ptr[i + 1]; ++j) sum += values[j] * p[col[j]];
                          q[i] = sum;
                          s.a += static_cast<double>(p[i]) * sum;
                        }
                      }).a;
    const T alpha = static_cast<T>(rz / pq);
    // z overwrites q (q is not needed after this pass); without a preconditioner z is r.
    const Sums next = over_chunks(n, partial, [&](int64_t lo, int64_t hi, Sums& s) {
      for (int64_t i = lo; i < hi; ++i) {
        x[i] += alpha * p[i];
        const T ri = r[i] - alpha * q[i];
        r[i] = ri;
        const T zi = dv ? dv[i] * ri : ri;
        if (dv) q[i] = zi;
        s.a += static_cast<double>(ri) * zi;
        s.b += static_cast<double>(ri) * ri;
      }
    });
    const T beta = static_cast<T>(next.a / rz);
    const T* z = dv ? q.data() : r.data();
    over_chunks(n, partial, [&](int64_t lo, int64_t hi, Sums&) {
      for (int64_t i = lo; i < hi; ++i) p[i] = z[i] + beta * p[i];
    });
    rz = next.a, rr = next.b;
    ++k;
  }
  *iterations = k;
  const double tiny = sizeof(T) == 4 ? 1e-38 : 1e-300;
  *residual = static_cast<T>(std::sqrt(rr / std::max(bb, tiny)));
}

// The loop for value type T, with the index type the structure has.
template <typename T>
void cg_typed(const Csr& a, const void* values, const void* rhs, const CgOptions& o, void* x,
              int32_t* iterations, void* residual) {
  auto* v = static_cast<const T*>(values);
  auto* b = static_cast<const T*>(rhs);
  auto* out = static_cast<T*>(x);
  auto* res = static_cast<T*>(residual);
  return a.wide ? cg_loop<T, int64_t>(a, v, b, o, out, iterations, res)
                : cg_loop<T, int32_t>(a, v, b, o, out, iterations, res);
}

}  // namespace

void run_cg(const Csr& a, const void* values, const void* rhs, bool f64, const CgOptions& o,
            void* x, int32_t* iterations, void* residual) {
  return f64 ? cg_typed<double>(a, values, rhs, o, x, iterations, residual)
             : cg_typed<float>(a, values, rhs, o, x, iterations, residual);
}

}  // namespace rlx::cpu
