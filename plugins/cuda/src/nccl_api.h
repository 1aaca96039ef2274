// The NCCL entry points the cuda target's collectives use (nccl_comm.h), resolved with dlopen on
// first use like cuSOLVER's (solver_api.h): the plugin builds without NCCL's headers, loads on a
// machine without the library, and there the collective ops are refused by name with the reason
// (never run on another device). The declarations are NCCL's C ABI written out: the communicator
// is an opaque pointer, results, data types and reductions plain integers with the values
// nccl.h documents, the unique id 128 bytes passed by value.
#pragma once
#include <array>
#include <cstddef>
#include <optional>
#include <string>

#include "cuda_driver.h"
#include "rlx/core/dtype.h"

namespace rlx::cuda {

using NcclResult = int;  // ncclResult_t: 0 is ncclSuccess
using NcclCommHandle = struct NcclCommOpaque*;
inline constexpr NcclResult kNcclSuccess = 0;
inline constexpr NcclResult kNcclUnhandledCudaError = 1;
inline constexpr NcclResult kNcclInProgress = 7;  // a non-blocking call still running

inline constexpr size_t kNcclUniqueIdBytes = 128;
struct NcclUniqueId {
  std::array<char, kNcclUniqueIdBytes> bytes{};
};

// ncclRedOp_t.
enum class NcclReduce : int { kSum = 0, kProduct = 1, kMax = 2, kMin = 3, kAvg = 4 };

// ncclGetVersion's code: 1000 * major + 100 * minor + patch for 2.x releases before 2.9 and
// 10000 * major + 100 * minor + patch since (2.9.x is 209xx, 2.28.9 is 22809).
inline constexpr int kNcclCapturableVersion = 20900;  // collectives in CUDA graphs
inline constexpr int kNcclAvgVersion = 21000;         // ncclAvg and ncclBfloat16

struct NcclApi {
  NcclResult (*get_version)(int* version) = nullptr;
  NcclResult (*get_unique_id)(NcclUniqueId* id) = nullptr;
  NcclResult (*comm_init_rank)(NcclCommHandle* comm, int nranks, NcclUniqueId id,
                               int rank) = nullptr;
  NcclResult (*comm_destroy)(NcclCommHandle comm) = nullptr;
  NcclResult (*comm_abort)(NcclCommHandle comm) = nullptr;
  NcclResult (*comm_get_async_error)(NcclCommHandle comm, NcclResult* error) = nullptr;
  const char* (*get_error_string)(NcclResult result) = nullptr;
  NcclResult (*all_reduce)(const void* in, void* out, size_t count, int dtype, int op,
                           NcclCommHandle comm, CuStream stream) = nullptr;
  NcclResult (*all_gather)(const void* in, void* out, size_t count, int dtype, NcclCommHandle comm,
                           CuStream stream) = nullptr;
  NcclResult (*reduce_scatter)(const void* in, void* out, size_t count, int dtype, int op,
                               NcclCommHandle comm, CuStream stream) = nullptr;
  NcclResult (*broadcast)(const void* in, void* out, size_t count, int dtype, int root,
                          NcclCommHandle comm, CuStream stream) = nullptr;
  NcclResult (*send)(const void* in, size_t count, int dtype, int peer, NcclCommHandle comm,
                     CuStream stream) = nullptr;
  NcclResult (*recv)(void* out, size_t count, int dtype, int peer, NcclCommHandle comm,
                     CuStream stream) = nullptr;
  NcclResult (*group_start)() = nullptr;
  NcclResult (*group_end)() = nullptr;
  int version = 0;  // ncclGetVersion's code, read once at load

  std::string version_text() const;  // "2.28.9"
  // "ncclRemoteError (6: remote process exited or there was a network error)".
  std::string error_text(NcclResult rc) const;
};

// The resolved entry points, or nullptr with `why` set ("libnccl.so.2 not found (tried ...)").
// RLX_NCCL names the library file; otherwise the soname, then the toolkit's usual folders.
// Loaded once per process and never unloaded.
const NcclApi* nccl_api(std::string* why);

// ncclDataType_t of `dtype`, nullopt for a dtype NCCL has no type for (bool, i16, u16, u32, u64,
// c64, quantized storage). bf16 exists from NCCL 2.10.
std::optional<int> nccl_dtype(DType dtype, int version);

}  // namespace rlx::cuda
