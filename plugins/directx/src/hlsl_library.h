// The HLSL kernel library of the directx target: the SDK's HLSL dialect plus gather and scatter
// (index semantics and status protocol: gpu_host/index_call_library.h).
#pragma once
#include "index_call_library.h"
#include "rlx/core/target.h"

namespace rlx::directx {

class HlslKernelLibrary final : public gpu_host::IndexCallLibrary {
 public:
  HlslKernelLibrary() : IndexCallLibrary("HLSL") {}
  const sdk::Dialect& dialect() const override;
  bool computes_updates() const override { return true; }

 protected:
  std::string gather_source(const gpu_host::IndexCall& c) const override;
  std::string scatter_source(const gpu_host::IndexCall& c) const override;

 private:
  std::string head(const gpu_host::IndexCall& c, const std::string& buffers, int status) const;
  std::string resolve_index(const gpu_host::IndexCall& c) const;
};

const HlslKernelLibrary& hlsl_library();

// What HLSL can hold and compute, on any device: the shader languages' refusals (f64
// transcendentals, complex values, not a primitive) and HLSL's lack of 8-bit storage.
Verdict hlsl_legality(const NodeSignature& s);

}  // namespace rlx::directx
