// The metal target's kernel library: the SDK's MSL dialect plus gather and scatter, which read
// through run-time indices and so are written here, not rendered (the OpenCL C library's kernels
// in MSL's words). MSL is used by this target only, so the library lives in its folder.
#pragma once
#include "index_call_library.h"

namespace rlx::metal {

class MslKernelLibrary final : public gpu_host::IndexCallLibrary {
 public:
  MslKernelLibrary() : IndexCallLibrary("MSL") {}
  const sdk::Dialect& dialect() const override;

 protected:
  std::string gather_source(const gpu_host::IndexCall& c) const override;
  std::string scatter_source(const gpu_host::IndexCall& c) const override;
};

// The library's one instance (it holds no state).
const MslKernelLibrary& msl_library();

}  // namespace rlx::metal
