#include "rocm_compile.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>

#include "hipcc.h"
#include "hiprtc.h"
#include "rlx/core/error.h"

namespace rlx::rocm {

std::string arch_from_env() {
  const char* v = std::getenv("RLX_ROCM_ARCH");
  if (!v || !*v) return "";
  const std::string arch = v;
  const std::string id = arch.substr(0, arch.find(':'));
  bool ok = id.rfind("gfx", 0) == 0 && (id.size() == 6 || id.size() == 7);
  for (size_t i = 3; ok && i < id.size(); ++i)
    ok = std::isalnum(static_cast<unsigned char>(id[i])) != 0;
  if (!ok)
    throw_user_error(
        fmt::format("RLX_ROCM_ARCH='{}' is not an AMD GPU architecture: give gfx<id>, such as "
                    "gfx90a (MI200) or gfx942 (MI300)",
                    arch));
  return arch;
}

std::string hip_compiler(std::string* why) {
  std::string rtc_why, hipcc_why;
  if (std::string rtc = hiprtc_identity(&rtc_why); !rtc.empty()) return rtc;
  if (std::string hipcc = hipcc_path(&hipcc_why); !hipcc.empty())
    return fmt::format("hipcc ({})", hipcc);
  if (why) *why = fmt::format("{}; and {}", rtc_why, hipcc_why);
  return "";
}

std::string compile_hip(const std::string& source, const std::string& arch) {
  if (!hiprtc_identity(nullptr).empty()) return hiprtc_compile(source, "rocm_kernels.hip", arch);
  std::string why;
  if (hip_compiler(&why).empty())
    throw_unsupported(fmt::format("rocm cannot compile kernels here: {}", why));
  return hipcc_compile(source, arch);
}

}  // namespace rlx::rocm
