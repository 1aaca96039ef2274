// The OpenCL C kernel library shared by the two targets that speak OpenCL C (gpu runs it through
// an OpenCL driver, oneapi compiles it to SPIR-V): the SDK's OpenCL dialect plus gather and
// scatter, which read through run-time indices and so are written as text (the C-family text of
// gpu_host::CFamilyIndexLibrary in OpenCL C's words), not rendered.
#pragma once
#include "c_family_index_library.h"

namespace rlx::opencl_c {

class OpenClKernelLibrary final : public gpu_host::CFamilyIndexLibrary {
 public:
  OpenClKernelLibrary();
  const sdk::Dialect& dialect() const override;

 protected:
  std::string signature(const std::string& symbol, const std::vector<Param>& params) const override;
  std::string claim_status(int32_t slot) const override;
};

// The library's one instance (it holds no state).
const OpenClKernelLibrary& opencl_library();

}  // namespace rlx::opencl_c
