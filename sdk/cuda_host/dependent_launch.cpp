#include "dependent_launch.h"

#include <cctype>
#include <cstdlib>

namespace rlx::cuda {

namespace {

constexpr std::string_view kEntry = "__global__";
constexpr std::string_view kAwait = "rlx_await_producers();";

size_t skip_space(const std::string& s, size_t at) {
  while (at < s.size() && std::isspace(static_cast<unsigned char>(s[at]))) ++at;
  return at;
}

}  // namespace

std::set<std::string, std::less<>> kernels_that_await(const std::string& source) {
  std::set<std::string, std::less<>> found;
  for (size_t at = source.find(kEntry); at != std::string::npos;) {
    const size_t next = source.find(kEntry, at + kEntry.size());
    const size_t end = next == std::string::npos ? source.size() : next;
    // `__global__ void [__launch_bounds__(...)] name(`
    size_t p = skip_space(source, at + kEntry.size());
    if (source.compare(p, 4, "void") == 0) p = skip_space(source, p + 4);
    if (source.compare(p, 17, "__launch_bounds__") == 0) {
      const size_t close = source.find(')', p);
      p = close == std::string::npos ? end : skip_space(source, close + 1);
    }
    size_t q = p;
    while (q < end && (std::isalnum(static_cast<unsigned char>(source[q])) || source[q] == '_')) ++q;
    const size_t body = source.find('{', q);
    if (q > p && body < end && source.find(kAwait, body) < end) found.insert(source.substr(p, q - p));
    at = next;
  }
  return found;
}

bool dependent_launches(const DriverApi& cu, const CudaDeviceInfo& info) {
  if (const char* env = std::getenv("RLX_CUDA_PDL"); env && std::string(env) == "0") return false;
  return cu.cuLaunchKernelEx && info.cc_major >= 9 && info.driver_version >= 12030;
}

}  // namespace rlx::cuda
