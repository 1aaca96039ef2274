// The Vulkan entry points the vulkan target uses, resolved from the loader (libvulkan.so.1) with
// dlopen on first use, so the plugin loads on machines without Vulkan and says why it cannot run
// there. Vulkan 1.1 calls only, plus vkGetPhysicalDeviceFeatures2 (core in 1.1).
#pragma once
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <string>

namespace rlx::vulkan {

struct VulkanApi {
#define RLX_VK_FN(name) PFN_##name name = nullptr;
  RLX_VK_FN(vkGetInstanceProcAddr)
  RLX_VK_FN(vkCreateInstance)
  RLX_VK_FN(vkDestroyInstance)
  RLX_VK_FN(vkEnumeratePhysicalDevices)
  RLX_VK_FN(vkGetPhysicalDeviceProperties)
  RLX_VK_FN(vkGetPhysicalDeviceFeatures2)
  RLX_VK_FN(vkGetPhysicalDeviceQueueFamilyProperties)
  RLX_VK_FN(vkGetPhysicalDeviceMemoryProperties)
  RLX_VK_FN(vkCreateDevice)
  RLX_VK_FN(vkDestroyDevice)
  RLX_VK_FN(vkGetDeviceQueue)
  RLX_VK_FN(vkCreateBuffer)
  RLX_VK_FN(vkDestroyBuffer)
  RLX_VK_FN(vkGetBufferMemoryRequirements)
  RLX_VK_FN(vkAllocateMemory)
  RLX_VK_FN(vkFreeMemory)
  RLX_VK_FN(vkBindBufferMemory)
  RLX_VK_FN(vkMapMemory)
  RLX_VK_FN(vkUnmapMemory)
  RLX_VK_FN(vkCreateShaderModule)
  RLX_VK_FN(vkDestroyShaderModule)
  RLX_VK_FN(vkCreateDescriptorSetLayout)
  RLX_VK_FN(vkDestroyDescriptorSetLayout)
  RLX_VK_FN(vkCreatePipelineLayout)
  RLX_VK_FN(vkDestroyPipelineLayout)
  RLX_VK_FN(vkCreateComputePipelines)
  RLX_VK_FN(vkDestroyPipeline)
  RLX_VK_FN(vkCreateDescriptorPool)
  RLX_VK_FN(vkDestroyDescriptorPool)
  RLX_VK_FN(vkResetDescriptorPool)
  RLX_VK_FN(vkAllocateDescriptorSets)
  RLX_VK_FN(vkUpdateDescriptorSets)
  RLX_VK_FN(vkCreateCommandPool)
  RLX_VK_FN(vkDestroyCommandPool)
  RLX_VK_FN(vkAllocateCommandBuffers)
  RLX_VK_FN(vkResetCommandBuffer)
  RLX_VK_FN(vkBeginCommandBuffer)
  RLX_VK_FN(vkEndCommandBuffer)
  RLX_VK_FN(vkCmdBindPipeline)
  RLX_VK_FN(vkCmdBindDescriptorSets)
  RLX_VK_FN(vkCmdDispatch)
  RLX_VK_FN(vkCmdCopyBuffer)
  RLX_VK_FN(vkCmdPipelineBarrier)
  RLX_VK_FN(vkCreateFence)
  RLX_VK_FN(vkDestroyFence)
  RLX_VK_FN(vkResetFences)
  RLX_VK_FN(vkWaitForFences)
  RLX_VK_FN(vkQueueSubmit)
#undef RLX_VK_FN
};

// The loader and its global entry points, or nullptr with `why` set. Loaded once per process and
// never unloaded. Instance-level entry points are resolved by resolve_instance().
const VulkanApi* vulkan_loader(std::string* why);
// Fills the instance- and device-level entry points of `api` through vkGetInstanceProcAddr;
// returns the name of the first one missing, or "".
std::string resolve_instance(VulkanApi& api, VkInstance instance);

// "VK_ERROR_OUT_OF_DEVICE_MEMORY (-2)".
std::string vk_result_name(VkResult r);

}  // namespace rlx::vulkan
