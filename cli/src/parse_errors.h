// What CLI11 reports about a command line, said the way rlx says every usage error: the option or
// argument as --help shows it, the command it was given to, and a hint (the command's --help, or
// the option a typo most likely meant).
#pragma once

namespace CLI {
class App;
class ParseError;
}  // namespace CLI

namespace rlx::cli {

// Throws a UsageError when an argument was taken by neither rlx nor the command: an unknown
// command or option, or one argument too many. `rlx_app` is rlx's own App; `command` the App of
// the command named on the command line, or nullptr. Every App is parsed with allow_extras, so
// these are left for this check rather than thrown by CLI11 in its own words.
void check_leftover_arguments(const CLI::App& rlx_app, const CLI::App* command);

// The UsageError for anything else CLI11 refused: a missing argument or option value, a value
// given twice or to a flag, an integer out of range.
[[noreturn]] void throw_usage_error(const CLI::ParseError& error, const CLI::App& rlx_app,
                                    const CLI::App* command);

}  // namespace rlx::cli
