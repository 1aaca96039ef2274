// Progress of work that can take more than a second (an import, a compile stage, a system
// compiler run, a shader build, bench rounds), reported by libraries and plugins alike and shown
// by whoever installed a sink: the CLI draws a line on stderr when it is a terminal; a library
// user who installs nothing pays one mutex per task and sees nothing.
//
// Tasks nest (a compile stage around a shader build) and may be started on any thread; a sink is
// told each begin, advance and end with the task's id. Tasks are for work, not for output: code
// that writes to stdout does so outside a task, so a progress line never lands inside it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace rlx::progress {

// Receives the tasks of the whole process; its methods may be called from several threads at
// once and must not throw.
class Sink {
 public:
  virtual ~Sink() = default;
  // `total` is the number of steps when known, else 0 (a spinner rather than a bar).
  virtual void begin(uint64_t id, const std::string& name, int64_t total) noexcept = 0;
  virtual void advance(uint64_t id, int64_t done) noexcept = 0;
  virtual void end(uint64_t id) noexcept = 0;
};

// Installs the process's sink (nullptr removes it). Tasks already running keep the sink they
// started with.
void set_sink(std::shared_ptr<Sink> sink);

// One piece of work, from construction to destruction. Different tasks may live on different
// threads; one task is advanced by one thread at a time.
class Task {
 public:
  explicit Task(const std::string& name, int64_t total = 0);
  ~Task();
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  // `steps` more of the total are done.
  void advance(int64_t steps = 1);

 private:
  std::shared_ptr<Sink> sink_;  // null: nobody listens
  uint64_t id_ = 0;
  int64_t done_ = 0;
};

}  // namespace rlx::progress
