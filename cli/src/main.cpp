// The `rlx` binary: command_line.cpp parses the arguments and runs the command they name.
// Everything a command throws is turned into a message and an exit code by errors.cpp, in one
// place.
#include <cstdio>
#include <initializer_list>
#include <string>
#include <vector>

#include "command_line.h"
#include "errors.h"

namespace {

// Known before parsing, so a usage error can still honour them.
bool has_flag(const std::vector<std::string>& args, std::initializer_list<const char*> names) {
  for (const std::string& a : args) {
    if (a == "--") break;
    for (const char* n : names)
      if (a == n) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  int code;
  try {
    code = rlx::cli::run_command_line(args);
  } catch (...) {
    code = rlx::cli::report_exception(std::current_exception(), has_flag(args, {"--verbose", "-v"}),
                                      has_flag(args, {"--json"}));
  }
  // A closed or full stdout (`rlx --list-targets | head`, a full disk) must not look like success.
  if (std::fflush(stdout) != 0 && code == rlx::cli::kExitOk) {
    std::fputs("rlx: error: cannot write to standard output\n", stderr);
    code = rlx::cli::kExitUser;
  }
  return code;
}
