// The --help texts, written by rlx rather than by CLI11's formatter so that they keep the layout
// users and scripts know: a usage line, the description, then the options as the command
// declared them (its own first, then --plugin-path, --verbose and --help).
#pragma once
#include <string>
#include <vector>

#include "commands.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace rlx::cli {

// `rlx --help`: every command (`help` included) with its summary, the global options and the
// exit codes.
std::string top_help(const std::vector<Command>& commands);

// `rlx COMMAND --help`, from the command's texts and the options declared on its App.
std::string command_help(const Command& command, const CLI::App& app);

// An option as --help and usage errors show it: "-t, --target T", "--json", "MODEL".
std::string option_display_name(const CLI::Option& option);

}  // namespace rlx::cli
