#include "hip_device.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <vector>

#include "cuda_device.h"
#include "cuda_hip_library.h"
#include "module_cache.h"
#include "rlx/core/error.h"
#include "rocm_compile.h"

namespace rlx::rocm {

namespace {

// Every launch uses blocks of this many threads: the group size of the SDK's cooperative kernels
// (render_matmul, render_attention, render_norm), one wavefront on CDNA.
constexpr unsigned kBlock = 64;
constexpr cuda::ModuleCacheLayout kCodeObjects{"rocm", ".hsaco", ".hip"};

class HipModuleHandle final : public gpu_host::Module {
 public:
  HipModuleHandle(const HipRuntimeApi& hip, HipModule module) : hip_(hip), module_(module) {}
  ~HipModuleHandle() override { hip_.hipModuleUnload(module_); }
  const HipRuntimeApi& hip_;
  HipModule module_;
  std::map<std::string, HipFunction, std::less<>> functions_;
};

// hipDeviceProp_t's layout differs between ROCm versions, but its gcnArchName is the one field
// that holds "gfx..." text: filled into a buffer larger than any layout, it is found by scanning.
std::string arch_of_device(const HipRuntimeApi& hip, int device) {
  std::vector<char> props(16384, '\0');
  if (hip.hipGetDeviceProperties(props.data(), device) != kHipSuccess) return "";
  for (size_t i = 0; i + 6 < props.size(); ++i) {
    if (props[i] == 'g' && props[i + 1] == 'f' && props[i + 2] == 'x' &&
        (i == 0 || !props[i - 1])) {
      std::string name(&props[i]);
      return name.substr(0, name.find(':'));  // "gfx90a:sramecc+:xnack-" -> "gfx90a"
    }
  }
  return "";
}

}  // namespace

std::string HipDeviceInfo::describe() const {
  return fmt::format("{} ({}, {} GiB, HIP {}.{})", name, arch, memory_bytes >> 30,
                     runtime_version / 10000000, runtime_version / 100000 % 100);
}

std::shared_ptr<HipDevice> HipDevice::shared(std::string* why) {
  struct Found {
    std::shared_ptr<HipDevice> device;
    std::string error;
  };
  // Created once and never destroyed: the runtime must not be torn down by static destructors.
  static const Found* found = [] {
    auto* f = new Found;
    std::string err;
    const HipRuntimeApi* hip = hip_runtime_api(&err);
    if (!hip) {
      f->error = err;
      return f;
    }
    HipDeviceInfo info;
    hip->hipRuntimeGetVersion(&info.runtime_version);
    int count = 0;
    // hipInit fails without a device too (hipErrorInvalidDevice); the count says why.
    HipError rc = hip->hipInit(0);
    HipError count_rc = hip->hipGetDeviceCount(&count);
    if (count_rc != kHipSuccess || count == 0) {
      f->error = fmt::format("no AMD GPU (hipGetDeviceCount: {})",
                             hip_error_name(*hip, count_rc == kHipSuccess ? rc : count_rc));
      return f;
    }
    if (const char* want = std::getenv("RLX_ROCM_DEVICE"); want && *want) {
      char* end = nullptr;
      long n = std::strtol(want, &end, 10);
      if (*end || n < 0 || n >= count) {
        f->error = fmt::format("RLX_ROCM_DEVICE='{}' is not a device ordinal here (0 to {})", want,
                               count - 1);
        return f;
      }
      info.ordinal = static_cast<int>(n);
    }
    std::string compiler_why;
    if (hip_compiler(&compiler_why).empty()) {
      f->error = compiler_why;
      return f;
    }
    HipStream stream = nullptr;
    rc = hip->hipSetDevice(info.ordinal);
    if (rc == kHipSuccess) rc = hip->hipStreamCreate(&stream);
    if (rc != kHipSuccess) {
      f->error =
          fmt::format("AMD GPU {} cannot be opened: {}", info.ordinal, hip_error_name(*hip, rc));
      return f;
    }
    char name[256] = {};
    hip->hipDeviceGetName(name, sizeof name - 1, info.ordinal);
    info.name = name;
    info.arch = arch_of_device(*hip, info.ordinal);
    if (info.arch.empty()) info.arch = kDefaultArch;
    hip->hipDeviceGetAttribute(&info.max_threads_per_block, kHipAttrMaxThreadsPerBlock,
                               info.ordinal);
    hip->hipDeviceGetAttribute(&info.warp_size, kHipAttrWarpSize, info.ordinal);
    hip->hipDeviceTotalMem(&info.memory_bytes, info.ordinal);
    f->device.reset(new HipDevice(*hip, stream, std::move(info)));
    return f;
  }();
  if (!found->device && why) *why = found->error;
  return found->device;
}

void HipDevice::check(HipError rc, const char* call) const {
  if (rc == kHipSuccess) return;
  throw Error(ErrorKind::kDevice, fmt::format("rocm: {} failed on {}: {}", call, info_.describe(),
                                              hip_error_name(hip_, rc)));
}

void HipDevice::make_current() const {
  check(hip_.hipSetDevice(info_.ordinal), "hipSetDevice");
}

const gpu_host::KernelLibrary& HipDevice::library() const {
  return cuda_hip::hip_library();
}

DeviceLimits HipDevice::limits() const {
  DeviceLimits l;
  l.max_workgroup_size = static_cast<uint32_t>(info_.max_threads_per_block);
  l.subgroup_size = static_cast<uint32_t>(info_.warp_size);
  return l;
}

gpu_host::DeviceBuffer HipDevice::allocate(size_t bytes) {
  make_current();
  void* p = nullptr;
  if (HipError rc = hip_.hipMalloc(&p, bytes); rc != kHipSuccess)
    throw Error(ErrorKind::kDevice, fmt::format("rocm: cannot allocate {} bytes on {}: {}", bytes,
                                                info_.describe(), hip_error_name(hip_, rc)));
  return {p, bytes};
}

void HipDevice::release(gpu_host::DeviceBuffer& b) noexcept {
  if (b.handle && hip_.hipSetDevice(info_.ordinal) == kHipSuccess) hip_.hipFree(b.handle);
  b.handle = nullptr;
}

void HipDevice::upload(const gpu_host::DeviceBuffer& dst, const void* src, size_t bytes) {
  make_current();
  // Synchronised: the host memory may be freed as soon as this returns.
  check(hip_.hipMemcpyHtoDAsync(dst.handle, src, bytes, stream_), "hipMemcpyHtoDAsync");
  check(hip_.hipStreamSynchronize(stream_), "hipStreamSynchronize");
}

void HipDevice::download(const gpu_host::DeviceBuffer& src, void* dst, size_t bytes) {
  make_current();
  check(hip_.hipMemcpyDtoHAsync(dst, src.handle, bytes, stream_), "hipMemcpyDtoHAsync");
  check(hip_.hipStreamSynchronize(stream_), "hipStreamSynchronize");
}

void HipDevice::copy(const gpu_host::DeviceBuffer& src, const gpu_host::DeviceBuffer& dst,
                     size_t bytes) {
  make_current();
  check(hip_.hipMemcpyDtoDAsync(dst.handle, src.handle, bytes, stream_), "hipMemcpyDtoDAsync");
}

std::unique_ptr<gpu_host::Module> HipDevice::build(const std::string& source) {
  make_current();
  const std::string identity = hip_compiler(nullptr);
  auto compile = [&] { return compile_hip(source, info_.arch); };
  cuda::CachedModule code =
      cuda::find_or_compile(source, info_.arch, identity, compile, kCodeObjects);
  HipModule module = nullptr;
  HipError rc = hip_.hipModuleLoadData(&module, code.bytes.data());
  if (rc != kHipSuccess && code.hit) {
    // A damaged or foreign entry: compiled again, said once.
    std::fprintf(stderr, "rlx: rocm: the cached module %s did not load (%s); compiling it again\n",
                 code.path.c_str(), hip_error_name(hip_, rc).c_str());
    cuda::evict(code.path);
    code = cuda::find_or_compile(source, info_.arch, identity, compile, kCodeObjects);
    rc = hip_.hipModuleLoadData(&module, code.bytes.data());
  }
  check(rc, "hipModuleLoadData");
  return std::make_unique<HipModuleHandle>(hip_, module);
}

void HipDevice::launch(gpu_host::Module& m, const std::string& symbol,
                       const std::vector<const gpu_host::DeviceBuffer*>& args, int64_t work_items) {
  make_current();
  auto& module = static_cast<HipModuleHandle&>(m);
  auto it = module.functions_.find(symbol);
  if (it == module.functions_.end()) {
    HipFunction f = nullptr;
    check(hip_.hipModuleGetFunction(&f, module.module_, symbol.c_str()), "hipModuleGetFunction");
    it = module.functions_.emplace(symbol, f).first;
  }
  std::vector<void*> values(args.size());
  std::vector<void*> params(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    values[i] = args[i]->handle;
    params[i] = &values[i];
  }
  const unsigned blocks = cuda::launch_blocks(work_items, kBlock, "rocm", symbol);
  check(hip_.hipModuleLaunchKernel(it->second, blocks, 1, 1, kBlock, 1, 1, 0, stream_,
                                   params.data(), nullptr),
        "hipModuleLaunchKernel");
}

void HipDevice::finish() {
  make_current();
  check(hip_.hipStreamSynchronize(stream_), "hipStreamSynchronize");
}

}  // namespace rlx::rocm
