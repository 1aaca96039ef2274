// `rlx --list-targets`: every plugin the registry found, with its status and reason. Listing is
// how users diagnose a broken install, so it never fails because of a plugin: bad plugins are
// rows with a status, unreadable manifests are problems, and the exit code stays 0.
#include <fmt/format.h>

#include <cstdio>

#include "commands.h"
#include "json_out.h"
#include "model.h"
#include "options.h"
#include "rlx/core/device_info.h"
#include "table.h"

namespace rlx::cli {
namespace {

using registry::PluginRecord;
using registry::PluginStatus;

std::string coverage_text(const PluginRecord& p) {
  if (!p.legality) return "(not evaluated: the plugin did not load)";
  auto c = p.legality->counts();
  return fmt::format("native {}, shared-ir {}, rewritten {}, illegal {}", c.native, c.shared_ir,
                     c.rewritten, c.illegal);
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : std::string(sep)) + s;
  return out;
}

// What an available target says about its device; nullopt when it says nothing.
std::optional<DeviceInfo> device_of(const PluginRecord& p) {
  if (p.kind != "target" || p.status != PluginStatus::kAvailable || !p.target) return std::nullopt;
  return device_info(*p.target);
}

std::string device_text(const PluginRecord& p) {
  std::optional<DeviceInfo> d = device_of(p);
  if (!d) return "-";
  if (!d->software) return d->name;
  return fmt::format("{} (software: {})", d->name, d->software_name);
}

// The reason when there is one, else what the plugin is: an available row has no "why".
std::string detail_or_description(const PluginRecord& p) {
  return p.detail.empty() ? p.description : p.detail;
}

std::string section(const registry::Registry& reg, const std::string& kind, bool verbose) {
  std::vector<std::vector<std::string>> rows;
  const bool importers = kind == "importer";
  if (importers)
    rows.push_back({"importer", "status", "version", "ABI", "extensions", "detail"});
  else
    rows.push_back({"target", "status", "version", "ABI", "device", "detail"});
  std::string details;
  for (const PluginRecord& p : reg.plugins()) {
    if (p.kind != kind || p.status == PluginStatus::kShadowed) continue;
    std::vector<std::string> row = {p.name, std::string(registry::status_name(p.status)), p.version,
                                    p.abi};
    if (importers)
      row.push_back(p.extensions.empty() ? "-" : join(p.extensions, " "));
    else
      row.push_back(device_text(p));
    row.push_back(detail_or_description(p));
    rows.push_back(std::move(row));
  }
  if (rows.size() == 1) return "  (none installed)\n";
  std::string out = format_table(rows);
  if (!verbose) return out;
  for (const PluginRecord& p : reg.plugins()) {
    if (p.kind != kind || p.status == PluginStatus::kShadowed) continue;
    out += fmt::format("\n  {}:\n    manifest  {}\n    library   {}\n", p.name,
                       p.manifest_path.string(), p.library_path.string());
    if (kind == "target") out += fmt::format("    coverage  {}\n", coverage_text(p));
  }
  return out;
}

void print_text(const registry::Registry& reg, bool verbose) {
  std::string out = "targets:\n" + section(reg, "target", verbose);
  out += "\nimporters:\n" + section(reg, "importer", verbose);
  if (verbose) {
    out += "\nsearch order:\n";
    if (reg.search_dirs().empty()) out += "  (no plugin folder exists)\n";
    for (size_t i = 0; i < reg.search_dirs().size(); ++i)
      out += fmt::format("  {}. {}  ({})\n", i + 1, reg.search_dirs()[i].path.string(),
                         reg.search_dirs()[i].origin);
    std::vector<std::vector<std::string>> shadowed;
    for (const PluginRecord& p : reg.plugins())
      if (p.status == PluginStatus::kShadowed)
        shadowed.push_back({p.name, p.manifest_path.string(), p.detail});
    out += "\nshadowed copies:\n";
    out += shadowed.empty() ? "  (none)\n" : format_table(shadowed);
  }
  if (!reg.problems().empty()) {
    out += "\nproblems:\n";
    for (const registry::Problem& pr : reg.problems())
      out += pr.path.empty() ? fmt::format("  {}\n", pr.message)
                             : fmt::format("  {}: {}\n", pr.path.string(), pr.message);
  }
  std::fputs(out.c_str(), stdout);
}

json::Value plugin_json(const PluginRecord& p, bool verbose) {
  json::Object o = {
      {"name", jstring(p.name)},       {"status", jstring(registry::status_name(p.status))},
      {"version", jstring(p.version)}, {"abi", jstring(p.abi)},
      {"detail", jstring(p.detail)},   {"description", jstring(p.description)}};
  if (p.kind == "importer") {
    json::Array ext;
    for (const auto& e : p.extensions) ext.push_back(jstring(e));
    o.emplace_back("extensions", json::Value{std::move(ext)});
  }
  if (p.kind == "target") {
    json::Value device = jnull();
    if (std::optional<DeviceInfo> d = device_of(p))
      device = json::Value{json::Object{{"name", jstring(d->name)},
                                        {"kind", jstring(d->kind)},
                                        {"software", json::Value{d->software}},
                                        {"software_name", jstring(d->software_name)}}};
    o.emplace_back("device", std::move(device));
  }
  if (verbose) {
    o.emplace_back("manifest", jstring(p.manifest_path.string()));
    o.emplace_back("library", jstring(p.library_path.string()));
    if (p.kind == "target") {
      json::Value coverage = jnull();
      if (p.legality) {
        auto c = p.legality->counts();
        coverage = json::Value{json::Object{{"native", jint(c.native)},
                                            {"shared-ir", jint(c.shared_ir)},
                                            {"rewritten", jint(c.rewritten)},
                                            {"illegal", jint(c.illegal)}}};
      }
      o.emplace_back("coverage", std::move(coverage));
    }
  }
  return json::Value{std::move(o)};
}

}  // namespace

std::string list_targets_json(const registry::Registry& reg, bool verbose) {
  json::Array targets, importers, problems, shadowed, dirs;
  for (const PluginRecord& p : reg.plugins()) {
    if (p.status == PluginStatus::kShadowed) {
      shadowed.push_back(json::Value{json::Object{{"name", jstring(p.name)},
                                                  {"kind", jstring(p.kind)},
                                                  {"manifest", jstring(p.manifest_path.string())},
                                                  {"detail", jstring(p.detail)}}});
      continue;
    }
    (p.kind == "importer" ? importers : targets).push_back(plugin_json(p, verbose));
  }
  for (const registry::Problem& pr : reg.problems())
    problems.push_back(json::Value{
        json::Object{{"path", jstring(pr.path.string())}, {"message", jstring(pr.message)}}});
  json::Object doc = {{"targets", json::Value{std::move(targets)}},
                      {"importers", json::Value{std::move(importers)}},
                      {"problems", json::Value{std::move(problems)}}};
  if (verbose) {
    for (const registry::SearchDir& d : reg.search_dirs())
      dirs.push_back(json::Value{
          json::Object{{"path", jstring(d.path.string())}, {"origin", jstring(d.origin)}}});
    doc.emplace_back("search_dirs", json::Value{std::move(dirs)});
    doc.emplace_back("shadowed", json::Value{std::move(shadowed)});
  }
  return to_json_text(json::Value{std::move(doc)});
}

namespace {

struct ListTargetsOptions {
  bool json = false;
};

void declare_list_targets_options(CLI::App& app, ListTargetsOptions& o) {
  add_flag(app, "--json", o.json,
           "print JSON: {\"targets\": [...], \"importers\": [...], \"problems\": [...]}");
}

int list_targets_main(const ListTargetsOptions& o, const GlobalOptions& global) {
  // -v is the global --verbose: more detail, here per plugin, elsewhere where an error arose.
  const bool verbose = global.verbose;
  // Legality tables cost a pass over the op registry per target; only -v shows them.
  const registry::Registry& reg = plugin_registry(global, verbose);
  if (o.json)
    std::fputs((list_targets_json(reg, verbose) + "\n").c_str(), stdout);
  else
    print_text(reg, verbose);
  return 0;
}

}  // namespace

Command list_targets_command() {
  return make_command<ListTargetsOptions>(
      {"list-targets", "list the target and importer plugins, their status and why",
       "[-v] [--json]",
       "Lists every plugin found on the search path with its status (available, codegen-only,\n"
       "unavailable, incompatible, broken) and the reason, then the manifests and libraries that\n"
       "could not be used. Also spelled `rlx --list-targets`. Never fails because of a plugin.\n"
       "With -v: manifest and library paths, legality coverage per target, the search order and\n"
       "shadowed copies (with --json also \"manifest\", \"library\", \"coverage\", "
       "\"search_dirs\")."},
      &declare_list_targets_options, &list_targets_main);
}

}  // namespace rlx::cli
