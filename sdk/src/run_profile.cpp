#include "rlx/sdk/run_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace rlx::sdk {

std::unique_ptr<RunProfile> RunProfile::from_environment(std::string target) {
  const char* v = std::getenv("RLX_PROFILE");
  if (!v || !*v || std::strcmp(v, "0") == 0) return nullptr;
  return std::make_unique<RunProfile>(std::move(target), std::strcmp(v, "kernels") == 0);
}

void RunProfile::add(const std::string& kernel, std::chrono::steady_clock::duration spent) {
  size_t start = 0;
  if (!per_kernel_ && kernel.size() > 1 && kernel[0] == 'k') {
    size_t i = 1;
    while (i < kernel.size() && kernel[i] >= '0' && kernel[i] <= '9') ++i;
    if (i > 1 && i < kernel.size() && kernel[i] == '_') start = i + 1;
  }
  Row& r = (runs_ <= 1 ? first_run_ : rows_)[kernel.substr(start)];
  ++r.calls;
  r.total += spent;
}

RunProfile::~RunProfile() {
  const bool warm = runs_ > 1;
  const auto& kept = warm ? rows_ : first_run_;
  if (kept.empty()) return;
  std::vector<std::pair<std::string, Row>> rows(kept.begin(), kept.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.total > b.second.total; });
  std::chrono::steady_clock::duration all{};
  for (const auto& [name, r] : rows) all += r.total;
  const double all_ms = std::chrono::duration<double, std::milli>(all).count();
  std::string text = fmt::format(
      "rlx profile ({}): {:.3f} ms in {} {} over {}, {}\n", target_, all_ms, rows.size(),
      per_kernel_ ? "kernels" : "kinds of kernel",
      warm ? fmt::format("runs 2 to {} (the first is left out)", runs_) : std::string("one run"),
      device_clock_ ? "each timed on the device's clock" : "each clocked until it finished");
  text += fmt::format("  {:>10} {:>7} {:>8}  {}\n", "ms", "share", "calls", "kernel");
  for (const auto& [name, r] : rows) {
    const double ms = std::chrono::duration<double, std::milli>(r.total).count();
    text += fmt::format("  {:>10.3f} {:>6.1f}% {:>8}  {}\n", ms,
                        all_ms > 0 ? 100 * ms / all_ms : 0.0, r.calls, name);
  }
  std::fputs(text.c_str(), stderr);
}

}  // namespace rlx::sdk
