#include "vulkan_device.h"

#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "rlx/core/error.h"
#include "rlx/core/progress.h"
#include "rlx/sdk/render.h"

namespace rlx::vulkan {

namespace {

const char* kind_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete gpu";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated gpu";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual gpu";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "cpu";
    default:
      return "other";
  }
}

int preference(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return 3;
    default:
      return 4;
  }
}

struct Allocation {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void* mapped = nullptr;
  VkDeviceSize size = 0;
  VkDeviceSize allocated = 0;  // the memory the driver gave it (memory_use)
  bool host_cached = false;  // the CPU reads the mapping through its caches
};

// Downloads smaller than this read the buffer's mapping directly even where it is uncached: a
// staging copy would cost more than the slow read.
constexpr size_t kStagedReadback = 4096;

// A large result leaves a GPU's mapped memory faster on several cores than on one (a single core
// reads host memory at a few GB/s; MiniLM's output at batch 128 is 25 MB).
void copy_out(void* dst, const void* src, size_t bytes) {
  constexpr size_t kChunk = size_t{1} << 20;
  if (bytes < 4 * kChunk) {
    std::memcpy(dst, src, bytes);
    return;
  }
  tbb::parallel_for(tbb::blocked_range<size_t>(0, (bytes + kChunk - 1) / kChunk),
                    [&](const tbb::blocked_range<size_t>& r) {
                      for (size_t i = r.begin(); i != r.end(); ++i)
                        std::memcpy(static_cast<char*>(dst) + i * kChunk,
                                    static_cast<const char*>(src) + i * kChunk,
                                    std::min(kChunk, bytes - i * kChunk));
                    });
}

Allocation* alloc_of(const gpu_host::DeviceBuffer& b) {
  return static_cast<Allocation*>(b.handle);
}

}  // namespace

std::string VulkanDeviceInfo::describe() const {
  return fmt::format("{} (Vulkan {}, {})", name, api, kind);
}

// The instance, device and queue, and the command recording state shared by every adapter.
class VulkanContext {
 public:
  VulkanContext(const VulkanApi& loader, std::string* why) : vk_(loader) { ok_ = init(why); }
  ~VulkanContext() = delete;  // never destroyed: drivers must not be torn down at exit
  bool ok() const { return ok_; }
  const VulkanApi& vk() const { return vk_; }
  VkDevice device() const { return device_; }
  const VulkanDeviceInfo& info() const { return info_; }
  std::mutex& mutex() { return mutex_; }

  void check(VkResult r, const char* call) const {
    if (r == VK_SUCCESS) return;
    throw Error(ErrorKind::kUser, fmt::format("Vulkan {} failed on {}: {}", call, info_.describe(),
                                              vk_result_name(r)));
  }

  uint32_t memory_type(uint32_t allowed) const {
    VkMemoryPropertyFlags want =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    for (VkMemoryPropertyFlags extra :
         {VkMemoryPropertyFlags(VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT), VkMemoryPropertyFlags(0)})
      for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i)
        if ((allowed & (1u << i)) &&
            (memory_.memoryTypes[i].propertyFlags & (want | extra)) == (want | extra))
          return i;
    throw Error(ErrorKind::kUser,
                fmt::format("{} has no host-visible coherent memory", info_.describe()));
  }

  // Memory a download reads fast: host-visible, coherent and cached, else any host-visible
  // coherent type outside the device. A discrete GPU's device-local host-visible memory (its BAR,
  // where memory_type puts buffers) is read by the CPU uncached, at tens of MB/s: outputs are
  // copied from it into this kind first.
  uint32_t readback_type(uint32_t allowed) const {
    const VkMemoryPropertyFlags visible =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    for (VkMemoryPropertyFlags want : {visible | VK_MEMORY_PROPERTY_HOST_CACHED_BIT, visible})
      for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i)
        if ((allowed & (1u << i)) && (memory_.memoryTypes[i].propertyFlags & want) == want &&
            !(memory_.memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT))
          return i;
    return memory_type(allowed);
  }

  bool host_cached(uint32_t type) const {
    return !staged_readback_forced() &&
           (memory_.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
  }

  // RLX_VULKAN_STAGED_READBACK=1 reads every download through the staging copy, so a CPU driver
  // (lavapipe's one memory type is cached) runs the path the tests must cover.
  static bool staged_readback_forced() {
    static const bool forced = [] {
      const char* v = std::getenv("RLX_VULKAN_STAGED_READBACK");
      return v && std::string(v) == "1";
    }();
    return forced;
  }

  // The command buffer being recorded, begun on first use after a submit.
  VkCommandBuffer recording() {
    if (!recording_) {
      VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
      begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
      check(vk_.vkBeginCommandBuffer(commands_, &begin), "vkBeginCommandBuffer");
      recording_ = true;
    }
    return commands_;
  }

  // Every later command sees the memory written by every earlier one. The host is left out:
  // flush() makes the writes visible to it once per submission, not after every dispatch.
  void barrier() {
    memory_barrier(VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                       VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                   VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT);
  }

  // Submits what was recorded and waits for it; descriptor sets are recycled.
  void flush() {
    if (!recording_) return;
    memory_barrier(VK_ACCESS_HOST_READ_BIT, VK_PIPELINE_STAGE_HOST_BIT);
    recording_ = false;
    check(vk_.vkEndCommandBuffer(commands_), "vkEndCommandBuffer");
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &commands_;
    check(vk_.vkQueueSubmit(queue_, 1, &submit, fence_), "vkQueueSubmit");
    check(vk_.vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    check(vk_.vkResetFences(device_, 1, &fence_), "vkResetFences");
    check(vk_.vkResetCommandBuffer(commands_, 0), "vkResetCommandBuffer");
    check(vk_.vkResetDescriptorPool(device_, pool_, 0), "vkResetDescriptorPool");
  }

  VkDescriptorSet descriptor_set(VkDescriptorSetLayout layout) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      VkDescriptorSetAllocateInfo a{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
      a.descriptorPool = pool_;
      a.descriptorSetCount = 1;
      a.pSetLayouts = &layout;
      VkDescriptorSet set = VK_NULL_HANDLE;
      VkResult r = vk_.vkAllocateDescriptorSets(device_, &a, &set);
      if (r == VK_SUCCESS) return set;
      if (attempt == 0 && (r == VK_ERROR_OUT_OF_POOL_MEMORY || r == VK_ERROR_FRAGMENTED_POOL)) {
        flush();  // the pool is full of sets of recorded launches: run them, then reuse it
        continue;
      }
      check(r, "vkAllocateDescriptorSets");
    }
    throw_internal_error("vulkan: descriptor pool exhausted after a reset");
  }

 private:
  void memory_barrier(VkAccessFlags dst_access, VkPipelineStageFlags dst_stages) {
    VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    b.dstAccessMask = dst_access;
    vk_.vkCmdPipelineBarrier(recording(),
                             VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                             dst_stages, 0, 1, &b, 0, nullptr, 0, nullptr);
  }

  VulkanApi vk_;
  bool ok_ = false;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer commands_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkDescriptorPool pool_ = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory_{};
  VulkanDeviceInfo info_;
  bool recording_ = false;
  std::mutex mutex_;

  bool init(std::string* why) {
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "rlx";
    app.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ci.pApplicationInfo = &app;
    VkResult r = vk_.vkCreateInstance(&ci, nullptr, &instance_);
    if (r != VK_SUCCESS) {
      *why = fmt::format(
          "vkCreateInstance failed ({}): no Vulkan driver is installed or none could be "
          "loaded (VK_LOADER_DEBUG=error says why); install one (mesa-vulkan-drivers has "
          "lavapipe, a CPU driver)",
          vk_result_name(r));
      return false;
    }
    if (std::string missing = resolve_instance(vk_, instance_); !missing.empty()) {
      *why = fmt::format("the Vulkan loader lacks {}: Vulkan 1.1 is needed", missing);
      return false;
    }
    uint32_t n = 0;
    vk_.vkEnumeratePhysicalDevices(instance_, &n, nullptr);
    if (n == 0) {
      *why =
          "the Vulkan loader found no device; install a driver (mesa-vulkan-drivers has "
          "lavapipe, a CPU driver)";
      return false;
    }
    std::vector<VkPhysicalDevice> all(n);
    vk_.vkEnumeratePhysicalDevices(instance_, &n, all.data());
    std::vector<std::pair<VkPhysicalDevice, VkPhysicalDeviceProperties>> usable;
    for (VkPhysicalDevice d : all) {
      VkPhysicalDeviceProperties p;
      vk_.vkGetPhysicalDeviceProperties(d, &p);
      if (p.apiVersion >= VK_API_VERSION_1_1) usable.emplace_back(d, p);
    }
    if (usable.empty()) {
      *why = fmt::format("the {} Vulkan device(s) found support only Vulkan 1.0; 1.1 is needed", n);
      return false;
    }
    const char* want = std::getenv("RLX_VULKAN_DEVICE");
    auto pick = usable.end();
    if (want && *want) {
      pick = std::find_if(usable.begin(), usable.end(), [&](auto& u) {
        return std::string(u.second.deviceName).find(want) != std::string::npos;
      });
      if (pick == usable.end()) {
        std::string names;
        for (auto& u : usable)
          names += (names.empty() ? "" : "; ") + std::string(u.second.deviceName);
        *why =
            fmt::format("no Vulkan device matches RLX_VULKAN_DEVICE='{}' (found: {})", want, names);
        return false;
      }
    } else {
      pick = std::min_element(usable.begin(), usable.end(), [](auto& a, auto& b) {
        return preference(a.second.deviceType) < preference(b.second.deviceType);
      });
    }
    physical_ = pick->first;
    const VkPhysicalDeviceProperties& props = pick->second;
    info_.name = props.deviceName;
    info_.api =
        fmt::format("{}.{}.{}", VK_API_VERSION_MAJOR(props.apiVersion),
                    VK_API_VERSION_MINOR(props.apiVersion), VK_API_VERSION_PATCH(props.apiVersion));
    info_.kind = kind_name(props.deviceType);
    for (int i = 0; i < 3; ++i) info_.max_groups[i] = props.limits.maxComputeWorkGroupCount[i];
    info_.max_storage_range = props.limits.maxStorageBufferRange;
    info_.max_storage_buffers = props.limits.maxPerStageDescriptorStorageBuffers;

    // Features: what the device has is what the device gets (and what the target accepts).
    const bool v12 = props.apiVersion >= VK_API_VERSION_1_2;
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDevice16BitStorageFeatures f16{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDeviceFeatures2 f{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    f.pNext = &f16;
    if (v12) f16.pNext = &f12;
    vk_.vkGetPhysicalDeviceFeatures2(physical_, &f);
    VkPhysicalDeviceFeatures2 enable{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    VkPhysicalDevice16BitStorageFeatures e16{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDeviceVulkan12Features e12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    enable.pNext = &e16;
    if (v12) e16.pNext = &e12;
    info_.fp64 = (enable.features.shaderFloat64 = f.features.shaderFloat64) != VK_FALSE;
    info_.int64 = (enable.features.shaderInt64 = f.features.shaderInt64) != VK_FALSE;
    info_.int16 = (enable.features.shaderInt16 = f.features.shaderInt16) != VK_FALSE;
    info_.storage16 = (e16.storageBuffer16BitAccess = f16.storageBuffer16BitAccess) != VK_FALSE;
    if (v12) {
      info_.storage8 = (e12.storageBuffer8BitAccess = f12.storageBuffer8BitAccess) != VK_FALSE;
      info_.int8 = (e12.shaderInt8 = f12.shaderInt8) != VK_FALSE;
    }

    uint32_t nq = 0;
    vk_.vkGetPhysicalDeviceQueueFamilyProperties(physical_, &nq, nullptr);
    std::vector<VkQueueFamilyProperties> families(nq);
    vk_.vkGetPhysicalDeviceQueueFamilyProperties(physical_, &nq, families.data());
    uint32_t family = nq;
    for (uint32_t i = 0; i < nq && family == nq; ++i)
      if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) family = i;
    if (family == nq) {
      *why = fmt::format("{} has no compute queue", info_.describe());
      return false;
    }
    float priority = 1;
    VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    q.queueFamilyIndex = family;
    q.queueCount = 1;
    q.pQueuePriorities = &priority;
    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.pNext = &enable;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &q;
    r = vk_.vkCreateDevice(physical_, &dci, nullptr, &device_);
    if (r != VK_SUCCESS) {
      *why = fmt::format("vkCreateDevice failed on {}: {}", info_.describe(), vk_result_name(r));
      return false;
    }
    vk_.vkGetDeviceQueue(device_, family, 0, &queue_);
    vk_.vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);
    try {
      VkCommandPoolCreateInfo cp{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
      cp.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
      cp.queueFamilyIndex = family;
      check(vk_.vkCreateCommandPool(device_, &cp, nullptr, &command_pool_), "vkCreateCommandPool");
      VkCommandBufferAllocateInfo cb{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
      cb.commandPool = command_pool_;
      cb.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
      cb.commandBufferCount = 1;
      check(vk_.vkAllocateCommandBuffers(device_, &cb, &commands_), "vkAllocateCommandBuffers");
      VkFenceCreateInfo fc{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
      check(vk_.vkCreateFence(device_, &fc, nullptr, &fence_), "vkCreateFence");
      VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 16384};
      VkDescriptorPoolCreateInfo dp{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
      dp.maxSets = 2048;
      dp.poolSizeCount = 1;
      dp.pPoolSizes = &size;
      check(vk_.vkCreateDescriptorPool(device_, &dp, nullptr, &pool_), "vkCreateDescriptorPool");
    } catch (const std::exception& e) {
      *why = e.what();
      return false;
    }
    return true;
  }
};

namespace {

struct Found {
  VulkanContext* context = nullptr;
  // A context that failed to come up, kept (never destroyed, like a working one) so that it
  // stays reachable: dropped, LeakSanitizer reported it as a leak at every exit.
  VulkanContext* unusable = nullptr;
  std::string error;
};

const Found& found() {
  static const Found* f = [] {
    auto* out = new Found;
    std::string why;
    const VulkanApi* loader = vulkan_loader(&why);
    if (!loader) {
      out->error = why;
      return out;
    }
    auto* c = new VulkanContext(*loader, &why);
    if (c->ok()) {
      out->context = c;
    } else {
      out->unusable = c;
      out->error = why;
    }
    return out;
  }();
  return *f;
}

// One kernel of a module: its SPIR-V, and the pipeline made for it on first launch.
struct ShaderKernel {
  std::vector<uint32_t> spirv;
  VkShaderModule module = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  size_t bindings = 0;
};

class ShaderModule final : public gpu_host::Module {
 public:
  explicit ShaderModule(VulkanContext& c) : c_(c) {}
  ~ShaderModule() override {
    const VulkanApi& vk = c_.vk();
    std::lock_guard lock(c_.mutex());
    c_.flush();  // recorded launches may still use these pipelines
    for (auto& [name, k] : kernels) {
      if (k.pipeline) vk.vkDestroyPipeline(c_.device(), k.pipeline, nullptr);
      if (k.layout) vk.vkDestroyPipelineLayout(c_.device(), k.layout, nullptr);
      if (k.set_layout) vk.vkDestroyDescriptorSetLayout(c_.device(), k.set_layout, nullptr);
      if (k.module) vk.vkDestroyShaderModule(c_.device(), k.module, nullptr);
    }
  }
  std::map<std::string, ShaderKernel, std::less<>> kernels;

 private:
  VulkanContext& c_;
};

}  // namespace

const VulkanDeviceInfo* VulkanDevice::probe(std::string* why) {
  const Found& f = found();
  if (!f.context) {
    if (why) *why = f.error;
    return nullptr;
  }
  return &f.context->info();
}

std::shared_ptr<VulkanDevice> VulkanDevice::create(const std::string& target_name,
                                                   const gpu_host::KernelLibrary& library,
                                                   ShaderLanguage language, std::string* why) {
  const Found& f = found();
  if (!f.context) {
    if (why) *why = f.error;
    return nullptr;
  }
  // The context is never destroyed; the shared_ptr does not own it.
  std::shared_ptr<VulkanContext> c(f.context, [](VulkanContext*) {});
  return std::make_shared<VulkanDevice>(c, target_name, library, language);
}

VulkanDevice::VulkanDevice(std::shared_ptr<VulkanContext> context, std::string target_name,
                           const gpu_host::KernelLibrary& library, ShaderLanguage language)
    : context_(std::move(context)),
      name_(std::move(target_name)),
      library_(library),
      language_(language) {}

VulkanDevice::~VulkanDevice() {
  release(readback_);
}

const VulkanDeviceInfo& VulkanDevice::info() const {
  return context_->info();
}

std::optional<gpu_host::DeviceMemoryUse> VulkanDevice::memory_use() const {
  std::lock_guard lock(context_->mutex());
  return use_;
}

gpu_host::DeviceBuffer VulkanDevice::allocate(size_t bytes) {
  return create(bytes, false);
}

gpu_host::DeviceBuffer VulkanDevice::create(size_t bytes, bool readback) {
  VulkanContext& c = *context_;
  const VulkanApi& vk = c.vk();
  auto a = std::make_unique<Allocation>();
  a->size = (bytes + 15) / 16 * 16;
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = a->size;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
             VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  std::lock_guard lock(c.mutex());
  c.check(vk.vkCreateBuffer(c.device(), &bi, nullptr, &a->buffer), "vkCreateBuffer");
  VkMemoryRequirements req;
  vk.vkGetBufferMemoryRequirements(c.device(), a->buffer, &req);
  VkMemoryAllocateInfo mi{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mi.allocationSize = req.size;
  mi.memoryTypeIndex =
      readback ? c.readback_type(req.memoryTypeBits) : c.memory_type(req.memoryTypeBits);
  a->host_cached = c.host_cached(mi.memoryTypeIndex);
  VkResult r = vk.vkAllocateMemory(c.device(), &mi, nullptr, &a->memory);
  if (r != VK_SUCCESS) {
    vk.vkDestroyBuffer(c.device(), a->buffer, nullptr);
    throw Error(ErrorKind::kUser, fmt::format("{}: cannot allocate {} bytes on {}: {}", name_,
                                              bytes, c.info().describe(), vk_result_name(r)));
  }
  c.check(vk.vkBindBufferMemory(c.device(), a->buffer, a->memory, 0), "vkBindBufferMemory");
  c.check(vk.vkMapMemory(c.device(), a->memory, 0, VK_WHOLE_SIZE, 0, &a->mapped), "vkMapMemory");
  a->allocated = req.size;
  use_.bytes += req.size;
  use_.peak_bytes = std::max(use_.peak_bytes, use_.bytes);
  return {a.release(), bytes};
}

void VulkanDevice::release(gpu_host::DeviceBuffer& b) noexcept {
  Allocation* a = alloc_of(b);
  if (!a) return;
  VulkanContext& c = *context_;
  std::lock_guard lock(c.mutex());
  try {
    c.flush();  // recorded commands may still use the buffer
  } catch (...) {
  }
  c.vk().vkDestroyBuffer(c.device(), a->buffer, nullptr);
  c.vk().vkUnmapMemory(c.device(), a->memory);
  c.vk().vkFreeMemory(c.device(), a->memory, nullptr);
  use_.bytes -= a->allocated;
  delete a;
  b.handle = nullptr;
}

void VulkanDevice::upload(const gpu_host::DeviceBuffer& dst, const void* src, size_t bytes) {
  std::lock_guard lock(context_->mutex());
  context_->flush();  // recorded commands may read the old contents
  std::memcpy(alloc_of(dst)->mapped, src, bytes);
}

void VulkanDevice::download(const gpu_host::DeviceBuffer& src, void* dst, size_t bytes) {
  Allocation* a = alloc_of(src);
  if (a->host_cached || (bytes < kStagedReadback && !VulkanContext::staged_readback_forced())) {
    std::lock_guard lock(context_->mutex());
    context_->flush();
    copy_out(dst, a->mapped, bytes);
    return;
  }
  if (!readback_.valid() || readback_.bytes < bytes) {
    release(readback_);
    readback_ = create(bytes, true);
  }
  std::lock_guard lock(context_->mutex());
  VkBufferCopy region{0, 0, bytes};
  context_->vk().vkCmdCopyBuffer(context_->recording(), a->buffer, alloc_of(readback_)->buffer, 1,
                                 &region);
  context_->barrier();
  context_->flush();
  copy_out(dst, alloc_of(readback_)->mapped, bytes);
}

void VulkanDevice::copy(const gpu_host::DeviceBuffer& src, const gpu_host::DeviceBuffer& dst,
                        size_t bytes) {
  if (bytes == 0) return;
  std::lock_guard lock(context_->mutex());
  VkBufferCopy region{0, 0, bytes};
  context_->vk().vkCmdCopyBuffer(context_->recording(), alloc_of(src)->buffer,
                                 alloc_of(dst)->buffer, 1, &region);
  context_->barrier();
}

std::unique_ptr<gpu_host::Module> VulkanDevice::build(const std::string& source) {
  auto module = std::make_unique<ShaderModule>(*context_);
  auto sections = sdk::shader_sections(source);
  progress::Task task(fmt::format("{}: compiling shaders to SPIR-V", name_),
                      static_cast<int64_t>(sections.size()));
  for (auto& [symbol, text] : sections) {
    ShaderKernel k;
    k.spirv = compile_to_spirv(text, language_, fmt::format("{} kernel {}", name_, symbol));
    module->kernels.emplace(symbol, std::move(k));
    task.advance();
  }
  const VulkanApi& vk = context_->vk();
  std::lock_guard lock(context_->mutex());
  for (auto& [symbol, k] : module->kernels) {
    VkShaderModuleCreateInfo ci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    ci.codeSize = k.spirv.size() * sizeof(uint32_t);
    ci.pCode = k.spirv.data();
    context_->check(vk.vkCreateShaderModule(context_->device(), &ci, nullptr, &k.module),
                    "vkCreateShaderModule");
  }
  return module;
}

void VulkanDevice::launch(gpu_host::Module& m, const std::string& symbol,
                          const std::vector<const gpu_host::DeviceBuffer*>& args,
                          int64_t work_items) {
  auto& module = static_cast<ShaderModule&>(m);
  auto it = module.kernels.find(symbol);
  if (it == module.kernels.end())
    throw_internal_error(fmt::format("{}: the module has no kernel {}", name_, symbol));
  ShaderKernel& k = it->second;
  VulkanContext& c = *context_;
  const VulkanApi& vk = c.vk();
  const VulkanDeviceInfo& info = c.info();
  std::lock_guard lock(c.mutex());
  if (!k.pipeline) {
    // The driver compiles the SPIR-V here (lavapipe: to machine code through LLVM, the slow
    // part of a first run), so this is the step progress names.
    progress::Task task(fmt::format("{}: building the pipeline of {}", name_, symbol));
    if (args.size() > info.max_storage_buffers)
      throw Error(ErrorKind::kUser,
                  fmt::format("{}: kernel {} binds {} storage buffers, more than the {} "
                              "{} allows per shader",
                              name_, symbol, args.size(), info.max_storage_buffers, info.name));
    std::vector<VkDescriptorSetLayoutBinding> bindings(args.size());
    for (size_t i = 0; i < args.size(); ++i)
      bindings[i] = {static_cast<uint32_t>(i), VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1,
                     VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    VkDescriptorSetLayoutCreateInfo dl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    dl.bindingCount = static_cast<uint32_t>(bindings.size());
    dl.pBindings = bindings.data();
    c.check(vk.vkCreateDescriptorSetLayout(c.device(), &dl, nullptr, &k.set_layout),
            "vkCreateDescriptorSetLayout");
    VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pl.setLayoutCount = 1;
    pl.pSetLayouts = &k.set_layout;
    c.check(vk.vkCreatePipelineLayout(c.device(), &pl, nullptr, &k.layout),
            "vkCreatePipelineLayout");
    VkComputePipelineCreateInfo cp{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    cp.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    cp.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    cp.stage.module = k.module;
    cp.stage.pName = "main";
    cp.layout = k.layout;
    VkResult r =
        vk.vkCreateComputePipelines(c.device(), VK_NULL_HANDLE, 1, &cp, nullptr, &k.pipeline);
    if (r != VK_SUCCESS)
      throw Error(ErrorKind::kCompile,
                  fmt::format("{}: {} could not create the pipeline of kernel {}: {}", name_,
                              info.describe(), symbol, vk_result_name(r)));
    k.bindings = args.size();
  }
  if (args.size() != k.bindings)
    throw_internal_error(fmt::format("{}: kernel {} launched with {} buffers, built for {}", name_,
                                     symbol, args.size(), k.bindings));
  VkDescriptorSet set = c.descriptor_set(k.set_layout);
  std::vector<VkDescriptorBufferInfo> infos(args.size());
  std::vector<VkWriteDescriptorSet> writes(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const Allocation* a = alloc_of(*args[i]);
    if (a->size > info.max_storage_range)
      throw Error(ErrorKind::kUser,
                  fmt::format("{}: kernel {} needs a {}-byte storage buffer; {} binds at "
                              "most {} bytes",
                              name_, symbol, a->size, info.name, info.max_storage_range));
    infos[i] = {a->buffer, 0, VK_WHOLE_SIZE};
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set;
    writes[i].dstBinding = static_cast<uint32_t>(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  vk.vkUpdateDescriptorSets(c.device(), static_cast<uint32_t>(writes.size()), writes.data(), 0,
                            nullptr);
  // 64 invocations per group (the dialects' local size); groups on a 2D grid, rows of at most
  // 65535 groups (every device's minimum limit; the HLSL dialect relies on that width).
  uint64_t groups = (static_cast<uint64_t>(work_items) + 63) / 64;
  uint64_t gx = std::min<uint64_t>({groups, info.max_groups[0], 65535});
  uint64_t gy = (groups + gx - 1) / gx;
  if (gy > info.max_groups[1])
    throw Error(ErrorKind::kUser,
                fmt::format("{}: kernel {} needs {} work-items, more than {} can dispatch", name_,
                            symbol, work_items, info.name));
  VkCommandBuffer cb = c.recording();
  vk.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, k.pipeline);
  vk.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, k.layout, 0, 1, &set, 0, nullptr);
  vk.vkCmdDispatch(cb, static_cast<uint32_t>(gx), static_cast<uint32_t>(gy), 1);
  c.barrier();
}

void VulkanDevice::finish() {
  std::lock_guard lock(context_->mutex());
  context_->flush();
}

}  // namespace rlx::vulkan
