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

// `env` entries are set (a value) or unset (nullopt) in the child only.
ProcessResult run_process(const std::string& program, const std::vector<std::string>& args,
                          const std::map<std::string, std::optional<std::string>>& env = {});

}  // namespace rlx::cli::test
