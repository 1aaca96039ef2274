#include "libtpu_environment.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace rlx::tpu {

namespace {

bool is_libtpu(const std::string& path) {
  return std::filesystem::path(path).filename().string().rfind("libtpu", 0) == 0;
}

// GCE VMs (TPU VMs among them) report this DMI product name; the metadata server exists there.
bool on_google_compute_engine() {
  std::ifstream f("/sys/class/dmi/id/product_name");
  std::string name;
  std::getline(f, name);
  return name.find("Google") != std::string::npos;
}

}  // namespace

std::string prepare_libtpu_environment(const std::string& plugin_path) {
  if (!is_libtpu(plugin_path) || std::getenv("TPU_SKIP_MDS_QUERY") || on_google_compute_engine())
    return "";
  setenv("TPU_SKIP_MDS_QUERY", "1", 0);
  return "not on Google Compute Engine, so TPU_SKIP_MDS_QUERY=1 was set for libtpu";
}

}  // namespace rlx::tpu
