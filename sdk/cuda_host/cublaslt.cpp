#include "cublaslt.h"

#include "dynamic_library.h"

#include <fmt/format.h>

#include <cstdlib>
#include <vector>

namespace rlx::cuda {

namespace {

struct Loaded {
  CublasLtApi api;
  std::string error;
};

Loaded load() {
  Loaded l;
  std::vector<std::string> names = {"libcublasLt.so.13", "libcublasLt.so.12",
                                    "/usr/local/cuda/lib64/libcublasLt.so.13",
                                    "/usr/local/cuda/lib64/libcublasLt.so.12"};
  if (const char* path = std::getenv("RLX_CUBLASLT"); path && *path) names = {path};
  std::string tried;
  void* lib = open_first_library(names, &tried);
  if (!lib) {
    l.error = fmt::format("cuBLASLt not found (tried {}): install the CUDA toolkit's libcublas, "
                          "or set RLX_CUBLASLT to libcublasLt.so",
                          tried);
    return l;
  }
  SymbolResolver resolve(lib, l.error, "cuBLASLt lacks {}: it is older than CUDA 11");
  CublasLtApi& a = l.api;
  resolve(a.create, "cublasLtCreate");
  resolve(a.status_name, "cublasLtGetStatusName");
  resolve(a.desc_create, "cublasLtMatmulDescCreate");
  resolve(a.desc_destroy, "cublasLtMatmulDescDestroy");
  resolve(a.desc_set, "cublasLtMatmulDescSetAttribute");
  resolve(a.layout_create, "cublasLtMatrixLayoutCreate");
  resolve(a.layout_destroy, "cublasLtMatrixLayoutDestroy");
  resolve(a.layout_set, "cublasLtMatrixLayoutSetAttribute");
  resolve(a.pref_create, "cublasLtMatmulPreferenceCreate");
  resolve(a.pref_destroy, "cublasLtMatmulPreferenceDestroy");
  resolve(a.pref_set, "cublasLtMatmulPreferenceSetAttribute");
  resolve(a.heuristic, "cublasLtMatmulAlgoGetHeuristic");
  resolve(a.matmul, "cublasLtMatmul");
  return l;
}

}  // namespace

const CublasLtApi* cublaslt_api(std::string* why) {
  static const Loaded loaded = load();
  if (!loaded.error.empty()) {
    if (why) *why = loaded.error;
    return nullptr;
  }
  return &loaded.api;
}

std::string cublas_status_name(const CublasLtApi& lt, CublasStatus status) {
  const char* name = lt.status_name ? lt.status_name(status) : nullptr;
  return name ? fmt::format("{} ({})", name, status) : fmt::format("cuBLAS status {}", status);
}

}  // namespace rlx::cuda
