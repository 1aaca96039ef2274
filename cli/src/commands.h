// The subcommands of `rlx`. Each one lives in its own file and is described by a Command: the
// spec its arguments are parsed (and its --help printed) from, and the function that runs it.
#pragma once
#include <filesystem>
#include <vector>

#include "args.h"

namespace rlx::cli {

// Options every command accepts, before or after the command name.
struct GlobalOptions {
  std::vector<std::filesystem::path> plugin_paths;  // --plugin-path, searched first
  bool verbose = false;
};

struct Command {
  CommandSpec spec;
  // Returns the exit code; failures are thrown and mapped by errors.h.
  int (*main)(const Args& args, const GlobalOptions& global);
};

Command list_targets_command();
Command explain_command();
Command run_command();
Command compile_command();
Command embed_command();
Command generate_command();
Command bench_command();

// The options of GlobalOptions, appended to every command's spec.
std::vector<OptionSpec> global_option_specs();
GlobalOptions global_options_from(const Args& args);

}  // namespace rlx::cli
