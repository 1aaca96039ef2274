#include "target_choice.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "errors.h"
#include "rlx/core/device_info.h"
#include "stderr_status.h"

namespace rlx::cli {
namespace {

struct Candidate {
  std::shared_ptr<Target> target;
  std::string name;
  std::optional<DeviceInfo> device;
  int rank = 0;  // lower is faster
};

// 0 discrete GPU, 1 integrated, 2 other hardware, 3 cpu, 4 software device, -1 unknown.
int rank_of(const std::string& name, const std::optional<DeviceInfo>& device) {
  if (name == "cpu") return 3;
  if (!device) return -1;
  if (device->software) return 4;
  if (device->kind == "discrete gpu") return 0;
  if (device->kind == "integrated gpu") return 1;
  return 2;
}

std::string on_device(const Candidate& c) {
  if (!c.device) return c.name;
  const std::string& what = c.device->software ? c.device->software_name : c.device->name;
  return fmt::format("{} on {}", c.name, what.empty() ? c.device->name : what);
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

std::shared_ptr<Target> choose_auto_target(const registry::Registry& reg) {
  std::vector<Candidate> ranked;
  std::vector<std::string> unknown;
  for (const registry::PluginRecord& p : reg.plugins()) {
    if (p.kind != "target" || p.status != registry::PluginStatus::kAvailable || !p.target) continue;
    if (!p.target->can_execute().ok) continue;
    Candidate c{p.target, p.name, device_info(*p.target)};
    c.rank = rank_of(p.name, c.device);
    if (c.rank < 0)
      unknown.push_back(p.name);
    else
      ranked.push_back(std::move(c));
  }
  if (ranked.empty())
    throw CliError(
        "--target auto found no target that can execute here and says which device it uses",
        "run `rlx --list-targets` and name a target with --target");
  std::stable_sort(ranked.begin(), ranked.end(), [](const Candidate& a, const Candidate& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.name < b.name;
  });
  const Candidate& pick = ranked.front();
  std::vector<std::string> software, slower;
  for (const Candidate& c : ranked) {
    if (&c == &pick) continue;
    (c.rank == 4 ? software : slower).push_back(on_device(c));
  }
  std::string why;
  if (pick.rank <= 2)
    why = fmt::format("it runs on the hardware GPU {}", pick.device->name);
  else if (pick.rank == 3)
    why = software.empty() ? "no target here runs on a hardware GPU"
                           : fmt::format(
                                 "no target here runs on a hardware GPU, and the cpu target "
                                 "is faster than software devices ({})",
                                 join(software));
  else
    why = fmt::format("only software devices can execute here; {} is one", on_device(pick));
  if (pick.rank <= 2 && !slower.empty()) why += fmt::format(" (also available: {})", join(slower));
  note(fmt::format("--target auto: chose {}, because {}", pick.name, why));
  if (!unknown.empty())
    note(fmt::format("--target auto: left out {}, which do not say which device they use",
                     join(unknown)));
  return pick.target;
}

std::string software_device_note(const Target& target) {
  std::optional<DeviceInfo> device = device_info(target);
  if (!device || !device->software) return "";
  const std::string& what = device->software_name.empty() ? device->name : device->software_name;
  // "llvmpipe (LLVM 15.0.6, 256 bits)" already starts with its name; lavapipe's does not.
  const std::string shown =
      device->name.rfind(what, 0) == 0 ? device->name : fmt::format("{} ({})", what, device->name);
  return fmt::format(
      "{} runs on {}, a software implementation on the CPU; expect it slower than --target cpu",
      target.name(), shown);
}

}  // namespace rlx::cli
