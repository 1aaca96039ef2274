// The rocm target, first step (the generic path): LIR programs as HIP (the SDK renderer's HIP
// dialect), compiled by hiprtc (else hipcc) to a code object for the device's architecture and
// run through the shared GPU host executor on the HIP runtime. Like cuda it lowers only
// Attention and LayerNorm/RMSNorm natively; every other HIR op takes its MIR decomposition, and
// dot_general is the SDK's tiled matrix product (Debian 12 has no hipBLAS).
//
// With RLX_ROCM_VIA_CUDA=1 the same HIP source runs on an NVIDIA GPU instead, compiled by NVRTC
// through the HIP-on-CUDA header (hip_on_cuda.h): the proof of the HIP kernels' semantics on a
// machine without an AMD GPU.
#include <fmt/format.h>

#include <optional>

#include "cuda_device.h"
#include "cuda_hip_library.h"
#include "device_executable.h"
#include "hip_device.h"
#include "hip_on_cuda.h"
#include "module_plan.h"
#include "rlx/core/error.h"
#include "rlx/sdk/plugin.h"
#include "rocm_compile.h"
#include "target_plugin.h"

namespace rlx::rocm {

namespace {

constexpr const char* kWrites = "the HIP source and a code object (gfx90a, or RLX_ROCM_ARCH)";

class RocmTarget final : public gpu_host::GpuLikeTargetPlugin {
 public:
  RocmTarget() : GpuLikeTargetPlugin("rocm", "HIP") {}

  // HIP has every real dtype of the cpu target, f64 on every device, so the only refusals are
  // the ones all GPU-like targets share (HIR ops, complex values).
  Verdict accepts_primitive(const NodeSignature& s) const override { return common_refusals(s); }

  std::shared_ptr<gpu_host::DeviceApi> open_device_api(std::string* why) override {
    if (via_cuda_requested()) return cuda::CudaDevice::open(hip_on_cuda_language(), why);
    return HipDevice::shared(why);
  }

  std::optional<DeviceInfo> describe_device() const override {
    if (via_cuda_requested()) {
      const cuda::CudaContext* c = cuda::cuda_context(nullptr);
      if (!c) return std::nullopt;
      return DeviceInfo{c->info.name, "gpu", "", false};
    }
    std::string why;
    auto d = HipDevice::shared(&why);
    if (!d) return std::nullopt;
    return DeviceInfo{d->info().name, "gpu", "", false};
  }

  Verdict can_execute() const override {
    std::string why;
    if (via_cuda_requested()) {
      const cuda::CudaContext* c = cuda::cuda_context(&why);
      if (!c) why = "RLX_ROCM_VIA_CUDA=1 runs HIP on a CUDA device, and there is none: " + why;
      return device_status(c != nullptr, why,
                           c ? "HIP on CUDA device " + c->info.describe() +
                                   " through NVRTC (RLX_ROCM_VIA_CUDA=1: the HIP kernels' "
                                   "semantics, not AMD performance)"
                             : "");
    }
    auto d = HipDevice::shared(&why);
    return device_status(d != nullptr, why, d ? "AMD GPU " + d->info().describe() : "");
  }

  std::unique_ptr<Executable> compile(const lir::Program& program) override {
    return std::make_unique<gpu_host::DeviceExecutable>(device_api(kWrites), program);
  }

  // The module exactly as compile() builds it (rocm_kernels.hip), and its code object for
  // RLX_ROCM_ARCH, else the AMD GPU here, else gfx90a.
  std::vector<Artifact> emit(const lir::Program& program,
                             const std::filesystem::path& dir) override {
    const std::string source = gpu_host::plan_module(program, cuda_hip::hip_library()).source;
    std::vector<Artifact> out = {write_module(dir, "rocm_kernels.hip", "hip", source)};
    std::string arch = arch_from_env();
    if (arch.empty()) {
      auto device = via_cuda_requested() ? nullptr : HipDevice::shared(nullptr);
      arch = device ? device->info().arch : kDefaultArch;
    }
    std::string why;
    if (hip_compiler(&why).empty())
      throw_unsupported(fmt::format("rocm: wrote {} but cannot write its code object: {}",
                                    (dir / "rocm_kernels.hip").string(), why));
    out.push_back(write_module(dir, fmt::format("rocm_kernels.{}.hsaco", arch), "code-object",
                               compile_hip(source, arch)));
    return out;
  }
};

}  // namespace

}  // namespace rlx::rocm

RLX_DEFINE_TARGET_PLUGIN(rlx::rocm::RocmTarget)
