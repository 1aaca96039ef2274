// The progress line on a terminal's stderr. One thread redraws it every kTick while tasks run:
// the outermost task's name, the innermost one's when nested (with a bar when it knows its
// total), a spinner and the time since the outermost began. The line is cut to the terminal's
// width so that "\r" always returns to its start, and erased when the last task ends.
//
// A hand-written component, not a library: Debian 12 packages no C++ progress-bar library
// (docs/decisions.md, "Progress on stderr").
#include "stderr_status.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "rlx/core/progress.h"

namespace rlx::cli {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kTick{100};
constexpr int kBarWidth = 20;
std::atomic<int> holds{0};  // ProgressHold objects alive

void write_stderr(const std::string& text) {
  size_t at = 0;
  while (at < text.size()) {
    ssize_t n = ::write(STDERR_FILENO, text.data() + at, text.size() - at);
    if (n <= 0) return;  // a closed stderr loses the line; never an error
    at += static_cast<size_t>(n);
  }
}

size_t terminal_columns() {
  winsize ws{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

// Shortens `text` to at most `bytes` without splitting a UTF-8 sequence (a file name's).
void cut_utf8(std::string& text, size_t bytes) {
  if (text.size() <= bytes) return;
  while (bytes > 0 && (static_cast<unsigned char>(text[bytes]) & 0xC0) == 0x80) --bytes;
  text.resize(bytes);
}

class ProgressLine final : public progress::Sink {
 public:
  ProgressLine() : thread_([this] { loop(); }) {}
  ~ProgressLine() override { stop(); }

  void begin(uint64_t id, const std::string& name, int64_t total) noexcept override {
    std::lock_guard lock(mutex_);
    tasks_[id] = Entry{name, total, 0, Clock::now()};
    wake_.notify_one();
  }
  void advance(uint64_t id, int64_t done) noexcept override {
    std::lock_guard lock(mutex_);
    if (auto it = tasks_.find(id); it != tasks_.end()) it->second.done = done;
  }
  void end(uint64_t id) noexcept override {
    std::lock_guard lock(mutex_);
    tasks_.erase(id);
    if (tasks_.empty()) clear_locked();
  }

  // Writes `text` where the line was; the next tick draws the line again.
  void write_above(const std::string& text) {
    std::lock_guard lock(mutex_);
    clear_locked();
    write_stderr(text);
  }

  void stop() {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      stopping_ = true;
      clear_locked();
      wake_.notify_one();
    }
    thread_.join();
  }

 private:
  struct Entry {
    std::string name;
    int64_t total = 0, done = 0;
    Clock::time_point start;
  };

  void loop() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      if (tasks_.empty())
        wake_.wait(lock);
      else
        wake_.wait_for(lock, kTick);
      if (!stopping_ && !tasks_.empty()) draw_locked();
    }
  }

  void draw_locked() {
    const Entry& outer = tasks_.begin()->second;  // ids grow, so the first began first
    const Entry& inner = tasks_.rbegin()->second;
    const auto elapsed = Clock::now() - outer.start;
    if (elapsed < kProgressDelay || holds.load() > 0) return;
    std::string text = outer.name;
    if (&inner != &outer) text += " > " + inner.name;
    std::string status;
    if (inner.total > 0) {
      const int64_t done = std::min(inner.done, inner.total);
      const int filled = static_cast<int>(done * kBarWidth / inner.total);
      status += fmt::format(" [{}{}] {}/{}", std::string(filled, '#'),
                            std::string(kBarWidth - filled, '.'), done, inner.total);
    }
    static constexpr char kSpinner[] = {'|', '/', '-', '\\'};
    status += fmt::format(" {} {:.1f}s", kSpinner[frame_++ % 4],
                          std::chrono::duration<double>(elapsed).count());
    // One column short of the width (writing the last column wraps on some terminals); the
    // names give way first, so the bar and the time stay in view.
    const size_t width = terminal_columns() - 1;
    if (text.size() + status.size() > width)
      cut_utf8(text, width > status.size() ? width - status.size() : 0);
    text += status;
    if (text.size() > width) cut_utf8(text, width);
    write_stderr("\r" + text + "\x1b[K");
    drawn_ = true;
  }

  void clear_locked() {
    if (!drawn_) return;
    write_stderr("\r\x1b[K");
    drawn_ = false;
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::map<uint64_t, Entry> tasks_;
  bool drawn_ = false, stopping_ = false;
  unsigned frame_ = 0;
  std::thread thread_;  // last: it starts once the rest is built
};

std::mutex state_mutex;
bool quiet_notes = false;
std::shared_ptr<ProgressLine> line;

}  // namespace

StderrStatus::StderrStatus(bool quiet) {
  std::lock_guard lock(state_mutex);
  quiet_notes = quiet;
  if (quiet || !::isatty(STDERR_FILENO)) return;
  line = std::make_shared<ProgressLine>();
  progress::set_sink(line);
}

StderrStatus::~StderrStatus() {
  std::shared_ptr<ProgressLine> ended;
  {
    std::lock_guard lock(state_mutex);
    ended = std::move(line);
    quiet_notes = false;
  }
  if (!ended) return;
  progress::set_sink(nullptr);
  ended->stop();
}

ProgressHold::ProgressHold() {
  holds.fetch_add(1);
  std::shared_ptr<ProgressLine> current;
  {
    std::lock_guard lock(state_mutex);
    current = line;
  }
  if (current) current->write_above("");
}

ProgressHold::~ProgressHold() {
  holds.fetch_sub(1);
}

void note(const std::string& text) {
  std::shared_ptr<ProgressLine> current;
  {
    std::lock_guard lock(state_mutex);
    if (quiet_notes) return;
    current = line;
  }
  const std::string out = "rlx: " + text + "\n";
  if (current)
    current->write_above(out);
  else
    write_stderr(out);
}

}  // namespace rlx::cli
