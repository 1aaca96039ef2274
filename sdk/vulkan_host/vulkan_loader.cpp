#include "vulkan_loader.h"

#include <dlfcn.h>
#include <fmt/format.h>

namespace rlx::vulkan {

namespace {

struct Loaded {
  VulkanApi api;
  std::string error;
};

Loaded load() {
  Loaded l;
  // libvulkan.so.1 is the Khronos loader's soname (Debian's libvulkan1, every GPU driver's).
  void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    l.error = fmt::format("the Vulkan loader libvulkan.so.1 is not installed ({}); install libvulkan1 "
                          "and a driver (mesa-vulkan-drivers has lavapipe, a CPU driver)",
                          dlerror());
    return l;
  }
  l.api.vkGetInstanceProcAddr =
      reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
  if (!l.api.vkGetInstanceProcAddr) {
    l.error = "libvulkan.so.1 lacks vkGetInstanceProcAddr: not a Vulkan loader";
    return l;
  }
  l.api.vkCreateInstance = reinterpret_cast<PFN_vkCreateInstance>(
      l.api.vkGetInstanceProcAddr(nullptr, "vkCreateInstance"));
  if (!l.api.vkCreateInstance) l.error = "the Vulkan loader returned no vkCreateInstance";
  return l;
}

}  // namespace

const VulkanApi* vulkan_loader(std::string* why) {
  static const Loaded loaded = load();
  if (!loaded.error.empty()) {
    if (why) *why = loaded.error;
    return nullptr;
  }
  return &loaded.api;
}

std::string resolve_instance(VulkanApi& api, VkInstance instance) {
  std::string missing;
  auto resolve = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
        api.vkGetInstanceProcAddr(instance, name));
    if (!fn && missing.empty()) missing = name;
  };
#define RLX_VK_RESOLVE(name) resolve(api.name, #name);
  RLX_VK_RESOLVE(vkDestroyInstance)
  RLX_VK_RESOLVE(vkEnumeratePhysicalDevices)
  RLX_VK_RESOLVE(vkGetPhysicalDeviceProperties)
  RLX_VK_RESOLVE(vkGetPhysicalDeviceFeatures2)
  RLX_VK_RESOLVE(vkGetPhysicalDeviceQueueFamilyProperties)
  RLX_VK_RESOLVE(vkGetPhysicalDeviceMemoryProperties)
  RLX_VK_RESOLVE(vkCreateDevice)
  RLX_VK_RESOLVE(vkDestroyDevice)
  RLX_VK_RESOLVE(vkGetDeviceQueue)
  RLX_VK_RESOLVE(vkCreateBuffer)
  RLX_VK_RESOLVE(vkDestroyBuffer)
  RLX_VK_RESOLVE(vkGetBufferMemoryRequirements)
  RLX_VK_RESOLVE(vkAllocateMemory)
  RLX_VK_RESOLVE(vkFreeMemory)
  RLX_VK_RESOLVE(vkBindBufferMemory)
  RLX_VK_RESOLVE(vkMapMemory)
  RLX_VK_RESOLVE(vkUnmapMemory)
  RLX_VK_RESOLVE(vkCreateShaderModule)
  RLX_VK_RESOLVE(vkDestroyShaderModule)
  RLX_VK_RESOLVE(vkCreateDescriptorSetLayout)
  RLX_VK_RESOLVE(vkDestroyDescriptorSetLayout)
  RLX_VK_RESOLVE(vkCreatePipelineLayout)
  RLX_VK_RESOLVE(vkDestroyPipelineLayout)
  RLX_VK_RESOLVE(vkCreateComputePipelines)
  RLX_VK_RESOLVE(vkDestroyPipeline)
  RLX_VK_RESOLVE(vkCreateDescriptorPool)
  RLX_VK_RESOLVE(vkDestroyDescriptorPool)
  RLX_VK_RESOLVE(vkResetDescriptorPool)
  RLX_VK_RESOLVE(vkAllocateDescriptorSets)
  RLX_VK_RESOLVE(vkUpdateDescriptorSets)
  RLX_VK_RESOLVE(vkCreateCommandPool)
  RLX_VK_RESOLVE(vkDestroyCommandPool)
  RLX_VK_RESOLVE(vkAllocateCommandBuffers)
  RLX_VK_RESOLVE(vkResetCommandBuffer)
  RLX_VK_RESOLVE(vkBeginCommandBuffer)
  RLX_VK_RESOLVE(vkEndCommandBuffer)
  RLX_VK_RESOLVE(vkCmdBindPipeline)
  RLX_VK_RESOLVE(vkCmdBindDescriptorSets)
  RLX_VK_RESOLVE(vkCmdDispatch)
  RLX_VK_RESOLVE(vkCmdCopyBuffer)
  RLX_VK_RESOLVE(vkCmdPipelineBarrier)
  RLX_VK_RESOLVE(vkCreateFence)
  RLX_VK_RESOLVE(vkDestroyFence)
  RLX_VK_RESOLVE(vkResetFences)
  RLX_VK_RESOLVE(vkWaitForFences)
  RLX_VK_RESOLVE(vkQueueSubmit)
#undef RLX_VK_RESOLVE
  return missing;
}

std::string vk_result_name(VkResult r) {
  const char* name = nullptr;
  switch (r) {
    case VK_ERROR_OUT_OF_HOST_MEMORY: name = "VK_ERROR_OUT_OF_HOST_MEMORY"; break;
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: name = "VK_ERROR_OUT_OF_DEVICE_MEMORY"; break;
    case VK_ERROR_INITIALIZATION_FAILED: name = "VK_ERROR_INITIALIZATION_FAILED"; break;
    case VK_ERROR_DEVICE_LOST: name = "VK_ERROR_DEVICE_LOST"; break;
    case VK_ERROR_MEMORY_MAP_FAILED: name = "VK_ERROR_MEMORY_MAP_FAILED"; break;
    case VK_ERROR_LAYER_NOT_PRESENT: name = "VK_ERROR_LAYER_NOT_PRESENT"; break;
    case VK_ERROR_EXTENSION_NOT_PRESENT: name = "VK_ERROR_EXTENSION_NOT_PRESENT"; break;
    case VK_ERROR_FEATURE_NOT_PRESENT: name = "VK_ERROR_FEATURE_NOT_PRESENT"; break;
    case VK_ERROR_INCOMPATIBLE_DRIVER: name = "VK_ERROR_INCOMPATIBLE_DRIVER"; break;
    case VK_ERROR_TOO_MANY_OBJECTS: name = "VK_ERROR_TOO_MANY_OBJECTS"; break;
    case VK_ERROR_OUT_OF_POOL_MEMORY: name = "VK_ERROR_OUT_OF_POOL_MEMORY"; break;
    case VK_ERROR_INVALID_SHADER_NV: name = "VK_ERROR_INVALID_SHADER_NV"; break;
    case VK_TIMEOUT: name = "VK_TIMEOUT"; break;
    default: break;
  }
  return name ? fmt::format("{} ({})", name, static_cast<int>(r))
              : fmt::format("VkResult {}", static_cast<int>(r));
}

}  // namespace rlx::vulkan
