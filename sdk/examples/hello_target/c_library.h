// C source compiled by the system C compiler into a shared library and loaded: how the hello
// target turns the SDK renderer's C into something it can call. A real target would hand its
// kernel language to its own driver (NVRTC, clBuildProgram, a shader compiler) here instead.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

namespace hello {

// The C compiler to use: $CC, else cc, gcc or clang on PATH; nullopt when there is none.
std::optional<std::string> find_c_compiler();

class CLibrary {
 public:
  // Compiles `source` with `compiler` and loads the result; throws rlx::Error (kDevice, with the
  // compiler's messages) when it cannot.
  CLibrary(const std::string& compiler, const std::string& source);
  ~CLibrary();
  CLibrary(const CLibrary&) = delete;
  CLibrary& operator=(const CLibrary&) = delete;

  // The address of an exported function; throws rlx::Error (kInternal) when it is missing.
  void* symbol(const std::string& name) const;

 private:
  void* handle_ = nullptr;
};

}  // namespace hello
