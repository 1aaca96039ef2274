#include <fmt/format.h>

#include "rlx/core/json.h"
#include "rlx/core/dispatch.h"

namespace rlx {

std::string DispatchReport::to_text(bool verbose) const {
  std::string out = fmt::format("dispatch for target '{}': {} nodes\n", target, entries.size());
  size_t wv = 5, wo = 2, wd = 6;
  for (auto& e : entries) {
    wv = std::max(wv, e.value.size() + 1);
    wo = std::max(wo, e.op.size());
    wd = std::max(wd, e.dtypes.size());
  }
  out += fmt::format("  {:<{}}  {:<{}}  {:<{}}  {:<10} {}\n", "value", wv, "op", wo, "dtypes", wd,
                     "path", "detail");
  for (auto& e : entries) {
    std::string detail;
    if (e.path == LoweringPath::kRewritten) detail = "via " + e.detail + "; ";
    if (e.path != LoweringPath::kNative) detail += fmt::format("{} primitives", e.primitives);
    if (!e.loc.empty()) detail += fmt::format("{}loc '{}'", detail.empty() ? "" : "; ", e.loc);
    out += fmt::format("  {:<{}}  {:<{}}  {:<{}}  {:<10} {}\n", "%" + e.value, wv, e.op, wo,
                       e.dtypes, wd, path_name(e.path), detail);
    if (verbose || e.path == LoweringPath::kRewritten)
      for (auto& r : e.refused) out += fmt::format("      refused {}\n", r);
  }
  return out;
}

std::string DispatchReport::to_json() const {
  std::string out = "{\"target\": " + json::json_quote(target) + ", \"nodes\": [";
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    out += fmt::format("{}{{\"value\": {}, \"op\": {}, \"loc\": {}, \"dtypes\": {}, \"path\": {}, "
                       "\"rewrite\": {}, \"primitives\": {}, \"refused\": [",
                       i ? ", " : "", json::json_quote(e.value), json::json_quote(e.op),
                       json::json_quote(e.loc), json::json_quote(e.dtypes),
                       json::json_quote(path_name(e.path)), json::json_quote(e.detail), e.primitives);
    for (size_t k = 0; k < e.refused.size(); ++k)
      out += (k ? ", " : "") + json::json_quote(e.refused[k]);
    out += "]}";
  }
  return out + "]}";
}

}  // namespace rlx
