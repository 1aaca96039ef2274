// A CUDA device behind the shared executor's DeviceApi (sdk/gpu_host/device_api.h): one CUDA
// device, its primary context and one stream per process, and a kernel language the target's
// modules are written in, compiled by NVRTC to cubins for the device's own architecture and
// cached on disk (module_cache.h). Cooperative kernels launch in blocks of 64 threads, the size
// they are written for, the others in blocks of 256. Products the library hands to cuBLASLt run
// through cuda_matmul.h; a run is recorded as a CUDA graph and replayed (decision 38). The cuda
// target runs CUDA C++ on it; the rocm target's HIP-on-CUDA mode runs its HIP source on it
// through a header that maps HIP onto CUDA.
//
// The device is RLX_CUDA_DEVICE=<ordinal> when set; otherwise a rank of a job takes its own,
// local_rank_from_env() modulo the number of devices (ordinal 0 outside a job). Every call makes
// the context current on the calling thread, so the executor may be driven from any thread (one
// at a time).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cublaslt.h"
#include "cuda_driver.h"
#include "cuda_matmul.h"
#include "device_api.h"
#include "module_cache.h"
#include "nvrtc.h"

namespace rlx::cuda {

struct CudaDeviceInfo {
  int ordinal = 0;
  std::string name;  // "NVIDIA H200"
  int cc_major = 0, cc_minor = 0;
  int driver_version = 0;  // 12040 for CUDA 12.4
  size_t memory_bytes = 0;
  int max_threads_per_block = 0;
  std::string arch() const;      // "sm_90"
  std::string describe() const;  // "NVIDIA H200 (sm_90, 140 GiB, driver CUDA 12.4)"
};

// The process's device: the driver, the device, its primary context and the stream.
struct CudaContext {
  const DriverApi& cu;
  CuDevice device;
  CuContext context;
  CuStream stream;
  CudaDeviceInfo info;
};

// The rank's index among the job's ranks on this machine, as its launcher set it:
// RLX_LOCAL_RANK (`rlx --nproc` sets it for each rank), else OMPI_COMM_WORLD_LOCAL_RANK
// (mpirun), else 0. Ranks of one machine then open different GPUs, which NCCL requires (two
// ranks of a communicator on one GPU fail at ncclCommInitRank).
int local_rank_from_env();

// Created on first call and never destroyed (the driver must not be torn down by static
// destructors at exit while another library may still call into it); nullptr with `why` set
// when there is none ("libcuda.so.1 not found (...)", "no CUDA device (...)", "driver older than
// ...", NVRTC missing or newer than the driver).
const CudaContext* cuda_context(std::string* why);

// What a target runs on the device: its name (prefixes messages), its kernel library, and how
// NVRTC sees its source (the name in diagnostics, the in-memory headers it includes) and caches it.
class CudaDevice;
// Plans a library call the target's KernelLibrary::vendor_call took (DeviceApi::prepare_call):
// the target's own routines on the device, which reach the stream through CudaDevice::context().
using CudaCallPlanner = std::function<std::unique_ptr<gpu_host::VendorCall>(
    CudaDevice& device, const lir::CallKernel& call, const lir::Program& program)>;

struct CudaKernelLanguage {
  std::string target;  // "cuda"
  const gpu_host::KernelLibrary* library = nullptr;
  std::string language;     // "CUDA C++"
  std::string source_name;  // "rlx_kernels.cu"
  std::vector<NvrtcHeader> headers;
  ModuleCacheLayout cache = kCubins;
  CudaCallPlanner plan_call;  // empty: the device runs no vendor library calls
};

// How many blocks of `block` threads cover `work_items`: the grid is rounded up, as kernels
// return at once for threads past the domain (render.h). Throws rlx::Error (kUnsupported), naming
// `target` and the kernel, for more blocks than a grid holds. Shared with the rocm target's
// HipDevice, which launches the same way.
unsigned launch_blocks(int64_t work_items, unsigned block, const std::string& target,
                       const std::string& symbol);

class CudaDevice final : public gpu_host::DeviceApi {
 public:
  // A device for `language` on the process's context, or nullptr with `why` set.
  static std::shared_ptr<CudaDevice> open(CudaKernelLanguage language, std::string* why);

  const CudaDeviceInfo& info() const { return context_.info; }
  // The driver, context and stream, for vendor routines enqueued beside the launches.
  const CudaContext& context() const { return context_; }
  // Makes the context current on the calling thread (every method here does it first).
  void make_current() const;
  // Throws rlx::Error (kDevice) naming `call` when rc is not CUDA_SUCCESS.
  void check(CuResult rc, const char* call) const;

  std::string target_name() const override { return language_.target; }
  const gpu_host::KernelLibrary& library() const override { return *language_.library; }
  gpu_host::DeviceBuffer allocate(size_t bytes) override;
  void release(gpu_host::DeviceBuffer& buffer) noexcept override;
  void upload(const gpu_host::DeviceBuffer& dst, const void* src, size_t bytes) override;
  void download(const gpu_host::DeviceBuffer& src, void* dst, size_t bytes) override;
  void copy(const gpu_host::DeviceBuffer& src, const gpu_host::DeviceBuffer& dst,
            size_t bytes) override;
  std::unique_ptr<gpu_host::Module> build(const std::string& source) override;
  void launch(gpu_host::Module& module, const std::string& symbol,
              const std::vector<const gpu_host::DeviceBuffer*>& args, int64_t work_items) override;
  void finish() override;
  DeviceLimits limits() const override;
  void zero(const gpu_host::DeviceBuffer& buffer, size_t bytes) override;
  std::unique_ptr<gpu_host::VendorMatmul> prepare_matmul(
      const sdk::MatmulShape& shape, const gpu_host::VendorEpilogue& epilogue) override;
  std::unique_ptr<gpu_host::VendorCall> prepare_call(const lir::CallKernel& call,
                                                     const lir::Program& program) override;
  // Recording is CUDA stream capture into a graph, on unless RLX_CUDA_GRAPHS=0.
  bool can_record() const override;
  void begin_recording() override;
  std::unique_ptr<gpu_host::RecordedWork> end_recording() override;
  void replay(gpu_host::RecordedWork& work) override;
  std::unique_ptr<gpu_host::DeviceStamp> make_stamp() override;
  std::optional<gpu_host::DeviceMemoryUse> memory_use() const override;
  // cuMemHostAlloc, unless RLX_CUDA_HOST_MEMORY=0 (outputs then go to ordinary memory).
  bool has_host_memory() const override;
  void* allocate_host(size_t bytes) override;
  void release_host(void* data) noexcept override;

  CudaDevice(const CudaContext& context, CudaKernelLanguage language)
      : context_(context), cu_(context.cu), language_(std::move(language)) {}

 private:
  const CudaContext& context_;
  const DriverApi& cu_;
  CudaKernelLanguage language_;
  // cuBLASLt's handle and workspace, made for the first vendor product.
  CublasLtHandle lt_handle_ = nullptr;
  CuDevicePtr lt_workspace_ = 0;
  // Bytes of each live allocation, their sum and its peak (memory_use).
  std::unordered_map<CuDevicePtr, size_t> sizes_;
  gpu_host::DeviceMemoryUse use_;

  // cuBLASLt algorithms chosen by timing (prepare_matmul), by product.
  std::map<std::string, int> tuned_;
  static constexpr int kTuneRuns = 5;

  void count(CuDevicePtr p, size_t bytes);
  // The fastest of `count` candidates of one product, each enqueued kTuneRuns times on scratch
  // operands between two CUDA events; a candidate that throws is skipped.
  int time_candidates(int count, const MatmulBytes& bytes,
                      const std::function<void(int, const MatmulOperands&)>& run);

};

}  // namespace rlx::cuda
