// The GLSL kernel libraries of the vulkan (GLSL 4.50) and opengl (GLSL 4.30) targets: the SDK's
// GLSL dialect plus gather and scatter, which read through run-time indices and so are written
// here, not rendered (index semantics and status protocol: gpu_host/index_call_library.h).
#pragma once
#include "index_call_library.h"

namespace rlx::glsl {

class GlslKernelLibrary final : public gpu_host::IndexCallLibrary {
 public:
  explicit GlslKernelLibrary(bool opengl) : IndexCallLibrary("GLSL"), opengl_(opengl) {}
  const sdk::Dialect& dialect() const override;
  bool computes_updates() const override { return true; }

 protected:
  std::string gather_source(const gpu_host::IndexCall& c) const override;
  std::string scatter_source(const gpu_host::IndexCall& c) const override;

 private:
  std::string bindings(const gpu_host::IndexCall& c, bool gather) const;
  std::string read(DType dt, const std::string& ptr, const std::string& i) const;
  std::string write(DType dt, const std::string& ptr, const std::string& i, const std::string& x) const;
  bool opengl_;
};

const GlslKernelLibrary& glsl_library();         // GLSL 4.50 for Vulkan
const GlslKernelLibrary& glsl_opengl_library();  // GLSL 4.30 for OpenGL

}  // namespace rlx::glsl
