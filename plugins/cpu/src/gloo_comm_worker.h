// GlooComm's background collectives (gloo_comm.h): one worker thread per communicator runs them
// in the order they were started, while the thread that started them goes on running kernels
// (the cpu executable waits for a result only before the first kernel that touches it).
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

namespace rlx::cpu {

class CollectiveWorker {
 public:
  CollectiveWorker() : thread_([this] { loop(); }) {}
  ~CollectiveWorker() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  uint64_t submit(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(m_);
    const uint64_t ticket = next_++;
    queue_.emplace_back(ticket, std::move(task));
    cv_.notify_all();
    return ticket;
  }

  // Until task `ticket` has run; rethrows its failure.
  void wait(uint64_t ticket) {
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait(lock, [&] { return done_ >= ticket; });
    auto it = failures_.find(ticket);
    if (it == failures_.end()) return;
    std::exception_ptr e = it->second;
    failures_.erase(it);
    std::rethrow_exception(e);
  }

  // Until every task has run; rethrows the first failure nobody waited for.
  void wait_all() {
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait(lock, [&] { return done_ + 1 == next_; });
    if (failures_.empty()) return;
    std::exception_ptr e = failures_.begin()->second;
    failures_.clear();
    std::rethrow_exception(e);
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(m_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_, and nothing left to run
      auto [ticket, task] = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      std::exception_ptr failure;
      try {
        task();
      } catch (...) {
        failure = std::current_exception();
      }
      lock.lock();
      if (failure) failures_[ticket] = failure;
      done_ = ticket;
      cv_.notify_all();
    }
  }

  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::pair<uint64_t, std::function<void()>>> queue_;
  uint64_t next_ = 1, done_ = 0;
  bool stop_ = false;
  std::map<uint64_t, std::exception_ptr> failures_;
  std::thread thread_;  // last: starts after the members it uses exist
};

}  // namespace rlx::cpu
