// Runs a program with its stderr on a pseudo-terminal, as a user at a terminal sees it, and its
// stdout on a pipe, so a test can check what each received. (process.h runs both on pipes.)
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "process.h"

namespace rlx::cli::test {

// `err` holds the terminal's bytes: what the program wrote to stderr, with the terminal's "\r\n"
// for each "\n". The terminal is `columns` wide.
ProcessResult run_with_terminal_stderr(
    const std::string& program, const std::vector<std::string>& args,
    const std::map<std::string, std::optional<std::string>>& env = {}, int columns = 160);

}  // namespace rlx::cli::test
