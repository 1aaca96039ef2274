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

// What a program wrote to a terminal: its stdout is a pseudo-terminal (isatty is true), each
// read of it kept apart so a test can see when output was flushed; stderr is a pipe.
struct TerminalResult {
  int exit_code = -1;
  std::vector<std::string> reads;  // stdout as the reads got it ("\r\n" turned back into "\n")
  std::string err;
};

TerminalResult run_in_terminal(const std::string& program, const std::vector<std::string>& args,
                               const Environment& env = {});

}  // namespace rlx::cli::test
