// The HLSL kernel library of the directx target: the SDK's HLSL dialect plus gather and scatter
// (index semantics and status protocol: gpu_host/index_call_library.h).
#pragma once
#include "index_call_library.h"

namespace rlx::directx {

class HlslKernelLibrary final : public gpu_host::IndexCallLibrary {
 public:
  HlslKernelLibrary() : IndexCallLibrary("HLSL") {}
  const sdk::Dialect& dialect() const override;

 protected:
  std::string gather_source(const gpu_host::IndexCall& c) const override;
  std::string scatter_source(const gpu_host::IndexCall& c) const override;

 private:
  std::string head(const gpu_host::IndexCall& c, const std::string& buffers) const;
  std::string resolve_index(const gpu_host::IndexCall& c) const;
};

const HlslKernelLibrary& hlsl_library();

}  // namespace rlx::directx
