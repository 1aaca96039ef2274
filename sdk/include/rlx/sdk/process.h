// Running a tool from a plugin: the compilers and emulators targets drive (the cpu target's C
// compiler, the cortexm target's arm-none-eabi-gcc). No shell is involved, so arguments need no
// quoting.
#pragma once
#include <string>
#include <vector>

namespace rlx::sdk {

// run_command's result when the command ran past its time limit and was killed.
inline constexpr int kTimedOut = -2;

// Runs argv[0] (an absolute path) with its arguments, no shell; stdout and stderr together land
// in *output. Returns the exit status (-1 when it could not start or died from a signal). With
// `timeout_s` > 0, a command still running after that many seconds is killed with everything it
// started (its own process group) and kTimedOut is returned.
int run_command(const std::vector<std::string>& argv, std::string* output, int timeout_s = 0);

// A name with a slash is a path (made absolute); otherwise the first executable of that name on
// PATH. Empty when there is none.
std::string find_executable(const std::string& name);

}  // namespace rlx::sdk
