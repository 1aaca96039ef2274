// A small command-line parser of our own (no dependency): each subcommand declares its options
// in a CommandSpec, from which both parsing and --help text are derived, so the two never
// disagree.
#pragma once
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace rlx::cli {

struct OptionSpec {
  std::string name;        // long name without dashes: "target"
  char short_name = 0;     // 'o' for -o; 0 when there is none
  std::string value_name;  // "DIR" for an option taking a value; empty for a flag
  std::string help;
  bool repeatable = false;  // may be given several times (--bind, --plugin-path)
};

struct CommandSpec {
  std::string name;                      // "run"; what follows `rlx`
  std::string summary;                   // one line for `rlx --help`
  std::string usage;                     // arguments after the command name, for the usage line
  std::string description;               // paragraph(s) shown by --help
  std::vector<std::string> positionals;  // names of the positional arguments, in order
  std::vector<OptionSpec> options;
};

// Anything wrong that the user can fix: exit code 1, message plus an optional hint line.
class CliError : public std::runtime_error {
 public:
  CliError(std::string message, std::string hint = {})
      : std::runtime_error(std::move(message)), hint_(std::move(hint)) {}
  const std::string& hint() const { return hint_; }

 private:
  std::string hint_;
};

// A malformed command line; the hint points at the command's --help.
class UsageError : public CliError {
 public:
  using CliError::CliError;
};

class Args {
 public:
  bool flag(std::string_view name) const { return values_.count(std::string(name)) != 0; }
  // The value of a single-valued option, if given.
  std::optional<std::string> value(std::string_view name) const;
  // Every value of a repeatable option, in command-line order.
  std::vector<std::string> values(std::string_view name) const;
  // The value of an option the command cannot do without; a usage error names it otherwise.
  std::string required(std::string_view name) const;
  // Positional argument i, named by the spec in the error when it is missing.
  std::string positional(size_t i) const;

 private:
  friend Args parse_args(const CommandSpec& spec, const std::vector<std::string>& argv);
  const CommandSpec* spec_ = nullptr;
  std::map<std::string, std::vector<std::string>> values_;  // flags hold one empty string
  std::vector<std::string> positionals_;
};

// Parses the arguments that follow the command name. Accepts --name VALUE, --name=VALUE,
// -o VALUE, -oVALUE, and `--` to end options. Throws UsageError.
Args parse_args(const CommandSpec& spec, const std::vector<std::string>& argv);

// The --help text of a command: usage line, description, options.
std::string help_text(const CommandSpec& spec);

// "run `rlx run --help` to see its options": the hint of every usage error of this command.
std::string usage_hint(const CommandSpec& spec);

}  // namespace rlx::cli
