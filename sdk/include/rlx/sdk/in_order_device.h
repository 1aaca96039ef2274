// The queue half of rlx::Device for a device whose work all runs in one in-order stream (a host
// target, the GPU-style host's adapters): every queue id is that stream, and since an in-order
// stream orders every pair of operations, each event dependency holds without waiting.
// synchronize() is the device's own "finish what was enqueued".
#pragma once
#include <atomic>

#include "rlx/core/device.h"

namespace rlx::sdk {

class InOrderDevice : public Device {
 public:
  QueueId create_queue() override { return 0; }
  Event record(QueueId queue) override { return Event{queue, ++sequence_}; }
  void wait(QueueId, const Event&) override {}
  void synchronize(const Event&) override { finish(); }

 protected:
  // Returns when everything enqueued so far has completed.
  virtual void finish() = 0;

 private:
  std::atomic<uint64_t> sequence_{0};
};

}  // namespace rlx::sdk
