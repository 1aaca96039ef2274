// The opengl target's device: an OpenGL 4.3 core context made without a window (EGL on Mesa's
// surfaceless platform, EGL_PLATFORM_SURFACELESS_MESA; llvmpipe on CPUs), one per process,
// behind the shared GPU host's DeviceApi. libEGL.so.1 is opened with dlopen and every GL entry
// point comes from eglGetProcAddress, so the plugin loads anywhere and says why it cannot run.
//
// Kernels are GLSL 4.30 compute shaders (one program per kernel section of the module); buffers
// are shader storage buffers; GL orders commands itself, and glMemoryBarrier after each dispatch
// makes its writes visible to the next dispatch, copy and read-back.
#pragma once
#include <memory>
#include <string>

#include "device_api.h"

namespace rlx::opengl {

struct GlInfo {
  std::string renderer, version;  // "llvmpipe (LLVM 15.0.6, 256 bits)", "4.5 (Core Profile) Mesa 22.3.6"
  bool int64 = false;             // GL_ARB_gpu_shader_int64
  int max_storage_blocks = 0;     // GL_MAX_COMPUTE_SHADER_STORAGE_BLOCKS
  int max_groups[3] = {0, 0, 0};  // GL_MAX_COMPUTE_WORK_GROUP_COUNT
  std::string describe() const;   // "llvmpipe (...) (OpenGL 4.5 (Core Profile) Mesa 22.3.6)"
};

class GlContext;

class GlDevice final : public gpu_host::DeviceApi {
 public:
  // The process's device; nullptr with `why` set when there is no usable OpenGL 4.3 context.
  static std::shared_ptr<GlDevice> shared(std::string* why);
  explicit GlDevice(GlContext& context) : c_(context) {}
  const GlInfo& info() const;

  std::string target_name() const override { return "opengl"; }
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
    l.max_buffers_per_kernel = static_cast<uint32_t>(info().max_storage_blocks);
    return l;
  }

 private:
  GlContext& c_;
};

}  // namespace rlx::opengl
