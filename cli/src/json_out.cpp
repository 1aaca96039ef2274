#include "json_out.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace rlx::cli {
namespace {

bool is_scalar(const json::Value& v) {
  return !v.as_array() && !v.as_object();
}

void write(const json::Value& v, int indent, std::string& out);

std::string scalar_text(const json::Value& v) {
  if (v.is_null()) return "null";
  if (const bool* b = v.as_bool()) return *b ? "true" : "false";
  if (const json::Number* n = v.as_number()) return n->raw;
  return json::json_quote(*v.as_string());
}

// One line for containers of scalars ("shape": [2, 3]) keeps listings readable, and a row of
// numbers (an embedding, a tensor's last axis) is one line however long: a tensor prints one row
// per line, not one number per line.
std::optional<std::string> inline_text(const json::Value& v) {
  std::string s;
  bool numbers = false;
  if (const json::Array* a = v.as_array()) {
    numbers = std::all_of(a->begin(), a->end(),
                          [](const json::Value& x) { return x.as_number() != nullptr; });
    s = "[";
    for (size_t i = 0; i < a->size(); ++i) {
      if (!is_scalar((*a)[i])) return std::nullopt;
      s += (i ? ", " : "") + scalar_text((*a)[i]);
    }
    s += "]";
  } else if (const json::Object* o = v.as_object()) {
    s = "{";
    for (size_t i = 0; i < o->size(); ++i) {
      if (!is_scalar((*o)[i].second)) return std::nullopt;
      s += (i ? ", " : "") + json::json_quote((*o)[i].first) + ": " + scalar_text((*o)[i].second);
    }
    s += "}";
  } else {
    return scalar_text(v);
  }
  if (s.size() > 80 && !numbers) return std::nullopt;
  return s;
}

void write(const json::Value& v, int indent, std::string& out) {
  if (auto s = inline_text(v)) {
    out += *s;
    return;
  }
  std::string pad(indent + 2, ' ');
  if (const json::Array* a = v.as_array()) {
    out += "[\n";
    for (size_t i = 0; i < a->size(); ++i) {
      out += pad;
      write((*a)[i], indent + 2, out);
      out += i + 1 < a->size() ? ",\n" : "\n";
    }
    out += std::string(indent, ' ') + "]";
    return;
  }
  const json::Object& o = *v.as_object();
  out += "{\n";
  for (size_t i = 0; i < o.size(); ++i) {
    out += pad + json::json_quote(o[i].first) + ": ";
    write(o[i].second, indent + 2, out);
    out += i + 1 < o.size() ? ",\n" : "\n";
  }
  out += std::string(indent, ' ') + "}";
}

void write_line(const json::Value& v, std::string& out) {
  if (const json::Array* a = v.as_array()) {
    out += "[";
    for (size_t i = 0; i < a->size(); ++i) {
      out += i ? ", " : "";
      write_line((*a)[i], out);
    }
    out += "]";
  } else if (const json::Object* o = v.as_object()) {
    out += "{";
    for (size_t i = 0; i < o->size(); ++i) {
      out += (i ? ", " : "") + json::json_quote((*o)[i].first) + ": ";
      write_line((*o)[i].second, out);
    }
    out += "}";
  } else {
    out += scalar_text(v);
  }
}

}  // namespace

json::Value jstring(std::string_view s) {
  return json::Value{std::string(s)};
}

json::Value jint(int64_t v) {
  return json::Value{json::Number{static_cast<double>(v), std::to_string(v)}};
}

json::Value jnumber(double v) {
  return json::Value{json::Number{v, fmt::format("{}", v)}};
}

json::Value jms(double ms) {
  return json::Value{json::Number{ms, fmt::format("{:.3f}", ms)}};
}

json::Value jnull() {
  return json::Value{nullptr};
}

std::string to_json_text(const json::Value& v) {
  std::string out;
  write(v, 0, out);
  return out;
}

std::string to_json_line(const json::Value& v) {
  std::string out;
  write_line(v, out);
  return out;
}

}  // namespace rlx::cli
