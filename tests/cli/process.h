// Runs a program and captures what a user would see: stdout, stderr and the exit code.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rlx::cli::test {

struct ProcessResult {
  int exit_code = -1;  // 128 + signal when the process was killed by a signal
  std::string out, err;
};

using Environment = std::map<std::string, std::optional<std::string>>;

// `env` entries are set (a value) or unset (nullopt) in the child only. `input`, when given, is
// the child's stdin (written whole before its output is read: keep it under a pipe's 64 KiB);
// otherwise the child inherits the caller's.
ProcessResult run_process(const std::string& program, const std::vector<std::string>& args,
                          const Environment& env = {},
                          const std::optional<std::string>& input = std::nullopt);

// Which of a program's streams is the pseudo-terminal in run_in_terminal (the other is a pipe).
enum class TerminalSide { kStdout, kStderr };

// What a program wrote with one stream on a pseudo-terminal (isatty is true there) and the other
// on a pipe. The terminal's reads are kept apart, so a test can see when output was flushed;
// its line discipline's "\r\n" for each "\n" is turned back into "\n" (a lone "\r", as a
// redrawn progress line writes it, is kept).
struct TerminalResult {
  int exit_code = -1;
  std::vector<std::string> reads;  // the terminal's side, read by read
  std::string piped;               // the other stream
  std::string terminal() const;    // the reads joined
};

// stdin is /dev/null; the terminal is `columns` wide.
TerminalResult run_in_terminal(const std::string& program, const std::vector<std::string>& args,
                               const Environment& env = {},
                               TerminalSide side = TerminalSide::kStdout, int columns = 80);

}  // namespace rlx::cli::test
