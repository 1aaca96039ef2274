// The cuda target: LIR programs as CUDA C++ (the SDK renderer's CUDA dialect), compiled by NVRTC
// to a cubin for the device's architecture and run through the shared GPU host executor on the
// CUDA driver API, with cuBLASLt products, tensor-core attention and CUDA graphs
// (cuda_library.h). Its native HIR ops are those of every GPU-like target (Attention,
// LayerNorm/RMSNorm) plus dense linear algebra through cuSOLVER (dense_linalg_call.h), the
// Gaussian-splatting ops on its own kernels (splat_call.h) and the collectives through NCCL
// (collective_call.h, nccl_comm.h); every other HIR op takes its MIR decomposition.
#include <fmt/format.h>

#include <optional>

#include "cuda_arch.h"
#include "cuda_device.h"
#include "cuda_library.h"
#include "device_executable.h"
#include "module_plan.h"
#include "nccl_comm.h"
#include "nvrtc.h"
#include "rlx/core/error.h"
#include "rlx/core/target_cpu.h"
#include "rlx/sdk/plugin.h"
#include "target_plugin.h"

namespace rlx::cuda {

namespace {

constexpr const char* kWrites = "the CUDA C++, its PTX and a cubin";

CudaKernelLanguage cuda_language() {
  return {.target = "cuda",
          .library = &cuda_target_library(),
          .language = "CUDA C++",
          .source_name = "rlx_kernels.cu",
          .plan_call = plan_library_call};
}

class CudaTarget final : public gpu_host::GpuLikeTargetPlugin {
 public:
  CudaTarget() : GpuLikeTargetPlugin("cuda", "CUDA C++") {
    // `rlx compile --cuda-arch sm_XY`: the processor-choice extension cortexm's --cpu uses.
    arch_ext_.cpus = "sm_<compute capability>, such as sm_80, sm_89, sm_90 or sm_90a";
    arch_ext_.context = this;
    arch_ext_.select = [](void* self, const char* arch) noexcept -> const char* {
      if (!is_arch(arch)) return "not a GPU architecture: give sm_ and the compute capability";
      static_cast<CudaTarget*>(self)->arch_ = arch;
      return nullptr;
    };
  }

  const void* extension(const std::string& name, uint32_t version) const override {
    if (name == kTargetCpuExtension && version == kTargetCpuVersion) return &arch_ext_;
    return GpuLikeTargetPlugin::extension(name, version);
  }

  // The library calls (library_calls.h: dense linear algebra through cuSOLVER, ...); the rest
  // as every GPU-like target claims it.
  Verdict claim_native(const NodeSignature& s) const override {
    if (std::optional<Verdict> v = claim_library_op(s)) return *v;
    return GpuLikeTargetPlugin::claim_native(s);
  }

  // CUDA C++ has every real dtype of the cpu target, f64 on every device, so the only refusals
  // are the ones all GPU-like targets share (HIR ops, complex values).
  Verdict accepts_primitive(const NodeSignature& s) const override { return common_refusals(s); }

  std::shared_ptr<gpu_host::DeviceApi> open_device_api(std::string* why) override {
    return CudaDevice::open(cuda_language(), why);
  }

  // A CUDA device is always a GPU, never an emulation on the host.
  std::optional<DeviceInfo> describe_device() const override {
    const CudaContext* c = cuda_context(nullptr);
    if (!c) return std::nullopt;
    return DeviceInfo{c->info.name, "gpu", "", false};
  }

  Verdict can_execute() const override {
    std::string why;
    const CudaContext* c = cuda_context(&why);
    return device_status(c != nullptr, why, c ? "CUDA device " + c->info.describe() : "");
  }

  // Collectives through NCCL on this process's GPU; the channel also becomes the communicator
  // "world" that the graph's collective ops run on (nccl_comm.h).
  std::unique_ptr<Channel> open_channel(const ChannelOptions& options) override {
    return open_nccl_channel(options);
  }

  std::unique_ptr<Executable> compile(const lir::Program& program) override {
    return std::make_unique<gpu_host::DeviceExecutable>(device_api(kWrites), program);
  }

  // The module exactly as compile() builds it (cuda_kernels.cu), and NVRTC's PTX (for the virtual
  // architecture) and cubin of it for --cuda-arch, else RLX_CUDA_ARCH, else the device here, else
  // sm_90.
  std::vector<Artifact> emit(const lir::Program& program,
                             const std::filesystem::path& dir) override {
    const std::string source = gpu_host::plan_module(program, cuda_target_library()).source;
    std::vector<Artifact> out = {write_module(dir, "cuda_kernels.cu", "cuda-c++", source)};
    std::string arch = arch_.empty() ? arch_from_env() : arch_;
    if (arch.empty()) {
      const CudaContext* c = cuda_context(nullptr);
      arch = c ? c->info.arch() : kDefaultArch;
    }
    std::string why;
    if (!nvrtc_available(&why))
      throw_unsupported(fmt::format("cuda: wrote {} but cannot write its PTX and cubin: {}",
                                    (dir / "cuda_kernels.cu").string(), why));
    const NvrtcSource nvrtc{source, "cuda_kernels.cu"};
    out.push_back(write_module(dir, "cuda_kernels.ptx", "ptx",
                               nvrtc_compile(nvrtc, arch, NvrtcOutput::kPtx)));
    out.push_back(write_module(dir, fmt::format("cuda_kernels.{}.cubin", arch), "cubin",
                               nvrtc_compile(nvrtc, arch, NvrtcOutput::kCubin)));
    return out;
  }

 private:
  std::string arch_;  // --cuda-arch; empty: RLX_CUDA_ARCH, the device, sm_90
  TargetCpuV1 arch_ext_;
};

}  // namespace

}  // namespace rlx::cuda

RLX_DEFINE_TARGET_PLUGIN(rlx::cuda::CudaTarget)
