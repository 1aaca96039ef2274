#include "opencl_loader.h"

#include <dlfcn.h>
#include <fmt/format.h>

namespace rlx::gpu {

namespace {

struct Loaded {
  OpenClApi api;
  std::string error;
};

Loaded load() {
  Loaded l;
  // libOpenCL.so.1 is the Khronos ICD loader's soname (ocl-icd, the NVIDIA and Intel packages).
  void* lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    l.error = fmt::format("the OpenCL ICD loader libOpenCL.so.1 is not installed ({}); install "
                          "ocl-icd-libopencl1 and a driver (pocl-opencl-icd for CPUs)", dlerror());
    return l;
  }
  auto resolve = [&](auto& fn, const char* name) {
    if (!l.error.empty()) return;
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    if (!fn) l.error = fmt::format("libOpenCL.so.1 lacks {}: not an OpenCL 1.2 loader", name);
  };
#define RLX_CL_RESOLVE(name) resolve(l.api.name, #name);
  RLX_CL_RESOLVE(clGetPlatformIDs)
  RLX_CL_RESOLVE(clGetPlatformInfo)
  RLX_CL_RESOLVE(clGetDeviceIDs)
  RLX_CL_RESOLVE(clGetDeviceInfo)
  RLX_CL_RESOLVE(clCreateContext)
  RLX_CL_RESOLVE(clReleaseContext)
  RLX_CL_RESOLVE(clCreateCommandQueue)
  RLX_CL_RESOLVE(clReleaseCommandQueue)
  RLX_CL_RESOLVE(clCreateBuffer)
  RLX_CL_RESOLVE(clReleaseMemObject)
  RLX_CL_RESOLVE(clEnqueueWriteBuffer)
  RLX_CL_RESOLVE(clEnqueueReadBuffer)
  RLX_CL_RESOLVE(clEnqueueCopyBuffer)
  RLX_CL_RESOLVE(clCreateProgramWithSource)
  RLX_CL_RESOLVE(clBuildProgram)
  RLX_CL_RESOLVE(clGetProgramBuildInfo)
  RLX_CL_RESOLVE(clReleaseProgram)
  RLX_CL_RESOLVE(clCreateKernel)
  RLX_CL_RESOLVE(clReleaseKernel)
  RLX_CL_RESOLVE(clSetKernelArg)
  RLX_CL_RESOLVE(clGetKernelWorkGroupInfo)
  RLX_CL_RESOLVE(clEnqueueNDRangeKernel)
  RLX_CL_RESOLVE(clFinish)
#undef RLX_CL_RESOLVE
  return l;
}

}  // namespace

const OpenClApi* opencl_api(std::string* why) {
  static const Loaded loaded = load();
  if (!loaded.error.empty()) {
    if (why) *why = loaded.error;
    return nullptr;
  }
  return &loaded.api;
}

std::string cl_error_name(cl_int code) {
  const char* name = nullptr;
  switch (code) {
    case CL_DEVICE_NOT_FOUND: name = "CL_DEVICE_NOT_FOUND"; break;
    case CL_DEVICE_NOT_AVAILABLE: name = "CL_DEVICE_NOT_AVAILABLE"; break;
    case CL_COMPILER_NOT_AVAILABLE: name = "CL_COMPILER_NOT_AVAILABLE"; break;
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: name = "CL_MEM_OBJECT_ALLOCATION_FAILURE"; break;
    case CL_OUT_OF_RESOURCES: name = "CL_OUT_OF_RESOURCES"; break;
    case CL_OUT_OF_HOST_MEMORY: name = "CL_OUT_OF_HOST_MEMORY"; break;
    case CL_BUILD_PROGRAM_FAILURE: name = "CL_BUILD_PROGRAM_FAILURE"; break;
    case CL_INVALID_VALUE: name = "CL_INVALID_VALUE"; break;
    case CL_INVALID_PLATFORM: name = "CL_INVALID_PLATFORM"; break;
    case CL_INVALID_DEVICE: name = "CL_INVALID_DEVICE"; break;
    case CL_INVALID_CONTEXT: name = "CL_INVALID_CONTEXT"; break;
    case CL_INVALID_COMMAND_QUEUE: name = "CL_INVALID_COMMAND_QUEUE"; break;
    case CL_INVALID_MEM_OBJECT: name = "CL_INVALID_MEM_OBJECT"; break;
    case CL_INVALID_BUFFER_SIZE: name = "CL_INVALID_BUFFER_SIZE"; break;
    case CL_INVALID_PROGRAM: name = "CL_INVALID_PROGRAM"; break;
    case CL_INVALID_PROGRAM_EXECUTABLE: name = "CL_INVALID_PROGRAM_EXECUTABLE"; break;
    case CL_INVALID_KERNEL_NAME: name = "CL_INVALID_KERNEL_NAME"; break;
    case CL_INVALID_KERNEL: name = "CL_INVALID_KERNEL"; break;
    case CL_INVALID_ARG_INDEX: name = "CL_INVALID_ARG_INDEX"; break;
    case CL_INVALID_ARG_VALUE: name = "CL_INVALID_ARG_VALUE"; break;
    case CL_INVALID_ARG_SIZE: name = "CL_INVALID_ARG_SIZE"; break;
    case CL_INVALID_KERNEL_ARGS: name = "CL_INVALID_KERNEL_ARGS"; break;
    case CL_INVALID_WORK_GROUP_SIZE: name = "CL_INVALID_WORK_GROUP_SIZE"; break;
    case CL_INVALID_GLOBAL_WORK_SIZE: name = "CL_INVALID_GLOBAL_WORK_SIZE"; break;
    case CL_INVALID_BUILD_OPTIONS: name = "CL_INVALID_BUILD_OPTIONS"; break;
    case -1001: name = "CL_PLATFORM_NOT_FOUND_KHR"; break;  // the ICD loader found no driver
    default: break;
  }
  return name ? fmt::format("{} ({})", name, code) : fmt::format("OpenCL error {}", code);
}

}  // namespace rlx::gpu
