#include "vulkan_legality.h"

#include <fmt/format.h>

#include <fstream>

#include "signature.h"
#include "target_plugin.h"
#include "rlx/core/error.h"
#include "vulkan_device.h"

namespace rlx::vulkan {

namespace {

using gpu_host::uses;

void write_file(const std::filesystem::path& path, const void* data, size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  if (!out.flush()) throw_user_error(fmt::format("cannot write {}", path.string()));
}

}  // namespace

Verdict shader_legality(const std::string& target, const std::string& language, const NodeSignature& s,
                        const VulkanDeviceInfo* device, const sdk::Dialect* dialect) {
  // GLSL and HLSL have exp, log, tanh, erf, sin, cos and pow on 32-bit floats only.
  if (Verdict v = gpu_host::common_refusals(s, target, language, /*f64_single_only=*/true, dialect);
      !v.ok)
    return v;
  if (!device) return Verdict::yes();
  struct Need {
    DType dtype;
    bool have;
    const char* feature;
  };
  const Need needs[] = {
      {DType::kF64, device->fp64, "shaderFloat64"},
      {DType::kI64, device->int64, "shaderInt64"},
      {DType::kF16, device->storage16 && device->int16, "storageBuffer16BitAccess and shaderInt16"},
      {DType::kBF16, device->storage16 && device->int16, "storageBuffer16BitAccess and shaderInt16"},
      {DType::kI16, device->storage16 && device->int16, "storageBuffer16BitAccess and shaderInt16"},
      {DType::kI8, device->storage8 && device->int8, "storageBuffer8BitAccess and shaderInt8"},
      {DType::kU8, device->storage8 && device->int8, "storageBuffer8BitAccess and shaderInt8"},
      {DType::kBool, device->storage8 && device->int8, "storageBuffer8BitAccess and shaderInt8"},
  };
  for (const Need& n : needs)
    if (!n.have && uses(s, n.dtype))
      return Verdict::no(fmt::format("{} lacks {}, so {} cannot hold the {} values of {}; convert them "
                                     "first (rlx never changes a dtype silently)",
                                     device->describe(), n.feature, target, dtype_name(n.dtype), s.op));
  // Integer pow runs in 64 bits (rlx_ipow).
  bool wide = s.op == "pow" && !s.outputs.empty() && is_integer(s.outputs[0].dtype);
  if (wide && !device->int64)
    return Verdict::no(fmt::format("{} lacks shaderInt64, which {}'s integer pow kernel needs",
                                   device->describe(), target));
  return Verdict::yes();
}

std::vector<Artifact> emit_shader_module(const std::string& module, ShaderLanguage language,
                                         const std::filesystem::path& dir, const std::string& file,
                                         const std::string& kind) {
  std::filesystem::create_directories(dir / "spirv");
  write_file(dir / file, module.data(), module.size());
  std::vector<Artifact> out = {Artifact{file, kind}};
  for (auto& [symbol, text] : sdk::shader_sections(module)) {
    std::vector<uint32_t> spirv = compile_to_spirv(text, language, fmt::format("kernel {}", symbol));
    std::string name = "spirv/" + symbol + ".spv";
    write_file(dir / name, spirv.data(), spirv.size() * sizeof(uint32_t));
    out.push_back(Artifact{name, "spirv"});
  }
  return out;
}

}  // namespace rlx::vulkan
