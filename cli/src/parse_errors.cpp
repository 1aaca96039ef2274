#include "parse_errors.h"

#include <fmt/format.h>

#include <CLI/App.hpp>
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "errors.h"
#include "help_text.h"
#include "rlx/core/spelling.h"

namespace rlx::cli {
namespace {

std::string command_line_name(const CLI::App* command) {
  return command ? "rlx " + command->get_name() : "rlx";
}

std::string hint_for(const CLI::App* command) {
  return usage_hint(command ? command->get_name() : "");
}

bool looks_like_option(const std::string& arg) {
  return arg.size() > 1 && arg[0] == '-';
}

// The arguments `app` took no part of, in command-line order. CLI11 also files a `--` there (so
// that it can hand the rest on); that one was understood.
std::vector<std::string> leftovers(const CLI::App& app) {
  std::vector<std::string> args = app.remaining(/*recurse=*/false);
  std::erase(args, "--");
  return args;
}

// A typo such as --taget should point at --target rather than only at --help.
std::string unknown_option_hint(const CLI::App& command, std::string_view name) {
  std::vector<std::string> names;
  for (const CLI::Option* o : command.get_options())
    for (const std::string& l : o->get_lnames()) names.push_back(l);
  if (std::optional<std::string> best = closest_name(name, names))
    return fmt::format("did you mean --{}? {}", *best, hint_for(&command));
  return hint_for(&command);
}

// `rlx rnu` should point at run.
std::string unknown_command_hint(const CLI::App& rlx_app, std::string_view name) {
  std::vector<std::string> names;
  for (const CLI::App* c : rlx_app.get_subcommands({})) names.push_back(c->get_name());
  if (std::optional<std::string> best = closest_name(name, names))
    return fmt::format("did you mean `rlx {}`? {}", *best, usage_hint(""));
  return usage_hint("");
}

// The option a CLI11 message is about: CLI11 begins those messages with the option's name
// ("--target: 1 required T missing", "json was given a disallowed flag override").
const CLI::Option* option_named_in(const CLI::App& app, std::string_view message) {
  std::string_view name = message.substr(0, message.find_first_of(": "));
  while (!name.empty() && name.front() == '-') name.remove_prefix(1);
  for (const CLI::Option* o : app.get_options()) {
    const std::vector<std::string>& l = o->get_lnames();
    const std::vector<std::string>& s = o->get_snames();
    if (std::find(l.begin(), l.end(), name) != l.end() ||
        std::find(s.begin(), s.end(), name) != s.end())
      return o;
  }
  return nullptr;
}

}  // namespace

void check_leftover_arguments(const CLI::App& rlx_app, const CLI::App* command) {
  // Before the command name rlx takes only its global options and the name itself.
  if (std::vector<std::string> extra = leftovers(rlx_app); !extra.empty()) {
    const std::string& arg = extra.front();
    if (looks_like_option(arg))
      throw UsageError(fmt::format("unknown option '{}'", arg), usage_hint(""));
    throw UsageError(fmt::format("unknown command '{}'", arg), unknown_command_hint(rlx_app, arg));
  }
  if (!command) return;
  std::vector<std::string> extra = leftovers(*command);
  if (extra.empty()) return;
  const std::string& arg = extra.front();
  const std::string name = command_line_name(command);
  if (arg.starts_with("--")) {
    const std::string option = arg.substr(2, arg.find('=') - 2);  // --taget=cpu names --taget
    throw UsageError(fmt::format("unknown option '--{}' for {}", option, name),
                     unknown_option_hint(*command, option));
  }
  if (looks_like_option(arg))  // -x, or -xVALUE: the letter is what is unknown
    throw UsageError(fmt::format("unknown option '{}' for {}", arg.substr(0, 2), name),
                     hint_for(command));
  throw UsageError(fmt::format("unexpected argument '{}' for {}", arg, name), hint_for(command));
}

void throw_usage_error(const CLI::ParseError& error, const CLI::App& rlx_app,
                       const CLI::App* command) {
  const CLI::App& app = command ? *command : rlx_app;
  const std::string hint = hint_for(command);
  if (dynamic_cast<const CLI::RequiredError*>(&error)) {
    // CLI11 checks in declaration order and stops at the first missing one; so does this.
    for (const CLI::Option* o : app.get_options())
      if (o->get_required() && o->count() == 0)
        throw UsageError(
            fmt::format("{} needs {}", command_line_name(command), option_display_name(*o)), hint);
  }
  if (dynamic_cast<const CLI::ValidationError*>(&error))
    throw UsageError(error.what(), hint);  // options.cpp's own words, after the option's name
  const CLI::Option* option = option_named_in(app, error.what());
  if (!option && command) option = option_named_in(rlx_app, error.what());
  if (option && dynamic_cast<const CLI::ArgumentMismatch*>(&error)) {
    const std::string name = option->get_name();
    if (option->count() > 1)
      throw UsageError(fmt::format("option {} is given more than once", name), hint);
    if (option->get_expected_max() == 0)
      throw UsageError(fmt::format("option {} takes no value", name), hint);
    throw UsageError(fmt::format("option {} needs a value ({})", name, option->get_type_name()),
                     hint);
  }
  throw UsageError(fmt::format("{} ({})", error.what(), command_line_name(command)), hint);
}

}  // namespace rlx::cli
