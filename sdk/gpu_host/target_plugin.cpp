#include "target_plugin.h"

#include <fmt/format.h>

#include <array>
#include <fstream>

#include "api_device.h"
#include "host_collective.h"
#include "rlx/core/error.h"
#include "rlx/core/op_registry.h"
#include "rlx/sdk/legality.h"
#include "signature.h"

namespace rlx::gpu_host {

bool f32_only_in_shaders(std::string_view op) {
  static constexpr std::array<std::string_view, 8> kOps = {"exp", "log", "tanh", "erf",
                                                           "sin", "cos", "pow",  "logistic"};
  for (std::string_view o : kOps)
    if (o == op) return true;
  return false;
}

Verdict common_refusals(const NodeSignature& s, const std::string& target,
                        const std::string& language, bool f64_single_only,
                        const sdk::Dialect* dialect) {
  if (Verdict v = sdk::primitive_only(s); !v.ok) return v;
  if (Verdict v = sdk::refuse_complex(s, language, target); !v.ok) return v;
  if (dialect)
    for (const auto* list : {&s.inputs, &s.outputs})
      for (const TensorType& t : *list)
        if (t.dtype != DType::kC64 && dialect->storage_type[static_cast<size_t>(t.dtype)].empty())
          return Verdict::no(fmt::format(
              "{} as {} writes it has no {} type, so {} cannot hold the values of {}; convert "
              "them first (rlx never changes a dtype silently)",
              language, target, dtype_name(t.dtype), target, s.op));
  if (f64_single_only && uses(s, DType::kF64) && f32_only_in_shaders(s.op))
    return sdk::refuse_f64(fmt::format("{} has {} for 32-bit floats only", language, s.op), target,
                           "it");
  return Verdict::yes();
}

// Attention is the one HIR op these targets run natively: its decomposition writes the whole
// [B, H, Sq, Sk] score tensor and reads it three times, the fused kernel (sdk::render_attention)
// never stores it. Everything else runs its MIR decomposition.
Verdict GpuLikeTargetPlugin::claim_native(const NodeSignature& s) const {
  // A collective dispatch marked for staging through the host (host_collective.h).
  if (host_staged(s.attrs)) return claim_host_staged(s, name_);
  auto refuse = [&](const std::string& why) {
    return Verdict::no(fmt::format("{}'s native {} kernel {}", name_, s.op, why));
  };
  auto f32_class = [](DType t) {
    return t == DType::kF16 || t == DType::kBF16 || t == DType::kF32;
  };
  // The native kernels read every operand as a conversion to f32 would and write their output as
  // one from f32: the target's own legality (its language's and device's dtypes) decides both.
  auto conversions_legal = [&]() {
    std::vector<std::pair<TensorType, TensorType>> conversions;
    for (const TensorType& t : s.inputs)
      conversions.push_back({t, TensorType{DType::kF32, t.shape}});
    conversions.push_back({TensorType{DType::kF32, s.outputs[0].shape}, s.outputs[0]});
    for (const auto& [from, to] : conversions) {
      if (from.dtype == to.dtype) continue;
      Verdict v = accepts_primitive(NodeSignature{"convert", {from}, {to}, {}});
      if (!v.ok)
        return refuse(fmt::format("reads and writes its tensors as conversions, and {}", v.reason));
    }
    return Verdict::yes();
  };
  // LayerNorm and RMSNorm: one cooperative kernel per row (sdk::render_norm) instead of a
  // reduction kernel per statistic. f16 and bf16 tensors are computed in f32, as the
  // decomposition computes them on these targets (16-bit values are stored, not computed).
  if (s.op == "LayerNorm" || s.op == "RMSNorm") {
    if (Verdict form = sdk::norm_form(s); !form.ok) return refuse(form.reason);
    for (const auto* list : {&s.inputs, &s.outputs})
      for (const TensorType& t : *list)
        if (!f32_class(t.dtype)) return refuse("computes f16, bf16 and f32 only");
    return conversions_legal();  // every GPU-style language has workgroup-shared memory
  }
  if (s.op != "Attention")
    return Verdict::no(
        fmt::format("{} has no native kernel for {}: it runs the MIR decomposition", name_, s.op));
  if (Verdict form = sdk::attention_form(s); !form.ok) return refuse(form.reason);
  for (size_t i = 0; i < 3; ++i)
    if (!f32_class(s.inputs[i].dtype)) return refuse("computes f16, bf16 and f32 only");
  if (!f32_class(s.outputs[0].dtype)) return refuse("computes f16, bf16 and f32 only");
  const int64_t d = s.inputs[0].shape[3].value, dv = s.inputs[2].shape[3].value;
  if (d > kMaxAttentionRow || dv > kMaxAttentionRow)
    return refuse(fmt::format(
        "keeps a query's rows in registers, at most {} elements; this one has {} and {}",
        kMaxAttentionRow, d, dv));
  return conversions_legal();
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

// Failures cross the boundary as a message kept in the target (stats_error_).
template <typename Work>
const char* GpuLikeTargetPlugin::guarded(void* context, Work work) noexcept {
  auto* self = static_cast<GpuLikeTargetPlugin*>(context);
  try {
    work(*self);
    return nullptr;
  } catch (const std::exception& e) {
    self->stats_error_ = e.what();
  } catch (...) {
    self->stats_error_ = "an unknown error";
  }
  return self->stats_error_.c_str();
}

const DeviceStatsV1* GpuLikeTargetPlugin::device_stats_v1() const {
  // The device opens on first use whichever entry point asks; device() is the const-less one.
  const_cast<GpuLikeTargetPlugin*>(this)->open();
  if (!api_) return nullptr;
  std::call_once(stats_once_, [&] {
    DeviceStatsV1 v;
    v.context = const_cast<GpuLikeTargetPlugin*>(this);
    if (api_->memory_use())
      v.memory = [](void* context, uint64_t* bytes, uint64_t* peak) noexcept {
        return guarded(context, [&](GpuLikeTargetPlugin& self) {
          const DeviceMemoryUse use = self.api_->memory_use().value_or(DeviceMemoryUse{});
          *bytes = use.bytes;
          *peak = use.peak_bytes;
        });
      };
    if ((clock_start_ = api_->make_stamp())) {
      clock_stop_ = api_->make_stamp();
      v.clock_start = [](void* context) noexcept {
        return guarded(context, [](GpuLikeTargetPlugin& self) { self.clock_start_->record(); });
      };
      v.clock_stop = [](void* context, double* ms) noexcept {
        return guarded(context, [&](GpuLikeTargetPlugin& self) {
          self.clock_stop_->record();
          *ms = self.clock_stop_->ms_since(*self.clock_start_);
        });
      };
    }
    if (v.memory || v.clock_start) stats_v1_ = v;
  });
  return stats_v1_ ? &*stats_v1_ : nullptr;
}

const HostMemoryV1* GpuLikeTargetPlugin::host_memory_v1() const {
  const_cast<GpuLikeTargetPlugin*>(this)->open();
  if (!api_ || !api_->has_host_memory()) return nullptr;
  std::call_once(host_once_, [&] {
    DeviceApi* api = api_.get();
    host_pool_ = std::make_unique<HostMemoryPool>(
        [api](size_t bytes) { return api->allocate_host(bytes); },
        [api](void* data) { api->release_host(data); });
    HostMemoryV1 v;
    v.context = host_pool_.get();
    v.allocate = [](void* context, uint64_t bytes) noexcept {
      return static_cast<HostMemoryPool*>(context)->take(bytes);
    };
    v.release = [](void* context, void* data, uint64_t bytes) noexcept {
      static_cast<HostMemoryPool*>(context)->give_back(data, bytes);
    };
    // Below this a copy is mostly the call's own cost, pageable or not.
    v.min_bytes = HostMemoryPool::kGranule;
    host_v1_ = v;
  });
  return host_v1_ ? &*host_v1_ : nullptr;
}

const void* GpuLikeTargetPlugin::extension(const std::string& name, uint32_t version) const {
  if (name == kDeviceStatsExtension && version == kDeviceStatsVersion) return device_stats_v1();
  if (name == kHostMemoryExtension && version == kHostMemoryVersion) return host_memory_v1();
  if (name == kHostCollectivesExtension && version == kHostCollectivesVersion)
    return host_collectives_v1();
  if (name != kDeviceInfoExtension || version != kDeviceInfoVersion) return nullptr;
  std::call_once(described_, [&] {
    info_ = describe_device();
    if (!info_) return;
    info_v1_.name = info_->name.c_str();
    info_v1_.kind = info_->kind.c_str();
    info_v1_.software = info_->software ? 1 : 0;
    info_v1_.software_name = info_->software_name.c_str();
  });
  return info_ ? &info_v1_ : nullptr;
}

std::string software_renderer_name(const std::string& device_name, bool vulkan_driver,
                                   const std::string& fallback) {
  auto has = [&](const char* word) { return device_name.find(word) != std::string::npos; };
  if (has("llvmpipe")) return vulkan_driver ? "lavapipe" : "llvmpipe";
  if (has("SwiftShader")) return "SwiftShader";
  if (has("softpipe")) return "softpipe";
  return fallback;
}

Verdict GpuLikeTargetPlugin::device_status(bool found, const std::string& why,
                                           const std::string& detail) {
  if (!found) return Verdict::no(why);
  return detail.empty() ? Verdict::yes() : Verdict{true, detail};
}

void GpuLikeTargetPlugin::throw_cannot_run(const std::string& why,
                                           const std::string& writes) const {
  throw_unsupported(
      fmt::format("{0} cannot run here: {1}. `rlx compile --target {0} -o DIR` still writes {2}",
                  name_, why, writes));
}

Artifact GpuLikeTargetPlugin::write_module(const std::filesystem::path& dir,
                                           const std::string& file, const std::string& kind,
                                           const std::string& text) const {
  std::filesystem::create_directories(dir);
  std::ofstream out(dir / file);
  out << text;
  if (!out.flush())
    throw_user_error(fmt::format("{}: cannot write {}", name_, (dir / file).string()));
  return Artifact{file, kind};
}

}  // namespace rlx::gpu_host
