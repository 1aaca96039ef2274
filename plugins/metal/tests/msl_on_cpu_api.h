// A DeviceApi (sdk/gpu_host/device_api.h) that runs the metal target's MSL on this machine: build()
// compiles the module text as C++ with the system compiler against msl_on_cpu.h into a shared
// library (kept by the hash of its text, beside a precompiled msl_on_cpu.h, in
// $RLX_MSL_ON_CPU_CACHE or a temporary folder), and launch() calls a kernel for every work-item,
// as a Metal dispatch of groups of 64 threads would. Kernels that wait at threadgroup_barrier or
// in a SIMD-group reduction (the cooperative ones, and loop reductions run as SIMD groups) run
// each group on 64 threads (made once) meeting at a std::barrier, groups one after another; the
// others run their work-items in turn on the calling thread. Buffers are host memory. For the
// tests only.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "device_api.h"
#include "metal_target.h"

namespace rlx::metal::test {

class MslOnCpuApi final : public gpu_host::DeviceApi {
 public:
  std::string target_name() const override { return "metal"; }
  const gpu_host::KernelLibrary& library() const override;
  gpu_host::DeviceBuffer allocate(size_t bytes) override;
  void release(gpu_host::DeviceBuffer& buffer) noexcept override;
  void upload(const gpu_host::DeviceBuffer& dst, const void* src, size_t bytes) override;
  void download(const gpu_host::DeviceBuffer& src, void* dst, size_t bytes) override;
  void copy(const gpu_host::DeviceBuffer& src, const gpu_host::DeviceBuffer& dst,
            size_t bytes) override;
  std::unique_ptr<gpu_host::Module> build(const std::string& source) override;
  void launch(gpu_host::Module& module, const std::string& symbol,
              const std::vector<const gpu_host::DeviceBuffer*>& args, int64_t work_items) override;
  void finish() override {}
};

// The metal target with the C++ stand-in as its device, which runs here: what the suites and the
// fixtures run on (test_msl_on_cpu.cpp, msl_suite_main.cpp).
class MslOnCpuTarget final : public MetalTarget {
 public:
  Verdict can_execute() const override { return Verdict::yes(); }

 protected:
  std::shared_ptr<gpu_host::DeviceApi> open_device_api(std::string*) override {
    return std::make_shared<MslOnCpuApi>();
  }
};

// One such target for a test program (its modules stay built between tests).
inline std::shared_ptr<Target> msl_on_cpu() {
  static auto target = std::make_shared<MslOnCpuTarget>();
  return target;
}

// The C++ translation unit build() compiles for `source`: the MSL, then one extern "C" entry
// `rlx_entry_<kernel>` per kernel that calls it with its buffers and indices.
std::string msl_as_cpp(const std::string& source);

}  // namespace rlx::metal::test
