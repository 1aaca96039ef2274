// The `rlx` binary: finds the subcommand, parses its arguments and runs it. Everything a command
// throws is turned into a message and an exit code by errors.cpp, in one place.
#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "errors.h"

#ifndef RLX_VERSION
#error "RLX_VERSION is set from PROJECT_VERSION by cli/CMakeLists.txt"
#endif

namespace rlx::cli {

std::vector<OptionSpec> global_option_specs() {
  return {
      {"plugin-path", 0, "DIR", "search DIR for plugins before any other folder", true},
      {"verbose", 'v', "", "more detail: per-plugin details in listings, where an error arose"},
      {"help", 'h', "", "show this help"},
  };
}

GlobalOptions global_options_from(const Args& args) {
  GlobalOptions g;
  for (const std::string& p : args.values("plugin-path")) g.plugin_paths.emplace_back(p);
  g.verbose = args.flag("verbose");
  return g;
}

namespace {

std::vector<Command> all_commands() {
  std::vector<Command> commands = {list_targets_command(), explain_command(), run_command(),
                                   compile_command(),      embed_command(),   generate_command(),
                                   bench_command()};
  for (Command& c : commands)
    for (OptionSpec& o : global_option_specs()) c.spec.options.push_back(o);
  return commands;
}

std::string top_help(const std::vector<Command>& commands) {
  std::string out =
      "usage: rlx [--plugin-path DIR]... [-v] COMMAND [ARGS]\n"
      "       rlx --list-targets [-v] [--json]\n"
      "       rlx --version\n"
      "\n"
      "rlx compiles ML models for many targets; each target is a plugin.\n"
      "\n"
      "commands:\n";
  size_t width = 4;
  for (const Command& c : commands) width = std::max(width, c.spec.name.size());
  for (const Command& c : commands)
    out += fmt::format("  {:<{}}  {}\n", c.spec.name, width, c.spec.summary);
  out += fmt::format("  {:<{}}  {}\n", "help", width, "show the help of a command");
  out +=
      "\n"
      "global options (before or after the command):\n"
      "  --plugin-path DIR  search DIR for plugins first (repeatable); then RLX_PLUGIN_PATH,\n"
      "                     $XDG_DATA_HOME/rlx/plugins.d, <prefix>/share/rlx/plugins.d, system "
      "dirs\n"
      "  -v, --verbose      more detail: plugin details in listings, where an error arose\n"
      "  -h, --help         show help (`rlx COMMAND --help` for a command's options)\n"
      "  --version          print the version and plugin ABI\n"
      "\n"
      "exit codes: 0 ok, 1 user error (bad input, illegal graph, unknown target), 2 internal "
      "error\n";
  return out;
}

const Command* find_command(const std::vector<Command>& commands, const std::string& name) {
  for (const Command& c : commands)
    if (c.spec.name == name) return &c;
  return nullptr;
}

int dispatch(const std::vector<std::string>& tokens) {
  const std::vector<Command> commands = all_commands();
  const std::string top_hint = "run `rlx --help` to see the commands";

  // Global options may come before the command; they are handed to its parser with the rest.
  std::vector<std::string> leading;
  size_t i = 0;
  std::string name;
  for (; i < tokens.size(); ++i) {
    const std::string& tok = tokens[i];
    if (tok == "--version") {
      std::fputs("rlx " RLX_VERSION " (ABI " RLX_ABI_VERSION ")\n", stdout);
      return kExitOk;
    }
    if (tok == "--help" || tok == "-h") {
      std::fputs(top_help(commands).c_str(), stdout);
      return kExitOk;
    }
    if (tok == "--list-targets") {
      name = "list-targets";
      ++i;
      break;
    }
    if (tok == "--verbose" || tok == "-v" || tok.rfind("--plugin-path=", 0) == 0) {
      leading.push_back(tok);
    } else if (tok == "--plugin-path") {
      if (i + 1 >= tokens.size())
        throw UsageError("option --plugin-path needs a value (DIR)", top_hint);
      leading.push_back(tok);
      leading.push_back(tokens[++i]);
    } else if (tok.size() > 1 && tok[0] == '-') {
      throw UsageError(fmt::format("unknown option '{}'", tok), top_hint);
    } else {
      name = tok;
      ++i;
      break;
    }
  }
  if (name.empty()) throw UsageError("no command given", top_hint);

  if (name == "help") {
    if (i >= tokens.size()) {
      std::fputs(top_help(commands).c_str(), stdout);
      return kExitOk;
    }
    const Command* c = find_command(commands, tokens[i]);
    if (!c) throw UsageError(fmt::format("unknown command '{}'", tokens[i]), top_hint);
    std::fputs(help_text(c->spec).c_str(), stdout);
    return kExitOk;
  }

  const Command* command = find_command(commands, name);
  if (!command) throw UsageError(fmt::format("unknown command '{}'", name), top_hint);
  std::vector<std::string> rest = leading;
  rest.insert(rest.end(), tokens.begin() + static_cast<std::ptrdiff_t>(i), tokens.end());
  Args args = parse_args(command->spec, rest);
  if (args.flag("help")) {
    std::fputs(help_text(command->spec).c_str(), stdout);
    return kExitOk;
  }
  return command->main(args, global_options_from(args));
}

// Known before parsing, so a usage error can still honour it.
bool wants_verbose(const std::vector<std::string>& tokens) {
  for (const std::string& t : tokens) {
    if (t == "--") break;
    if (t == "--verbose" || t == "-v") return true;
  }
  return false;
}

}  // namespace
}  // namespace rlx::cli

int main(int argc, char** argv) {
  std::vector<std::string> tokens(argv + 1, argv + argc);
  int code;
  try {
    code = rlx::cli::dispatch(tokens);
  } catch (...) {
    code = rlx::cli::report_exception(std::current_exception(), rlx::cli::wants_verbose(tokens));
  }
  // A closed or full stdout (`rlx --list-targets | head`, a full disk) must not look like success.
  if (std::fflush(stdout) != 0 && code == rlx::cli::kExitOk) {
    std::fputs("rlx: error: cannot write to standard output\n", stderr);
    code = rlx::cli::kExitUser;
  }
  return code;
}
