#include "cuda_arch.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>

#include "rlx/core/error.h"

namespace rlx::cuda {

std::string arch_of(int major, int minor) {
  return fmt::format("sm_{}{}", major, minor);
}

bool is_arch(const std::string& arch) {
  size_t i = 3;
  bool ok = arch.rfind("sm_", 0) == 0 && arch.size() > 3;
  for (; ok && i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i])); ++i) {
  }
  return ok && i >= 5 &&
         (i == arch.size() ||
          (i + 1 == arch.size() && std::isalpha(static_cast<unsigned char>(arch[i]))));
}

std::string arch_from_env() {
  const char* v = std::getenv("RLX_CUDA_ARCH");
  if (!v || !*v) return "";
  const std::string arch = v;
  if (!is_arch(arch))
    throw_user_error(
        fmt::format("RLX_CUDA_ARCH='{}' is not a GPU architecture: give sm_<compute capability>, "
                    "such as sm_80 or sm_90",
                    arch));
  return arch;
}

}  // namespace rlx::cuda
