// The gpu target's device: one OpenCL device, context and in-order queue per process, behind
// the shared executor's DeviceApi (sdk/gpu_host/device_api.h).
//
// The device is the first GPU of any platform, else the first device of any type; the
// environment variable RLX_OPENCL_DEVICE picks another by a substring of "<platform> / <device>"
// ("NVIDIA", "Portable Computing Language"). Builds are quiet (-w) unless RLX_OPENCL_BUILD_LOG=1,
// which prints every build's log on stderr.
#pragma once
#include <memory>
#include <string>

#include "device_api.h"
#include "opencl_loader.h"

namespace rlx::gpu {

struct OpenClDeviceInfo {
  std::string platform, name, version;  // "Portable Computing Language", "pthread-...", "OpenCL 3.0 ..."
  bool gpu = false;                     // CL_DEVICE_TYPE_GPU
  bool fp64 = false;                    // cl_khr_fp64
  bool correctly_rounded_divide_sqrt = false;
  size_t max_work_group = 1;
  std::string describe() const;  // "<platform> / <name> (<version>)"
};

class OpenClDevice final : public gpu_host::DeviceApi {
 public:
  // The process's device, created on first call; nullptr with `why` set when there is none.
  static std::shared_ptr<OpenClDevice> shared(std::string* why);
  ~OpenClDevice() override;

  const OpenClDeviceInfo& info() const { return info_; }

  std::string target_name() const override { return "gpu"; }
  const gpu_host::KernelLibrary& library() const override;
  gpu_host::DeviceBuffer allocate(size_t bytes) override;
  void release(gpu_host::DeviceBuffer& buffer) noexcept override;
  void upload(const gpu_host::DeviceBuffer& dst, const void* src, size_t bytes) override;
  void download(const gpu_host::DeviceBuffer& src, void* dst, size_t bytes) override;
  void copy(const gpu_host::DeviceBuffer& src, const gpu_host::DeviceBuffer& dst, size_t bytes) override;
  std::unique_ptr<gpu_host::Module> build(const std::string& source) override;
  void launch(gpu_host::Module& module, const std::string& symbol,
              const std::vector<const gpu_host::DeviceBuffer*>& args, int64_t work_items) override;
  void finish() override;
  DeviceLimits limits() const override {
    DeviceLimits l;
    l.max_workgroup_size = static_cast<uint32_t>(info_.max_work_group);
    return l;
  }

 private:
  OpenClDevice(const OpenClApi& cl, cl_device_id device, OpenClDeviceInfo info);
  const OpenClApi& cl_;
  cl_device_id device_;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  OpenClDeviceInfo info_;
  std::string build_options_;
  bool show_build_log_ = false;  // RLX_OPENCL_BUILD_LOG

  void check(cl_int err, const char* call) const;
  std::string build_log(cl_program program) const;
};

}  // namespace rlx::gpu
