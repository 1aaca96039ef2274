// What rlx says on stderr besides errors: the progress line of long work (rlx/core/progress.h)
// and notes ("auto: chose cpu ...", "vulkan runs on lavapipe ..."). The progress line is drawn
// only when stderr is a terminal, and only once the work has lasted kProgressDelay, so quick
// commands and pipes never see it; --quiet silences both the line and the notes.
#pragma once
#include <chrono>
#include <string>

namespace rlx::cli {

inline constexpr std::chrono::milliseconds kProgressDelay{700};

// For the command's lifetime: installs the progress sink (when stderr is a terminal and not
// `quiet`) and makes note() honour `quiet`. Removing it clears a line still drawn.
class StderrStatus {
 public:
  explicit StderrStatus(bool quiet);
  ~StderrStatus();
  StderrStatus(const StderrStatus&) = delete;
  StderrStatus& operator=(const StderrStatus&) = delete;
};

// While one exists the progress line is not drawn: text streaming to stdout on the same terminal
// (generate's tokens, mid-line) would be erased by the line's "\r".
class ProgressHold {
 public:
  ProgressHold();
  ~ProgressHold();
  ProgressHold(const ProgressHold&) = delete;
  ProgressHold& operator=(const ProgressHold&) = delete;
};

// "rlx: <text>" on stderr, unless --quiet; a progress line being drawn is cleared first and
// drawn again below it.
void note(const std::string& text);

}  // namespace rlx::cli
