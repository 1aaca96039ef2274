// What every GPU-like target plugin answers the same way, with its name and kernel language in
// the words: its version, its one native kernel (Attention; every other HIR op runs its MIR
// decomposition), the refusals all their kernel languages share, its status from a device probe,
// the error when it cannot run, and writing a module's text for emit(). A target derives from
// GpuLikeTargetPlugin and adds its own legality, compile() and emit().
#pragma once
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "device_api.h"
#include "host_memory_pool.h"
#include "rlx/core/device_info.h"
#include "rlx/core/device_stats.h"
#include "rlx/core/host_memory.h"
#include "rlx/sdk/plugin.h"

namespace rlx::gpu_host {

// Whether `op` is one the shader languages (GLSL, HLSL) have for 32-bit floats only: exp, log,
// tanh, erf, sin, cos, pow, logistic. Such ops are refused at f64, never narrowed.
bool f32_only_in_shaders(std::string_view op);

// The refusals every kernel language of these targets shares: not a MIR primitive; complex
// values (none of them has a complex type); with `f64_single_only`, the f32-only ops of the
// shader languages at f64; and, given the dialect the kernels are written in, a dtype it has no
// storage type for (OpenCL C and GLSL as rlx writes them keep u16, u32 and u64 off the GPU), so
// such a node is refused by name when it is dispatched, not when its kernel is written.
// Verdict::yes() when none applies.
Verdict common_refusals(const NodeSignature& s, const std::string& target, const std::string& language,
                        bool f64_single_only, const sdk::Dialect* dialect = nullptr);

// The longest q or v row the native Attention kernel keeps in registers per query.
inline constexpr int64_t kMaxAttentionRow = 256;

// The name users know a software implementation by, from the device name its driver reports:
// "lavapipe" for Mesa's Vulkan llvmpipe (with `vulkan_driver`), "llvmpipe" for its OpenGL one,
// "SwiftShader", "softpipe"; `fallback` when the name says none of these.
std::string software_renderer_name(const std::string& device_name, bool vulkan_driver,
                                   const std::string& fallback);

class GpuLikeTargetPlugin : public sdk::TargetPlugin {
 public:
  GpuLikeTargetPlugin(std::string name, std::string language)
      : name_(std::move(name)), language_(std::move(language)) {}
  std::string name() const override { return name_; }
  Verdict claim_native(const NodeSignature& s) const override;
  // Contract 2.0: the target's memory (gpu_host::ApiDevice) over the DeviceApi its executables
  // run on, or nullptr when this machine has no device for it.
  std::shared_ptr<Device> device() override;
  // kDeviceInfoExtension from describe_device(), asked once; kDeviceStatsExtension where the
  // device API counts its memory or has a clock (DeviceApi::memory_use, make_stamp);
  // kHostMemoryExtension where it has page-locked host memory (DeviceApi::has_host_memory).
  const void* extension(const std::string& name, uint32_t version) const override;

 protected:
  // The device can_execute() found (name, kind, whether software), or nullopt when there is none.
  virtual std::optional<DeviceInfo> describe_device() const { return std::nullopt; }
  // The device API the target runs on, or nullptr with `why` when this machine has none. Asked
  // once; device_api() keeps the answer.
  virtual std::shared_ptr<DeviceApi> open_device_api(std::string* why);
  // open_device_api()'s answer, or throw_cannot_run(why, writes).
  std::shared_ptr<DeviceApi> device_api(const std::string& writes);
  Verdict common_refusals(const NodeSignature& s, bool f64_single_only = false) const {
    return gpu_host::common_refusals(s, name_, language_, f64_single_only, kernel_dialect());
  }
  // The dialect the target's kernels are written in, for common_refusals' storage check;
  // nullptr skips it.
  virtual const sdk::Dialect* kernel_dialect() const { return nullptr; }
  // can_execute() from a device probe: yes (with `detail`, when given, naming the device) or no
  // with the probe's reason.
  static Verdict device_status(bool found, const std::string& why, const std::string& detail = "");
  // compile() without a device: "<name> cannot run here: <why>. `rlx compile --target <name> -o
  // DIR` still writes <writes>".
  [[noreturn]] void throw_cannot_run(const std::string& why, const std::string& writes) const;
  // Writes `text` to dir/file (emit()'s module) and returns the artifact of kind `kind`.
  Artifact write_module(const std::filesystem::path& dir, const std::string& file, const std::string& kind,
                        const std::string& text) const;

 private:
  std::string name_, language_;
  std::once_flag opened_;
  std::shared_ptr<DeviceApi> api_;
  std::string why_;
  std::shared_ptr<Device> device_;
  mutable std::once_flag described_;
  mutable std::optional<DeviceInfo> info_;
  mutable DeviceInfoV1 info_v1_;
  // kDeviceStatsExtension: its table, the two stamps of its clock and the last failure.
  mutable std::once_flag stats_once_;
  mutable std::optional<DeviceStatsV1> stats_v1_;
  mutable std::unique_ptr<DeviceStamp> clock_start_, clock_stop_;
  mutable std::string stats_error_;
  const DeviceStatsV1* device_stats_v1() const;
  template <typename Work>
  static const char* guarded(void* context, Work work) noexcept;
  // kHostMemoryExtension: the pool over the device API's page-locked memory, and its table.
  // Declared after api_, so the pool gives its blocks back before the API closes.
  mutable std::once_flag host_once_;
  mutable std::unique_ptr<HostMemoryPool> host_pool_;
  mutable std::optional<HostMemoryV1> host_v1_;
  const HostMemoryV1* host_memory_v1() const;

  void open();
};

}  // namespace rlx::gpu_host
