// The process-wide progress sink (rlx/core/progress.h). It lives in librlx_core, which every
// plugin links dynamically, so a plugin's tasks reach the sink the application installed.
#include "rlx/core/progress.h"

#include <atomic>
#include <mutex>

namespace rlx::progress {
namespace {

std::mutex sink_mutex;
std::shared_ptr<Sink> installed;
std::atomic<uint64_t> next_id{1};

std::shared_ptr<Sink> current_sink() {
  std::lock_guard lock(sink_mutex);
  return installed;
}

}  // namespace

void set_sink(std::shared_ptr<Sink> sink) {
  std::lock_guard lock(sink_mutex);
  installed = std::move(sink);
}

Task::Task(const std::string& name, int64_t total) : sink_(current_sink()) {
  if (!sink_) return;
  id_ = next_id.fetch_add(1, std::memory_order_relaxed);
  sink_->begin(id_, name, total < 0 ? 0 : total);
}

Task::~Task() {
  if (sink_) sink_->end(id_);
}

void Task::advance(int64_t steps) {
  if (!sink_) return;
  done_ += steps;
  sink_->advance(id_, done_);
}

}  // namespace rlx::progress
