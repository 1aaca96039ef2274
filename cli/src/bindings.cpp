#include "bindings.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>

#include "errors.h"
#include "options.h"
#include "rlx/core/error.h"

namespace rlx::cli {

void add_bind_option(CLI::App& app, std::vector<std::string>& into, const std::string& help) {
  add_repeatable(app, "--bind", "NAME=SIZE", into, help);
}

Bindings parse_bind_specs(const std::vector<std::string>& specs, int64_t min_size) {
  Bindings sizes;
  std::map<std::string, std::string> given;  // name -> its first spec, for the message
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    const std::string name = spec.substr(0, eq);
    const std::string text = eq == std::string::npos ? "" : spec.substr(eq + 1);
    int64_t value = -1;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (name.empty() || text.empty() || ec != std::errc() || end != text.data() + text.size() ||
        value < min_size)
      throw UsageError(
          fmt::format("--bind '{}' is not NAME=SIZE with a size >= {}", spec, min_size),
          "write e.g. --bind batch=4");
    if (!sizes.emplace(name, value).second)
      throw UsageError(
          fmt::format("--bind: symbol '{}' is bound twice ({}, then {})", name, given[name], spec),
          "give each symbol one --bind");
    given.emplace(name, spec);
  }
  return sizes;
}

ImportOptions import_options_for(const Bindings& sizes) {
  ImportOptions options;
  options.dim_values = sizes;
  return options;
}

namespace {

std::vector<std::string> fixed_dims(const Model& model) {
  std::vector<std::string> names;
  auto it = model.metadata.find(kFixedDimsKey);
  if (it == model.metadata.end()) return names;
  const std::string& list = it->second;
  for (size_t begin = 0; begin < list.size();) {
    size_t comma = std::min(list.find(',', begin), list.size());
    const std::string item = list.substr(begin, comma - begin);
    names.push_back(item.substr(0, item.find('=')));
    begin = comma + 1;
  }
  return names;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

Bindings sizes_for_graph(const Bindings& sizes, const Graph& graph, const Model& model,
                         std::string (*given_as)(const std::string& name)) {
  const std::vector<std::string> symbols = graph.symbols();
  const std::vector<std::string> fixed = fixed_dims(model);
  std::string all;
  for (const auto& s : symbols) all += (all.empty() ? "" : ", ") + s;
  Bindings remaining;
  for (const auto& [name, size] : sizes) {
    if (contains(symbols, name)) {
      remaining.emplace(name, size);
      continue;
    }
    if (contains(fixed, name)) continue;  // the importer made it static with this size
    throw CliError(
        fmt::format("{}: the model has no symbolic dim '{}' ({})", given_as(name), name,
                    symbols.empty() ? "its input shapes are all static" : "its symbols: " + all),
        "give sizes only for the symbols of the model's input shapes");
  }
  return remaining;
}

std::string unsized_symbols(const Bindings& sizes, const Graph& graph) {
  std::string missing;
  for (const auto& s : graph.symbols())
    if (!sizes.count(s)) missing += (missing.empty() ? "" : ", ") + s;
  return missing;
}

}  // namespace rlx::cli
