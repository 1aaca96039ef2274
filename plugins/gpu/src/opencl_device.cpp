#include "opencl_device.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <vector>

#include "opencl_library.h"
#include "rlx/core/error.h"

namespace rlx::gpu {

namespace {

std::string platform_string(const OpenClApi& cl, cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  if (cl.clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  cl.clGetPlatformInfo(p, what, n, s.data(), nullptr);
  s.resize(s.find('\0') == std::string::npos ? s.size() : s.find('\0'));
  return s;
}

std::string device_string(const OpenClApi& cl, cl_device_id d, cl_device_info what) {
  size_t n = 0;
  if (cl.clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  cl.clGetDeviceInfo(d, what, n, s.data(), nullptr);
  s.resize(s.find('\0') == std::string::npos ? s.size() : s.find('\0'));
  return s;
}

template <typename T>
T device_value(const OpenClApi& cl, cl_device_id d, cl_device_info what) {
  T v{};
  cl.clGetDeviceInfo(d, what, sizeof(T), &v, nullptr);
  return v;
}

OpenClDeviceInfo describe(const OpenClApi& cl, cl_platform_id p, cl_device_id d) {
  OpenClDeviceInfo i;
  i.platform = platform_string(cl, p, CL_PLATFORM_NAME);
  i.name = device_string(cl, d, CL_DEVICE_NAME);
  i.version = device_string(cl, d, CL_DEVICE_VERSION);
  i.gpu = (device_value<cl_device_type>(cl, d, CL_DEVICE_TYPE) & CL_DEVICE_TYPE_GPU) != 0;
  std::string ext = " " + device_string(cl, d, CL_DEVICE_EXTENSIONS) + " ";
  i.fp64 = ext.find(" cl_khr_fp64 ") != std::string::npos;
  i.correctly_rounded_divide_sqrt = (device_value<cl_device_fp_config>(cl, d, CL_DEVICE_SINGLE_FP_CONFIG) &
                                     CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
  i.max_work_group = std::max<size_t>(1, device_value<size_t>(cl, d, CL_DEVICE_MAX_WORK_GROUP_SIZE));
  return i;
}

class OpenClModule final : public gpu_host::Module {
 public:
  OpenClModule(const OpenClApi& cl, cl_program program) : cl_(cl), program_(program) {}
  ~OpenClModule() override {
    for (auto& [name, k] : kernels_) cl_.clReleaseKernel(k.kernel);
    cl_.clReleaseProgram(program_);
  }
  struct Kernel {
    cl_kernel kernel;
    size_t group;  // work-group size used for launches
  };
  const OpenClApi& cl_;
  cl_program program_;
  std::map<std::string, Kernel, std::less<>> kernels_;
};

cl_mem mem(const gpu_host::DeviceBuffer& b) { return static_cast<cl_mem>(b.handle); }

}  // namespace

std::string OpenClDeviceInfo::describe() const {
  return fmt::format("{} / {} ({})", platform, name, version);
}

std::shared_ptr<OpenClDevice> OpenClDevice::shared(std::string* why) {
  struct Found {
    std::shared_ptr<OpenClDevice> device;
    std::string error;
  };
  // Created once and never destroyed: drivers (PoCL's worker threads among them) must not be torn
  // down by static destructors at exit while another library may still call into them.
  static const Found* found = [] {
    auto* f = new Found;
    std::string err;
    const OpenClApi* cl = opencl_api(&err);
    if (!cl) {
      f->error = err;
      return f;
    }
    cl_uint np = 0;
    cl_int rc = cl->clGetPlatformIDs(0, nullptr, &np);
    if (rc != CL_SUCCESS || np == 0) {
      f->error = fmt::format("no OpenCL platform is installed (clGetPlatformIDs: {}); install a "
                             "driver: pocl-opencl-icd for CPUs, or the GPU vendor's OpenCL ICD",
                             rc == CL_SUCCESS ? "0 platforms" : cl_error_name(rc));
      return f;
    }
    std::vector<cl_platform_id> platforms(np);
    cl->clGetPlatformIDs(np, platforms.data(), nullptr);
    const char* want = std::getenv("RLX_OPENCL_DEVICE");
    std::vector<std::tuple<cl_platform_id, cl_device_id, OpenClDeviceInfo>> all;
    for (cl_platform_id p : platforms) {
      cl_uint nd = 0;
      if (cl->clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
      std::vector<cl_device_id> devices(nd);
      cl->clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, devices.data(), nullptr);
      for (cl_device_id d : devices) all.emplace_back(p, d, describe(*cl, p, d));
    }
    if (all.empty()) {
      f->error = fmt::format("the {} OpenCL platform(s) installed have no device", np);
      return f;
    }
    auto pick = all.end();
    if (want && *want) {
      pick = std::find_if(all.begin(), all.end(), [&](auto& t) {
        const auto& i = std::get<2>(t);
        return (i.platform + " / " + i.name).find(want) != std::string::npos;
      });
      if (pick == all.end()) {
        std::string names;
        for (auto& t : all) names += (names.empty() ? "" : "; ") + std::get<2>(t).describe();
        f->error = fmt::format("no OpenCL device matches RLX_OPENCL_DEVICE='{}' (found: {})", want, names);
        return f;
      }
    } else {
      pick = std::find_if(all.begin(), all.end(), [](auto& t) { return std::get<2>(t).gpu; });
      if (pick == all.end()) pick = all.begin();
    }
    try {
      f->device.reset(new OpenClDevice(*cl, std::get<1>(*pick), std::get<2>(*pick)));
    } catch (const std::exception& e) {
      f->error = e.what();
    }
    return f;
  }();
  if (!found->device && why) *why = found->error;
  return found->device;
}

OpenClDevice::OpenClDevice(const OpenClApi& cl, cl_device_id device, OpenClDeviceInfo info)
    : cl_(cl), device_(device), info_(std::move(info)) {
  cl_int err = CL_SUCCESS;
  context_ = cl_.clCreateContext(nullptr, 1, &device_, nullptr, nullptr, &err);
  check(err, "clCreateContext");
  queue_ = cl_.clCreateCommandQueue(context_, device_, 0, &err);
  check(err, "clCreateCommandQueue");
  // Exact f32 division and sqrt where the device offers them (the cpu target's results); the
  // default allows 2.5 and 3 ulp. Never -cl-fast-relaxed-math: it would change NaN and inf.
  build_options_ = "-cl-std=CL1.2";
  if (info_.correctly_rounded_divide_sqrt) build_options_ += " -cl-fp32-correctly-rounded-divide-sqrt";
  // Warnings about generated code are not the user's to act on, and PoCL's compiler prints its
  // count ("47 warnings generated.") on the process's stderr itself, whatever the build log
  // holds: -w leaves it none. RLX_OPENCL_BUILD_LOG=1 keeps them and prints every build's log; a
  // failed build's log is always in the error.
  const char* show = std::getenv("RLX_OPENCL_BUILD_LOG");
  show_build_log_ = show && *show && std::string(show) != "0";
  if (!show_build_log_) build_options_ += " -w";
}

OpenClDevice::~OpenClDevice() {
  if (queue_) cl_.clReleaseCommandQueue(queue_);
  if (context_) cl_.clReleaseContext(context_);
}

void OpenClDevice::check(cl_int err, const char* call) const {
  if (err == CL_SUCCESS) return;
  throw Error(ErrorKind::kUser, fmt::format("OpenCL {} failed on {}: {}", call, info_.describe(), cl_error_name(err)));
}

const gpu_host::KernelLibrary& OpenClDevice::library() const { return opencl_c::opencl_library(); }

gpu_host::DeviceBuffer OpenClDevice::allocate(size_t bytes) {
  cl_int err = CL_SUCCESS;
  cl_mem m = cl_.clCreateBuffer(context_, CL_MEM_READ_WRITE, bytes, nullptr, &err);
  if (err != CL_SUCCESS)
    throw Error(ErrorKind::kUser, fmt::format("gpu: cannot allocate {} bytes on {}: {}", bytes, info_.describe(),
                                              cl_error_name(err)));
  return {m, bytes};
}

void OpenClDevice::release(gpu_host::DeviceBuffer& b) noexcept {
  if (b.handle) cl_.clReleaseMemObject(mem(b));
  b.handle = nullptr;
}

void OpenClDevice::upload(const gpu_host::DeviceBuffer& dst, const void* src, size_t bytes) {
  // Blocking: the host memory may be freed as soon as this returns.
  check(cl_.clEnqueueWriteBuffer(queue_, mem(dst), CL_TRUE, 0, bytes, src, 0, nullptr, nullptr),
        "clEnqueueWriteBuffer");
}

void OpenClDevice::download(const gpu_host::DeviceBuffer& src, void* dst, size_t bytes) {
  check(cl_.clEnqueueReadBuffer(queue_, mem(src), CL_TRUE, 0, bytes, dst, 0, nullptr, nullptr),
        "clEnqueueReadBuffer");
}

void OpenClDevice::copy(const gpu_host::DeviceBuffer& src, const gpu_host::DeviceBuffer& dst, size_t bytes) {
  check(cl_.clEnqueueCopyBuffer(queue_, mem(src), mem(dst), 0, 0, bytes, 0, nullptr, nullptr),
        "clEnqueueCopyBuffer");
}

std::string OpenClDevice::build_log(cl_program program) const {
  size_t n = 0;
  cl_.clGetProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
  std::string log(n, '\0');
  if (n) cl_.clGetProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

std::unique_ptr<gpu_host::Module> OpenClDevice::build(const std::string& source) {
  const char* text = source.c_str();
  size_t len = source.size();
  cl_int err = CL_SUCCESS;
  cl_program program = cl_.clCreateProgramWithSource(context_, 1, &text, &len, &err);
  check(err, "clCreateProgramWithSource");
  auto module = std::make_unique<OpenClModule>(cl_, program);
  err = cl_.clBuildProgram(program, 1, &device_, build_options_.c_str(), nullptr, nullptr);
  if (err == CL_SUCCESS && show_build_log_) {
    std::string log = build_log(program);
    std::fprintf(stderr, "rlx: gpu: OpenCL build log (%s):\n%s\n", build_options_.c_str(),
                 log.empty() ? "(empty)" : log.c_str());
  }
  if (err != CL_SUCCESS) {
    std::string log = build_log(program);
    if (log.size() > 4000) log = log.substr(0, 4000) + "\n...";
    throw Error(ErrorKind::kCompile, fmt::format("gpu: {} could not compile the generated OpenCL C ({}); "
                                                 "`rlx compile --target gpu` writes the source. Build log:\n{}",
                                                 info_.describe(), cl_error_name(err), log));
  }
  return module;
}

void OpenClDevice::launch(gpu_host::Module& m, const std::string& symbol,
                          const std::vector<const gpu_host::DeviceBuffer*>& args, int64_t work_items) {
  auto& module = static_cast<OpenClModule&>(m);
  auto it = module.kernels_.find(symbol);
  if (it == module.kernels_.end()) {
    cl_int err = CL_SUCCESS;
    cl_kernel k = cl_.clCreateKernel(module.program_, symbol.c_str(), &err);
    check(err, "clCreateKernel");
    size_t most = info_.max_work_group;
    cl_.clGetKernelWorkGroupInfo(k, device_, CL_KERNEL_WORK_GROUP_SIZE, sizeof(most), &most, nullptr);
    // 64 items per group: a multiple of every GPU's SIMD width, small enough for any device.
    size_t group = std::max<size_t>(1, std::min<size_t>({64, most, info_.max_work_group}));
    // A cooperative kernel (the tiled matrix products) declares the group size it was written
    // for and computes nothing right with another.
    size_t required[3] = {0, 0, 0};
    cl_.clGetKernelWorkGroupInfo(k, device_, CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof(required),
                                 required, nullptr);
    if (required[0] != 0) {
      if (required[0] > most || required[0] > info_.max_work_group) {
        cl_.clReleaseKernel(k);
        throw Error(
            ErrorKind::kUnsupported,
            fmt::format(
                "gpu: kernel {} needs work-groups of {} items, but {} allows at most {} for it; "
                "this device cannot run rlx's tiled matrix products",
                symbol, required[0], info_.describe(), std::min(most, info_.max_work_group)));
      }
      group = required[0];
    }
    it = module.kernels_.emplace(symbol, OpenClModule::Kernel{k, group}).first;
  }
  cl_kernel k = it->second.kernel;
  for (size_t i = 0; i < args.size(); ++i) {
    cl_mem a = mem(*args[i]);
    check(cl_.clSetKernelArg(k, static_cast<cl_uint>(i), sizeof(cl_mem), &a), "clSetKernelArg");
  }
  size_t group = it->second.group;
  // Kernels return at once for items past the domain (render.h), so the global size is rounded
  // up to whole groups.
  size_t global = (static_cast<size_t>(work_items) + group - 1) / group * group;
  check(cl_.clEnqueueNDRangeKernel(queue_, k, 1, nullptr, &global, &group, 0, nullptr, nullptr),
        "clEnqueueNDRangeKernel");
}

void OpenClDevice::finish() { check(cl_.clFinish(queue_), "clFinish"); }

}  // namespace rlx::gpu
