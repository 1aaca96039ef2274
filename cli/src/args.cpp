#include "args.h"

#include <fmt/format.h>

#include <algorithm>

namespace rlx::cli {
namespace {

std::string command_line_name(const CommandSpec& spec) {
  return spec.name.empty() ? "rlx" : "rlx " + spec.name;
}

std::string display_name(const OptionSpec& o) {
  std::string s = o.short_name ? fmt::format("-{}, --{}", o.short_name, o.name) : "--" + o.name;
  if (!o.value_name.empty()) s += " " + o.value_name;
  return s;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// A typo such as --taget should point at --target rather than only at --help.
std::string unknown_option_hint(const CommandSpec& spec, std::string_view name) {
  const OptionSpec* best = nullptr;
  size_t best_d = 3;  // farther than two edits is not a typo
  for (const OptionSpec& o : spec.options) {
    size_t d = edit_distance(name, o.name);
    if (d < best_d) best_d = d, best = &o;
  }
  if (best) return fmt::format("did you mean --{}? {}", best->name, usage_hint(spec));
  return usage_hint(spec);
}

}  // namespace

std::string usage_hint(const CommandSpec& spec) {
  return fmt::format("run `{} --help` to see its usage", command_line_name(spec));
}

std::optional<std::string> Args::value(std::string_view name) const {
  auto it = values_.find(std::string(name));
  if (it == values_.end()) return std::nullopt;
  return it->second.back();
}

std::vector<std::string> Args::values(std::string_view name) const {
  auto it = values_.find(std::string(name));
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

std::string Args::required(std::string_view name) const {
  if (auto v = value(name)) return *v;
  std::string shown = "--" + std::string(name);
  for (const OptionSpec& o : spec_->options)
    if (o.name == name) shown = display_name(o);
  throw UsageError(fmt::format("{} needs {}", command_line_name(*spec_), shown),
                   usage_hint(*spec_));
}

std::string Args::positional(size_t i) const {
  if (i < positionals_.size()) return positionals_[i];
  std::string name = i < spec_->positionals.size() ? spec_->positionals[i] : "an argument";
  throw UsageError(fmt::format("{} needs {}", command_line_name(*spec_), name), usage_hint(*spec_));
}

Args parse_args(const CommandSpec& spec, const std::vector<std::string>& argv) {
  Args args;
  args.spec_ = &spec;
  auto store = [&](const OptionSpec& o, std::string value) {
    auto& slot = args.values_[o.name];
    if (!slot.empty() && !o.repeatable)
      throw UsageError(fmt::format("option --{} is given more than once", o.name),
                       usage_hint(spec));
    slot.push_back(std::move(value));
  };

  bool options_done = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& tok = argv[i];
    if (options_done || tok.size() < 2 || tok[0] != '-') {
      if (args.positionals_.size() >= spec.positionals.size())
        throw UsageError(
            fmt::format("unexpected argument '{}' for {}", tok, command_line_name(spec)),
            usage_hint(spec));
      args.positionals_.push_back(tok);
      continue;
    }
    if (tok == "--") {
      options_done = true;
      continue;
    }

    const OptionSpec* opt = nullptr;
    std::optional<std::string> inline_value;
    if (tok.rfind("--", 0) == 0) {
      std::string name = tok.substr(2);
      if (size_t eq = name.find('='); eq != std::string::npos) {
        inline_value = name.substr(eq + 1);
        name.resize(eq);
      }
      for (const OptionSpec& o : spec.options)
        if (o.name == name) opt = &o;
      if (!opt)
        throw UsageError(fmt::format("unknown option '--{}' for {}", name, command_line_name(spec)),
                         unknown_option_hint(spec, name));
    } else {
      for (const OptionSpec& o : spec.options)
        if (o.short_name == tok[1]) opt = &o;
      if (!opt)
        throw UsageError(
            fmt::format("unknown option '{}' for {}", tok.substr(0, 2), command_line_name(spec)),
            usage_hint(spec));
      if (tok.size() > 2) {
        if (opt->value_name.empty())
          throw UsageError(fmt::format("unknown option '{}' for {}", tok, command_line_name(spec)),
                           usage_hint(spec));
        inline_value = tok.substr(tok[2] == '=' ? 3 : 2);
      }
    }

    if (opt->value_name.empty()) {
      if (inline_value)
        throw UsageError(fmt::format("option --{} takes no value", opt->name), usage_hint(spec));
      store(*opt, "");
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= argv.size())
        throw UsageError(fmt::format("option --{} needs a value ({})", opt->name, opt->value_name),
                         usage_hint(spec));
      inline_value = argv[++i];
    }
    store(*opt, *inline_value);
  }
  return args;
}

std::string help_text(const CommandSpec& spec) {
  std::string out = fmt::format("usage: {}{}{}\n", command_line_name(spec),
                                spec.usage.empty() ? "" : " ", spec.usage);
  if (!spec.description.empty()) out += "\n" + spec.description + "\n";
  if (!spec.options.empty()) {
    size_t width = 0;
    for (const OptionSpec& o : spec.options) width = std::max(width, display_name(o).size());
    out += "\noptions:\n";
    for (const OptionSpec& o : spec.options) {
      std::string help = o.help;
      if (o.repeatable) help += " (repeatable)";
      out += fmt::format("  {:<{}}  {}\n", display_name(o), width, help);
    }
  }
  return out;
}

}  // namespace rlx::cli
