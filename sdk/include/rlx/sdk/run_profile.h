// RLX_PROFILE=1: where a target's run spends its time, kernel by kernel. The executor clocks
// each kernel until it has finished (a GPU-style target waits for its device after each launch;
// a host target's kernels have finished when they return) and adds the time to the kernel's
// row; the rows go to stderr, largest first, when the profile is destroyed (with its
// executable). Waiting after every launch is what makes a kernel's time its own, so a profiled
// GPU run is slower than a plain one: read the shares, not the sum. A device with its own clock
// (cuda's events) times each kernel between two timestamps queued around it instead, with no
// wait between launches, so small kernels are not dwarfed by the host's round trip. The first
// run of a program that ran more than once is left out: it pays for loading kernels on first
// launch (a CUDA driver loads them lazily) and vendor libraries' first calls.
// RLX_PROFILE=kernels gives each kernel of the program its own row ("k12_dot_general"), to tell
// apart what one row per kind adds up (a training step's several products).
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace rlx::sdk {

class RunProfile {
 public:
  // A profile when RLX_PROFILE is set (and not "0"), else nullptr.
  static std::unique_ptr<RunProfile> from_environment(std::string target);
  explicit RunProfile(std::string target, bool per_kernel = false)
      : target_(std::move(target)), per_kernel_(per_kernel) {}
  ~RunProfile();
  RunProfile(const RunProfile&) = delete;
  RunProfile& operator=(const RunProfile&) = delete;

  // Kernels of one kind share a row, the name without its "k<index>_" prefix (unless per kernel).
  void add(const std::string& kernel, std::chrono::steady_clock::duration spent);
  // RLX_PROFILE=kernels: a row per kernel (a target names each call kernel distinctly).
  bool per_kernel() const { return per_kernel_; }
  // A run of the program starts: what the first one adds is shown only if no other follows.
  void begin_run() { ++runs_; }
  // The times come from the device's clock (said in the heading).
  void note_device_clock() { device_clock_ = true; }

 private:
  struct Row {
    int64_t calls = 0;
    std::chrono::steady_clock::duration total{};
  };
  std::string target_;
  bool per_kernel_ = false;
  bool device_clock_ = false;
  int64_t runs_ = 0;
  std::map<std::string, Row> rows_, first_run_;
};

}  // namespace rlx::sdk
