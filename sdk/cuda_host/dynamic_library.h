// What the CUDA-family loaders share (the CUDA driver and NVRTC here, the HIP runtime and hiprtc
// in the rocm plugin): a vendor library is opened with dlopen on first use, from the first of
// its candidate names that loads, and its entry points are resolved one by one, the first
// missing one named in the error. And the compiler logs they put into errors, tidied one way.
#pragma once
#include <string>
#include <vector>

namespace rlx::cuda {

// The first of `names` that dlopen loads (RTLD_NOW | RTLD_LOCAL, never unloaded), or nullptr
// with `tried` set to the names, comma-separated.
void* open_first_library(const std::vector<std::string>& names, std::string* tried);

// Resolves entry points of `library` into function pointers. After the first missing one the
// rest are skipped and `error` holds `missing_format` with the symbol's name in place of {}
// ("libnvrtc lacks {}: NVRTC older than CUDA 11.2").
class SymbolResolver {
 public:
  SymbolResolver(void* library, std::string& error, std::string missing_format)
      : library_(library), error_(error), missing_format_(std::move(missing_format)) {}
  template <class Fn>
  void operator()(Fn& fn, const char* name) {
    if (error_.empty()) fn = reinterpret_cast<Fn>(symbol(name));
  }

 private:
  void* symbol(const char* name);
  void* library_;
  std::string& error_;
  std::string missing_format_;
};

// A compiler's log as an error quotes it: trailing NULs and newlines dropped, cut after 4000
// characters.
std::string tidy_compiler_log(std::string log);

}  // namespace rlx::cuda
