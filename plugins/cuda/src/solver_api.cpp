#include "solver_api.h"

#include <fmt/format.h>

#include <cstdlib>
#include <mutex>
#include <vector>

#include "dynamic_library.h"
#include "rlx/core/error.h"

namespace rlx::cuda {

namespace {

struct Loaded {
  SolverApi api;
  std::string error;
};

void* open_library(const char* env, const std::vector<std::string>& sonames, const char* what,
                   std::string& error) {
  std::vector<std::string> names = sonames;
  for (const std::string& so : sonames) names.push_back("/usr/local/cuda/lib64/" + so);
  if (const char* path = std::getenv(env); path && *path) names = {path};
  std::string tried;
  void* lib = open_first_library(names, &tried);
  if (!lib)
    error = fmt::format(
        "{} not found (tried {}): install the CUDA toolkit's {}, or set {} to its "
        "library file",
        what, tried, what, env);
  return lib;
}

template <typename T>
void resolve_routines(SymbolResolver& solver, SymbolResolver& blas, SolverRoutines<T>& r, char p) {
  auto name = [&](const char* stem) { return fmt::format("cusolverDn{}{}", p, stem); };
  solver(r.potrf_size, name("potrf_bufferSize").c_str());
  solver(r.potrf, name("potrf").c_str());
  solver(r.getrf_size, name("getrf_bufferSize").c_str());
  solver(r.getrf, name("getrf").c_str());
  solver(r.getrs, name("getrs").c_str());
  solver(r.geqrf_size, name("geqrf_bufferSize").c_str());
  solver(r.geqrf, name("geqrf").c_str());
  solver(r.orgqr_size, name("orgqr_bufferSize").c_str());
  solver(r.orgqr, name("orgqr").c_str());
  solver(r.gesvd_size, name("gesvd_bufferSize").c_str());
  solver(r.gesvd, name("gesvd").c_str());
  solver(r.syevd_size, name("syevd_bufferSize").c_str());
  solver(r.syevd, name("syevd").c_str());
  blas(r.trsm, fmt::format("cublas{}trsm_v2", p).c_str());
}

Loaded load() {
  Loaded l;
  void* solver =
      open_library("RLX_CUSOLVER", {"libcusolver.so.12", "libcusolver.so.11"}, "cuSOLVER", l.error);
  if (!solver) return l;
  void* blas =
      open_library("RLX_CUBLAS", {"libcublas.so.13", "libcublas.so.12"}, "cuBLAS", l.error);
  if (!blas) return l;
  SymbolResolver resolve_solver(solver, l.error, "cuSOLVER lacks {}: it is older than CUDA 11");
  SymbolResolver resolve_blas(blas, l.error, "cuBLAS lacks {}: it is older than CUDA 11");
  SolverApi& a = l.api;
  resolve_solver(a.create, "cusolverDnCreate");
  resolve_solver(a.set_stream, "cusolverDnSetStream");
  resolve_blas(a.blas_create, "cublasCreate_v2");
  resolve_blas(a.blas_set_stream, "cublasSetStream_v2");
  resolve_routines(resolve_solver, resolve_blas, a.f32, 'S');
  resolve_routines(resolve_solver, resolve_blas, a.f64, 'D');
  return l;
}

void check_status(SolverStatus rc, const char* call) {
  if (rc != 0)
    throw Error(ErrorKind::kDevice, fmt::format("cuda: {} failed with status {}", call, rc));
}

}  // namespace

const SolverApi* solver_api(std::string* why) {
  static const Loaded loaded = load();
  if (!loaded.error.empty()) {
    if (why) *why = loaded.error;
    return nullptr;
  }
  return &loaded.api;
}

SolverHandle solver_handle(const SolverApi& api, CuStream stream) {
  static std::once_flag once;
  static SolverHandle handle = nullptr;
  std::call_once(once, [&] {
    check_status(api.create(&handle), "cusolverDnCreate");
    check_status(api.set_stream(handle, stream), "cusolverDnSetStream");
  });
  return handle;
}

BlasHandle blas_handle(const SolverApi& api, CuStream stream) {
  static std::once_flag once;
  static BlasHandle handle = nullptr;
  std::call_once(once, [&] {
    check_status(api.blas_create(&handle), "cublasCreate");
    check_status(api.blas_set_stream(handle, stream), "cublasSetStream");
  });
  return handle;
}

}  // namespace rlx::cuda
