// Reads and validates a plugin manifest (<name>.toml). Validation is strict about the keys the
// registry relies on and ignores unknown keys, so a manifest written for a newer minor ABI still
// lists on an older rlx.
#include <fmt/format.h>
#include <toml++/toml.h>

#include <cctype>
#include <sstream>

#include "internal.h"
#include "rlx/core/error.h"

namespace rlx::registry {
namespace {

// Thrown inside this file only; parse_manifest() turns it into the returned reason.
struct Invalid {
  std::string reason;
};

[[noreturn]] void invalid(std::string reason) {
  throw Invalid{std::move(reason)};
}

std::string_view type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    default:
      return "nothing";
  }
}

const toml::table* get_table(const toml::table& root, std::string_view key, bool required) {
  const toml::node* n = root.get(key);
  if (!n) {
    if (required) invalid(fmt::format("missing [{}] table", key));
    return nullptr;
  }
  if (!n->is_table()) invalid(fmt::format("[{}] must be a table, got {}", key, type_name(*n)));
  return n->as_table();
}

std::optional<std::string> get_string(const toml::table& t, std::string_view table,
                                      std::string_view key, bool required) {
  const toml::node* n = t.get(key);
  if (!n) {
    if (required) invalid(fmt::format("[{}] {} is required", table, key));
    return std::nullopt;
  }
  if (!n->is_string())
    invalid(fmt::format("[{}] {} must be a string, got {}", table, key, type_name(*n)));
  std::string value = n->as_string()->get();
  if (required && value.empty()) invalid(fmt::format("[{}] {} must not be empty", table, key));
  return value;
}

std::vector<std::string> get_string_array(const toml::table& t, std::string_view table,
                                          std::string_view key) {
  std::vector<std::string> out;
  const toml::node* n = t.get(key);
  if (!n) return out;
  if (!n->is_array())
    invalid(fmt::format("[{}] {} must be an array of strings, got {}", table, key, type_name(*n)));
  for (const toml::node& item : *n->as_array()) {
    if (!item.is_string())
      invalid(fmt::format("[{}] {} must be an array of strings, found {}", table, key,
                          type_name(item)));
    out.push_back(item.as_string()->get());
  }
  return out;
}

// Capabilities are informational, so any TOML value is kept as display text.
std::string display(const toml::node& n) {
  if (const auto* s = n.as_string()) return s->get();
  if (const auto* i = n.as_integer()) return std::to_string(i->get());
  if (const auto* f = n.as_floating_point()) return fmt::format("{}", f->get());
  if (const auto* b = n.as_boolean()) return b->get() ? "true" : "false";
  if (const auto* a = n.as_array()) {
    std::string out = "[";
    for (size_t i = 0; i < a->size(); ++i) out += (i ? ", " : "") + display(*a->get(i));
    return out + "]";
  }
  std::ostringstream os;
  n.visit([&](const auto& v) { os << v; });  // tables and dates: TOML's own spelling
  return os.str();
}

// Names become CLI arguments (--target <name>) and file names, so keep them plain.
bool valid_name(const std::string& s) {
  if (s.empty() || !std::isalnum(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
      return false;
  return true;
}

bool valid_abi(const std::string& s) {
  size_t dot = s.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == s.size()) return false;
  for (size_t i = 0; i < s.size(); ++i)
    if (i != dot && !std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

Manifest validate(const toml::table& root) {
  Manifest m;
  const toml::table& plugin = *get_table(root, "plugin", true);
  m.name = *get_string(plugin, "plugin", "name", true);
  if (!valid_name(m.name))
    invalid(fmt::format(
        "[plugin] name must start with a letter or digit and contain only letters, digits, "
        "'_', '-' and '.', got \"{}\"",
        m.name));
  m.kind = *get_string(plugin, "plugin", "kind", true);
  if (m.kind != "target" && m.kind != "importer")
    invalid(fmt::format("[plugin] kind must be \"target\" or \"importer\", got \"{}\"", m.kind));
  m.version = *get_string(plugin, "plugin", "version", true);
  m.abi = *get_string(plugin, "plugin", "abi", true);
  if (!valid_abi(m.abi))
    invalid(fmt::format("[plugin] abi must be \"major.minor\" (e.g. \"1.0\"), got \"{}\"", m.abi));
  m.library = *get_string(plugin, "plugin", "library", true);
  m.description = get_string(plugin, "plugin", "description", false).value_or("");

  if (const toml::table* req = get_table(root, "requires", false)) {
    m.requires_libraries = get_string_array(*req, "requires", "libraries");
    m.platforms = get_string_array(*req, "requires", "platforms");
  }
  // rlx opens these itself, in its own process, to see whether they exist: a name the system
  // loader looks up, never a path to any file a manifest likes.
  for (const std::string& lib : m.requires_libraries)
    if (lib.empty() || lib.find('/') != std::string::npos)
      invalid(
          fmt::format("[requires] libraries entries must be library names the system loader "
                      "finds (\"libcuda.so.1\"), not paths, got \"{}\"",
                      lib));
  if (const toml::table* caps = get_table(root, "capabilities", false)) {
    for (const auto& [key, value] : *caps) m.capabilities[std::string(key.str())] = display(value);
  }
  const toml::table* importer = get_table(root, "importer", false);
  if (importer) {
    m.extensions = get_string_array(*importer, "importer", "extensions");
    m.magic = get_string_array(*importer, "importer", "magic");
    m.folders = get_string_array(*importer, "importer", "folders");
  }
  if (m.kind == "importer" && m.extensions.empty() && m.magic.empty() && m.folders.empty())
    invalid("[importer] must say which files it reads: extensions = [\".onnx\"], magic = "
            "[\"GGUF\"] or folders = [\"config.json\"]");
  for (const std::string& ext : m.extensions)
    if (ext.size() < 2 || ext[0] != '.')
      invalid(fmt::format("[importer] extensions entries must start with '.', got \"{}\"", ext));
  return m;
}

}  // namespace

namespace detail {

std::variant<Manifest, std::string> parse_manifest(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::string("cannot read the file");
  toml::table root;
  try {
    root = toml::parse_file(path.string());
  } catch (const toml::parse_error& e) {
    const toml::source_position& at = e.source().begin;
    return fmt::format("TOML syntax error at {}:{}: {}", at.line, at.column, e.description());
  }
  try {
    return validate(root);
  } catch (const Invalid& e) {
    return e.reason;
  }
}

}  // namespace detail

Manifest read_manifest(const std::filesystem::path& path) {
  auto result = detail::parse_manifest(path);
  if (auto* reason = std::get_if<std::string>(&result))
    throw_user_error(fmt::format("{}: {}", path.string(), *reason));
  return std::get<Manifest>(std::move(result));
}

}  // namespace rlx::registry
