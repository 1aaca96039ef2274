// The framing shared by the probe helper's report and the probe cache's files, and the report's
// reading. The helper may die at any byte, so reading stops at the first incomplete record and
// keeps what came before it (the last step the plugin started).
#include <charconv>

#include "probe.h"

namespace rlx::registry::detail {

std::string encode_record(std::string_view tag, std::string_view value) {
  std::string out;
  out.reserve(tag.size() + value.size() + 24);
  out.append(tag).append(" ").append(std::to_string(value.size())).append("\n");
  out.append(value).append("\n");
  return out;
}

std::vector<std::pair<std::string, std::string>> decode_records(std::string_view bytes,
                                                                std::string& error) {
  std::vector<std::pair<std::string, std::string>> out;
  error.clear();
  while (!bytes.empty()) {
    const size_t space = bytes.find(' ');
    const size_t newline = bytes.find('\n');
    if (space == std::string_view::npos || newline == std::string_view::npos || space > newline) {
      error = "a record header is cut off or malformed";
      break;
    }
    size_t length = 0;
    const char* first = bytes.data() + space + 1;
    const char* last = bytes.data() + newline;
    auto [end, ec] = std::from_chars(first, last, length);
    if (ec != std::errc() || end != last) {
      error = "a record length is not a number";
      break;
    }
    const size_t body = newline + 1;
    if (bytes.size() - body < length + 1 || bytes[body + length] != '\n') {
      error = "a record is cut off";
      break;
    }
    out.emplace_back(std::string(bytes.substr(0, space)), std::string(bytes.substr(body, length)));
    bytes.remove_prefix(body + length + 1);
  }
  return out;
}

std::optional<PluginStatus> status_named(std::string_view name) {
  for (PluginStatus s :
       {PluginStatus::kAvailable, PluginStatus::kCodegenOnly, PluginStatus::kUnavailable,
        PluginStatus::kIncompatible, PluginStatus::kBroken, PluginStatus::kShadowed})
    if (status_name(s) == name) return s;
  return std::nullopt;
}

namespace {

std::optional<LoadStage> stage_numbered(std::string_view text) {
  int n = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < 0 || n >= kLoadStageCount)
    return std::nullopt;
  return static_cast<LoadStage>(n);
}

}  // namespace

ProbeReport parse_report(std::string_view bytes) {
  ProbeReport r;
  bool have_status = false;
  for (auto& [tag, value] : decode_records(bytes, r.error)) {
    if (tag == "stage") {
      r.last_stage = stage_numbered(value);
      if (!r.last_stage) r.error = "an unknown step \"" + value + "\"";
    } else if (tag == "status") {
      auto s = status_named(value);
      have_status = s.has_value();
      if (s)
        r.status = *s;
      else
        r.error = "an unknown status \"" + value + "\"";
    } else if (tag == "abi") {
      r.abi = value;
    } else if (tag == "version") {
      r.version = value;
    } else if (tag == "detail") {
      r.detail = value;
    } else if (tag == "end") {
      r.complete = have_status;
    } else {
      r.error = "an unknown record \"" + tag + "\"";
    }
    if (!r.error.empty()) break;
  }
  if (!r.error.empty()) r.complete = false;
  return r;
}

}  // namespace rlx::registry::detail
