// RLX_PROFILE=1: where a GPU-style target's run spends its time, kernel by kernel. Each launch
// is followed by a wait for the device, and the wall time of the pair is added to its kernel's
// row; the rows go to stderr, largest first, when the profile is destroyed (with its
// executable). Waiting after every launch is what makes a kernel's time its own, so a profiled
// run is slower than a plain one: read the shares, not the sum.
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace rlx::gpu_host {

class LaunchProfile {
 public:
  // A profile when RLX_PROFILE is set (and not "0"), else nullptr.
  static std::unique_ptr<LaunchProfile> from_environment(std::string target);
  explicit LaunchProfile(std::string target) : target_(std::move(target)) {}
  ~LaunchProfile();
  LaunchProfile(const LaunchProfile&) = delete;
  LaunchProfile& operator=(const LaunchProfile&) = delete;

  // Kernels of one kind share a row: the symbol without its "k<index>_" prefix.
  void add(const std::string& symbol, std::chrono::steady_clock::duration spent);

 private:
  struct Row {
    int64_t calls = 0;
    std::chrono::steady_clock::duration total{};
  };
  std::string target_;
  std::map<std::string, Row> rows_;
};

}  // namespace rlx::gpu_host
