// The metal target's kernel library: the SDK's MSL dialect plus gather and scatter, which read
// through run-time indices and so are written as text (gpu_host::CFamilyIndexLibrary's, in MSL's
// words), not rendered. MSL is used by this target only, so the library lives in its folder.
#pragma once
#include "c_family_index_library.h"

namespace rlx::metal {

class MslKernelLibrary final : public gpu_host::CFamilyIndexLibrary {
 public:
  MslKernelLibrary();
  const sdk::Dialect& dialect() const override;

 protected:
  std::string signature(const std::string& symbol, const std::vector<Param>& params) const override;
  std::string claim_status(int32_t slot) const override;
};

// The library's one instance (it holds no state).
const MslKernelLibrary& msl_library();

}  // namespace rlx::metal
