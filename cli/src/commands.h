// The subcommands of `rlx`. Each one lives in its own file: a struct of its options, the function
// that declares them (options.h) on the command's CLI11 App, bound to the struct's fields, and the
// function that runs the command on them. command_line.cpp parses the command line into them.
#pragma once
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace rlx::cli {

// Options every command accepts, before or after the command name.
struct GlobalOptions {
  std::vector<std::filesystem::path> plugin_paths;  // --plugin-path, searched first
  bool verbose = false;
  bool quiet = false;  // no progress line, no notes on stderr (errors still)
};

// Runs a parsed command; returns the exit code. Failures are thrown and mapped by errors.h.
using CommandMain = std::function<int(const GlobalOptions& global)>;

struct Command {
  std::string name;         // "run"; what follows `rlx`
  std::string summary;      // one line for `rlx --help`
  std::string usage;        // arguments after the command name, for the usage line of --help
  std::string description;  // paragraph(s) shown by --help
  // Declares the command's options on `app`, bound to storage the returned function owns; once
  // the command line is parsed into it, that function runs the command.
  std::function<CommandMain(CLI::App& app)> declare;
};

// A Command whose options are the fields of `Options`: `declare_options` binds them, `main` runs
// on what was parsed into them.
template <class Options>
Command make_command(Command text, void (*declare_options)(CLI::App& app, Options& options),
                     int (*main)(const Options& options, const GlobalOptions& global)) {
  text.declare = [declare_options, main](CLI::App& app) -> CommandMain {
    auto options = std::make_shared<Options>();
    declare_options(app, *options);
    return [options, main](const GlobalOptions& global) { return main(*options, global); };
  };
  return text;
}

Command list_targets_command();
Command info_command();
Command explain_command();
Command run_command();
Command compile_command();
Command embed_command();
Command generate_command();
Command chat_command();
Command bench_command();
Command train_command();  // train.cpp
Command quantize_command();  // quantize.cpp
Command splat_fit_command();  // splat_fit.cpp

Command solve_command();  // solve.cpp

}  // namespace rlx::cli
