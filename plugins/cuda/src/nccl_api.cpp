#include "nccl_api.h"

#include <fmt/format.h>

#include <cstdlib>
#include <vector>

#include "dynamic_library.h"

namespace rlx::cuda {

namespace {

struct Loaded {
  NcclApi api;
  std::string error;
};

Loaded load() {
  Loaded l;
  // The soname first (the system's or LD_LIBRARY_PATH's NCCL), then where the CUDA toolkit and
  // NVIDIA's Debian packages put it.
  std::vector<std::string> names = {"libnccl.so.2", "/usr/local/cuda/lib/libnccl.so.2",
                                    "/usr/local/cuda/lib64/libnccl.so.2"};
  if (const char* path = std::getenv("RLX_NCCL"); path && *path) names = {path};
  std::string tried;
  void* lib = open_first_library(names, &tried);
  if (!lib) {
    l.error = fmt::format(
        "libnccl.so.2 not found (tried {}): install NCCL (NVIDIA's libnccl2 package or the "
        "nvidia-nccl-cu12 wheel's library), or set RLX_NCCL to its library file",
        tried);
    return l;
  }
  SymbolResolver resolve(lib, l.error, "libnccl.so.2 lacks {}: NCCL older than 2.7");
  NcclApi& a = l.api;
  resolve(a.get_version, "ncclGetVersion");
  resolve(a.get_unique_id, "ncclGetUniqueId");
  resolve(a.comm_init_rank, "ncclCommInitRank");
  resolve(a.comm_destroy, "ncclCommDestroy");
  resolve(a.comm_abort, "ncclCommAbort");
  resolve(a.comm_get_async_error, "ncclCommGetAsyncError");
  resolve(a.get_error_string, "ncclGetErrorString");
  resolve(a.all_reduce, "ncclAllReduce");
  resolve(a.all_gather, "ncclAllGather");
  resolve(a.reduce_scatter, "ncclReduceScatter");
  resolve(a.broadcast, "ncclBroadcast");
  resolve(a.send, "ncclSend");
  resolve(a.recv, "ncclRecv");
  resolve(a.group_start, "ncclGroupStart");
  resolve(a.group_end, "ncclGroupEnd");
  if (l.error.empty() && a.get_version(&a.version) != kNcclSuccess)
    l.error = "libnccl.so.2 did not report its version (ncclGetVersion failed)";
  return l;
}

}  // namespace

std::string NcclApi::version_text() const {
  // Codes before 2.9 are 1000 * major + 100 * minor + patch.
  if (version >= 10000)
    return fmt::format("{}.{}.{}", version / 10000, version / 100 % 100, version % 100);
  return fmt::format("{}.{}.{}", version / 1000, version / 100 % 10, version % 100);
}

std::string NcclApi::error_text(NcclResult rc) const {
  static constexpr const char* kNames[] = {
      "ncclSuccess",         "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
      "ncclInvalidArgument", "ncclInvalidUsage",       "ncclRemoteError", "ncclInProgress"};
  const char* name = rc >= 0 && rc < 8 ? kNames[rc] : "ncclResult";
  const char* text = get_error_string ? get_error_string(rc) : nullptr;
  return fmt::format("{} ({}{}{})", name, rc, text ? ": " : "", text ? text : "");
}

const NcclApi* nccl_api(std::string* why) {
  static const Loaded loaded = load();
  if (!loaded.error.empty()) {
    if (why) *why = loaded.error;
    return nullptr;
  }
  return &loaded.api;
}

std::optional<int> nccl_dtype(DType dtype, int version) {
  switch (dtype) {
    case DType::kI8:
      return 0;
    case DType::kU8:
      return 1;
    case DType::kI32:
      return 2;
    case DType::kI64:
      return 4;
    case DType::kF16:
      return 6;
    case DType::kF32:
      return 7;
    case DType::kF64:
      return 8;
    case DType::kBF16:
      if (version >= kNcclAvgVersion) return 9;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

}  // namespace rlx::cuda
