// The OpenCL entry points the gpu target uses, resolved from the ICD loader (libOpenCL.so.1)
// with dlopen on first use, so the plugin loads on machines without OpenCL and says why it
// cannot run there (docs/architecture.md section 4). OpenCL 1.2 calls only: every driver has them.
#pragma once
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <string>

namespace rlx::gpu {

struct OpenClApi {
#define RLX_CL_FN(name) decltype(&::name) name = nullptr;
  RLX_CL_FN(clGetPlatformIDs)
  RLX_CL_FN(clGetPlatformInfo)
  RLX_CL_FN(clGetDeviceIDs)
  RLX_CL_FN(clGetDeviceInfo)
  RLX_CL_FN(clCreateContext)
  RLX_CL_FN(clReleaseContext)
  RLX_CL_FN(clCreateCommandQueue)
  RLX_CL_FN(clReleaseCommandQueue)
  RLX_CL_FN(clCreateBuffer)
  RLX_CL_FN(clReleaseMemObject)
  RLX_CL_FN(clEnqueueWriteBuffer)
  RLX_CL_FN(clEnqueueReadBuffer)
  RLX_CL_FN(clEnqueueCopyBuffer)
  RLX_CL_FN(clCreateProgramWithSource)
  RLX_CL_FN(clBuildProgram)
  RLX_CL_FN(clGetProgramBuildInfo)
  RLX_CL_FN(clReleaseProgram)
  RLX_CL_FN(clCreateKernel)
  RLX_CL_FN(clReleaseKernel)
  RLX_CL_FN(clSetKernelArg)
  RLX_CL_FN(clGetKernelWorkGroupInfo)
  RLX_CL_FN(clEnqueueNDRangeKernel)
  RLX_CL_FN(clFinish)
#undef RLX_CL_FN
};

// The resolved entry points, or nullptr with `why` set (library or symbol missing). Loaded once
// per process and never unloaded.
const OpenClApi* opencl_api(std::string* why);

// "CL_OUT_OF_RESOURCES (-5)".
std::string cl_error_name(cl_int code);

}  // namespace rlx::gpu
