// The one host-side pattern of GPU-like targets: a compiled LIR program on a device behind a
// DeviceApi. Construction builds the program's module once and allocates one device buffer per
// constant (uploaded once) and per arena slot of the buffer plan (temporaries of one slot share
// its buffer), and runs the launches that read only constants (once_launches.h) into buffers of
// their own, so no run repeats them. run() uploads the inputs, launches the steps in order,
// downloads the outputs and reports any bad index a kernel found; run_bound() does the same for
// host-bound inputs and outputs and uses device-bound ones where they are, so a caller's device
// tensors stay on the device across runs.
// Where the device records work (a CUDA graph), a run without host control flow is recorded once
// per set of bound buffers and replayed (the last few sets kept: recording_cache.h).
// A while loop runs its control flow here on the host: its cond and body regions are programs
// of their own on the same device, the carried values never leave it, only the predicate does.
#pragma once
#include <memory>
#include <vector>

#include "device_api.h"
#include "rlx/sdk/run_profile.h"
#include "module_plan.h"
#include "recording_cache.h"
#include "rlx/core/target.h"

namespace rlx::gpu_host {

// A device allocation released with its owner.
class OwnedBuffer {
 public:
  OwnedBuffer(DeviceApi& api, size_t bytes);
  ~OwnedBuffer();
  OwnedBuffer(const OwnedBuffer&) = delete;
  OwnedBuffer& operator=(const OwnedBuffer&) = delete;
  const DeviceBuffer& get() const { return buffer_; }

 private:
  DeviceApi& api_;
  DeviceBuffer buffer_;
};

class ProgramOnDevice;

class DeviceExecutable final : public Executable {
 public:
  DeviceExecutable(std::shared_ptr<DeviceApi> api, const lir::Program& program);
  ~DeviceExecutable() override;
  // buffers[i]: host memory of program buffer i for inputs and outputs (constants are the
  // program's own data, already on the device).
  void run(const std::vector<void*>& buffers) override;
  // Contract 2.0: an input or output bound to a buffer of this target's Device is used in place
  // (it never crosses to the host); host-bound ones go through the executable's own buffers as
  // in run().
  void run_bound(const std::vector<BufferBinding>& buffers, QueueId queue) override;

 private:
  std::shared_ptr<DeviceApi> api_;  // destroyed last: every buffer below is released through it
  std::unique_ptr<sdk::RunProfile> profile_;  // printed when the executable goes, before its buffers
  std::shared_ptr<const lir::Program> keep_;  // the program ProgramOnDevice refers to
  std::unique_ptr<ProgramOnDevice> program_;
  std::vector<std::unique_ptr<OwnedBuffer>> io_;  // inputs and outputs, allocated on first run
  RecordingCache recorded_;  // the run's launches by bound buffers, where the device records
};

}  // namespace rlx::gpu_host
