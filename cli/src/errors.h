// Maps whatever a command threw to an exit code and a message on stderr:
//   0 ok; 1 the user can fix it (bad input, illegal graph, unknown target, bad command line);
//   2 a bug in rlx or a plugin (an internal error, a plugin's unclassified failure, an exception
//   rlx did not expect).
// Messages read "rlx: error: <what>", followed where useful by "hint: <what to do>".
#pragma once
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

namespace rlx::cli {

// Anything wrong that the user can fix: exit code 1, message plus an optional hint line.
class CliError : public std::runtime_error {
 public:
  CliError(std::string message, std::string hint = {})
      : std::runtime_error(std::move(message)), hint_(std::move(hint)) {}
  const std::string& hint() const { return hint_; }

 private:
  std::string hint_;
};

// A malformed command line; the hint points at the command's --help.
class UsageError : public CliError {
 public:
  using CliError::CliError;
};

// "run `rlx run --help` to see its usage": the hint of every usage error of a command (`command`
// is "run"; empty for rlx itself).
std::string usage_hint(std::string_view command);

inline constexpr int kExitOk = 0;
inline constexpr int kExitUser = 1;
inline constexpr int kExitInternal = 2;

// "rlx: warning: ..." and "rlx: note: ..." on stderr: something the user should know that does
// not stop the command.
void print_warning(const std::string& what);
void print_note(const std::string& what);

// What report_exception says about an exception, for callers that present it themselves (the
// Python module raises it as an exception of the class named after `kind`). `exit_code` is the
// CLI's; `where` the raise site of a library error ("" for others).
struct ErrorRecord {
  std::string kind;  // usage, user, compile, unsupported, device, plugin, internal, out_of_memory
  std::string message;  // as printed after "rlx: error: "
  std::string node;     // the graph node the message names, or ""
  std::string hint;     // as printed after "hint: ", or ""
  std::string where;
  int exit_code = kExitInternal;
};
ErrorRecord describe_exception(std::exception_ptr error);

// Prints the exception's message (and with `verbose` where it was raised) to stderr and returns
// the exit code for it. With `json` (the command line has --json) the message is one line of
// JSON: {"error": {"kind", "message", "node", "hint"}}, kind one of usage, user, compile,
// unsupported, device, plugin, internal, out_of_memory; node only where the message names one.
int report_exception(std::exception_ptr error, bool verbose, bool json = false);

}  // namespace rlx::cli
