// GlooComm's background all_reduce. Calls on the context never overlap: the worker is idle
// whenever the starting thread talks to the context itself (every synchronous call drains it).
#include "gloo_comm_worker.h"

#include <cstring>

#include "gloo_comm.h"

namespace rlx::cpu {

void GlooComm::drain() {
  if (worker_) worker_->wait_all();
  complete_sends();
}

uint64_t GlooComm::start_all_reduce(const void* in, void* out, DType dtype, int64_t count,
                                    Reduce op) {
  drain();
  if (in != out) std::memmove(out, in, static_cast<size_t>(count) * dtype_size(dtype));
  if (!worker_) worker_ = std::make_unique<CollectiveWorker>();
  return worker_->submit([this, out, dtype, count, op] { reduce_in_place(out, dtype, count, op); });
}

void GlooComm::wait(uint64_t ticket) {
  if (worker_) worker_->wait(ticket);
}

void GlooComm::wait_all() {
  if (worker_) worker_->wait_all();
}

void GlooComm::stop_worker() {
  if (!worker_) return;
  try {
    worker_->wait_all();
  } catch (const std::exception&) {
    // Reported to whoever waited; at teardown nobody is left to tell.
  }
  worker_.reset();
}

}  // namespace rlx::cpu
