#include "target_plugin.h"

#include <fmt/format.h>

#include <array>
#include <fstream>

#include "api_device.h"
#include "signature.h"
#include "rlx/core/error.h"
#include "rlx/core/op_registry.h"

namespace rlx::gpu_host {

bool f32_only_in_shaders(std::string_view op) {
  static constexpr std::array<std::string_view, 8> kOps = {"exp", "log", "tanh", "erf", "sin", "cos", "pow", "logistic"};
  for (std::string_view o : kOps)
    if (o == op) return true;
  return false;
}

Verdict common_refusals(const NodeSignature& s, const std::string& target, const std::string& language,
                        bool f64_single_only) {
  if (Verdict v = sdk::primitive_only(s); !v.ok) return v;
  if (Verdict v = sdk::refuse_complex(s, language, target); !v.ok) return v;
  if (f64_single_only && uses(s, DType::kF64) && f32_only_in_shaders(s.op))
    return sdk::refuse_f64(fmt::format("{} has {} for 32-bit floats only", language, s.op), target, "it");
  return Verdict::yes();
}

Verdict GpuLikeTargetPlugin::claim_native(const NodeSignature& s) const {
  return Verdict::no(fmt::format("{} has no native kernel for {}: it runs the MIR decomposition", name_, s.op));
}

std::shared_ptr<DeviceApi> GpuLikeTargetPlugin::open_device_api(std::string* why) {
  *why = fmt::format("{} has no device API on this platform", name_);
  return nullptr;
}

void GpuLikeTargetPlugin::open() {
  std::call_once(opened_, [&] {
    api_ = open_device_api(&why_);
    if (api_) device_ = std::make_shared<ApiDevice>(api_);
  });
}

std::shared_ptr<DeviceApi> GpuLikeTargetPlugin::device_api(const std::string& writes) {
  open();
  if (!api_) throw_cannot_run(why_, writes);
  return api_;
}

std::shared_ptr<Device> GpuLikeTargetPlugin::device() {
  open();
  return device_;
}

Verdict GpuLikeTargetPlugin::device_status(bool found, const std::string& why, const std::string& detail) {
  if (!found) return Verdict::no(why);
  return detail.empty() ? Verdict::yes() : Verdict{true, detail};
}

void GpuLikeTargetPlugin::throw_cannot_run(const std::string& why, const std::string& writes) const {
  throw_unsupported(fmt::format("{0} cannot run here: {1}. `rlx compile --target {0} -o DIR` still writes {2}", name_,
                               why, writes));
}

Artifact GpuLikeTargetPlugin::write_module(const std::filesystem::path& dir, const std::string& file,
                                           const std::string& kind, const std::string& text) const {
  std::filesystem::create_directories(dir);
  std::ofstream out(dir / file);
  out << text;
  if (!out.flush()) throw_user_error(fmt::format("{}: cannot write {}", name_, (dir / file).string()));
  return Artifact{file, kind};
}

}  // namespace rlx::gpu_host
