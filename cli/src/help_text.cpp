#include "help_text.h"

#include <fmt/format.h>

#include <CLI/App.hpp>
#include <algorithm>

namespace rlx::cli {

std::string option_display_name(const CLI::Option& option) {
  if (option.get_positional()) return option.get_name(/*positional=*/true);
  std::string shown;
  for (const std::string& s : option.get_snames()) shown += fmt::format("-{}, ", s);
  for (const std::string& l : option.get_lnames()) shown += fmt::format("--{}, ", l);
  shown.resize(shown.size() - 2);
  if (std::string value = option.get_type_name(); !value.empty()) shown += " " + value;
  return shown;
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
  for (const Command& c : commands) width = std::max(width, c.name.size());
  for (const Command& c : commands) out += fmt::format("  {:<{}}  {}\n", c.name, width, c.summary);
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

std::string command_help(const Command& command, const CLI::App& app) {
  std::string out = fmt::format("usage: rlx {}{}{}\n", command.name,
                                command.usage.empty() ? "" : " ", command.usage);
  if (!command.description.empty()) out += "\n" + command.description + "\n";
  const std::vector<const CLI::Option*> options =
      app.get_options([](const CLI::Option* o) { return !o->get_positional(); });
  if (options.empty()) return out;
  size_t width = 0;
  for (const CLI::Option* o : options) width = std::max(width, option_display_name(*o).size());
  out += "\noptions:\n";
  for (const CLI::Option* o : options)
    out += fmt::format("  {:<{}}  {}\n", option_display_name(*o), width, o->get_description());
  return out;
}

}  // namespace rlx::cli
