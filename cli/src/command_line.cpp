#include "command_line.h"

#include <fmt/format.h>

// CLI.hpp, not only App.hpp: App refers to the config reader and help formatter that CLI11 defines
// in headers of their own, and one file must include them.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "commands.h"
#include "errors.h"
#include "help_text.h"
#include "options.h"
#include "parse_errors.h"
#include "stderr_status.h"

#ifndef RLX_VERSION
#error "RLX_VERSION is set from PROJECT_VERSION by cli/CMakeLists.txt"
#endif

namespace rlx::cli {
namespace {

std::vector<Command> all_commands() {
  return {list_targets_command(), info_command(),    explain_command(),
          run_command(),          compile_command(), embed_command(),
          generate_command(),     chat_command(),    bench_command(),
          train_command(), quantize_command(), splat_fit_command(), solve_command()};
}

// A command, the App its options were declared on, and what runs it on them.
struct Subcommand {
  Command command;
  CLI::App* app = nullptr;
  CommandMain main;
};

const Subcommand* find_by_app(const std::vector<Subcommand>& subcommands, const CLI::App* app) {
  for (const Subcommand& s : subcommands)
    if (s.app == app) return &s;
  return nullptr;
}

// The help of the command named `name`, or rlx's own when the name is empty.
std::string help_of(const std::vector<Subcommand>& subcommands, const std::string& name) {
  std::vector<Command> listed;
  for (const Subcommand& s : subcommands) {
    if (s.command.name == name) return command_help(s.command, *s.app);
    listed.push_back(s.command);
  }
  if (!name.empty()) throw UsageError(fmt::format("unknown command '{}'", name), usage_hint(""));
  return top_help(listed);
}

// `rlx help [COMMAND]` is parsed like the others, so it too has --help and refuses what it does
// not take.
Command help_command(const std::vector<Subcommand>& subcommands) {
  Command help{"help", "show the help of a command", "[COMMAND]",
               "Prints the help of COMMAND, as `rlx COMMAND --help` does, or without COMMAND "
               "rlx's own."};
  help.declare = [&subcommands](CLI::App& app) -> CommandMain {
    auto topic = std::make_shared<std::string>();
    add_argument(app, "COMMAND", *topic, Presence::kOptional);
    return [&subcommands, topic](const GlobalOptions&) {
      std::fputs(help_of(subcommands, *topic).c_str(), stdout);
      return kExitOk;
    };
  };
  return help;
}

}  // namespace

int run_command_line(const std::vector<std::string>& args) {
  GlobalOptions global;
  CLI::App rlx_app("", "rlx");
  rlx_app.set_help_flag("-h,--help", "show this help");
  rlx_app.set_version_flag("--version", "rlx " RLX_VERSION " (ABI " RLX_ABI_VERSION ")",
                           "print the version and plugin ABI");
  // What no App takes is left for check_leftover_arguments, which says it in rlx's words (the
  // commands inherit this). One command per command line: a MODEL named like a command is a
  // MODEL.
  rlx_app.allow_extras();
  rlx_app.require_subcommand(0, 1);
  add_global_options(rlx_app, global);

  std::vector<Subcommand> subcommands;
  std::vector<Command> commands = all_commands();
  commands.push_back(help_command(subcommands));
  for (Command& command : commands) {
    CLI::App* app = rlx_app.add_subcommand(command.name, command.summary);
    CommandMain main = command.declare(*app);
    add_global_options(*app, global);
    app->set_help_flag("-h,--help", "show this help");  // declared again to come last in --help
    if (command.name == "list-targets") app->alias("--list-targets");  // `rlx --list-targets`
    subcommands.push_back({std::move(command), app, std::move(main)});
  }

  auto chosen = [&rlx_app]() -> const CLI::App* {
    std::vector<CLI::App*> named = rlx_app.get_subcommands();
    return named.empty() ? nullptr : named.front();
  };
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes the last first
  try {
    rlx_app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    const Subcommand* s = find_by_app(subcommands, chosen());
    // `rlx --help run` asks for rlx's help: the flag came before the command.
    const bool own = rlx_app.get_help_ptr()->count() > 0 || !s;
    std::fputs(help_of(subcommands, own ? "" : s->command.name).c_str(), stdout);
    return kExitOk;
  } catch (const CLI::CallForVersion& version) {
    std::fputs((std::string(version.what()) + "\n").c_str(), stdout);
    return kExitOk;
  } catch (const CLI::ParseError& error) {
    check_leftover_arguments(rlx_app, chosen());  // an unknown option explains the rest
    throw_usage_error(error, rlx_app, chosen());
  }
  check_leftover_arguments(rlx_app, chosen());

  const Subcommand* s = find_by_app(subcommands, chosen());
  if (!s) throw UsageError("no command given", usage_hint(""));
  StderrStatus status(global.quiet);
  return s->main(global);
}

}  // namespace rlx::cli
