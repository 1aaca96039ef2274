// Maps whatever a command threw to an exit code and a message on stderr:
//   0 ok; 1 the user can fix it (bad input, illegal graph, unknown target, bad command line);
//   2 a bug in rlx (an internal error or an exception rlx did not expect).
// Messages read "rlx: error: <what>", followed where useful by "hint: <what to do>".
#pragma once
#include <exception>

namespace rlx::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitUser = 1;
inline constexpr int kExitInternal = 2;

// Prints the exception's message (and with `verbose` where it was raised) to stderr and returns
// the exit code for it.
int report_exception(std::exception_ptr error, bool verbose);

}  // namespace rlx::cli
