// rlx's command line, parsed by CLI11: rlx's own options (--plugin-path, -v, --help, --version),
// then one command (its name, or `--list-targets`, or `help [COMMAND]`) with its options.
#pragma once
#include <string>
#include <vector>

namespace rlx::cli {

// Parses `args` (argv without the program name) and runs the command they name; returns the exit
// code. Usage errors and the command's failures are thrown, for report_exception (errors.h).
int run_command_line(const std::vector<std::string>& args);

}  // namespace rlx::cli
