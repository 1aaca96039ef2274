// Hopper's programmatic dependent launches (sm_90 and later, driver CUDA 12.3 for stream capture
// into graphs): a kernel launched with the programmatic-serialization attribute may start while
// the kernel before it in the stream still runs, and waits for it with griddepcontrol.wait. A
// decode step is a hundred kernels of 2 to 8 us, each paying its launch and the ramp to its
// first loads; launched as dependents, that latency overlaps the previous kernel's tail and a
// GEMV's weight loads start before its producer has finished.
//
// Only a kernel whose text waits may be launched so: the CUDA dialect starts every kernel with
// rlx_await_producers() (sdk::Dialect::kernel_entry), and the hand-written kernels of the cuda
// plugin call it before they touch memory another kernel writes. Any other kernel of a module
// (HIP through NVRTC, helper kernels) is launched plainly, after the one before it.
#pragma once
#include <set>
#include <string>

#include "cuda_device.h"

namespace rlx::cuda {

// The kernels (`extern "C" __global__` entry points) of `source` whose bodies call
// rlx_await_producers().
std::set<std::string, std::less<>> kernels_that_await(const std::string& source);

// Whether kernels that await are launched as dependents on this device: compute capability 9.0
// or later, a driver of CUDA 12.3 or later (with cuLaunchKernelEx), and RLX_CUDA_PDL not "0".
bool dependent_launches(const DriverApi& cu, const CudaDeviceInfo& info);

}  // namespace rlx::cuda
