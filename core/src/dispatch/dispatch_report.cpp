#include <fmt/format.h>

#include "rlx/core/dispatch.h"
#include "rlx/core/json.h"

namespace rlx {
namespace {

// "f32[B,S,384]"; a node with several results lists them all.
std::string types_of(const std::vector<NamedType>& values) {
  std::string out;
  for (const NamedType& v : values) out += (out.empty() ? "" : ", ") + v.type.str();
  return out;
}

// {"name": "x", "dtype": "f32", "shape": [2, "S"]}: sizes as numbers, symbols as strings, so a
// reader never has to parse the type text.
std::string typed_json(const NamedType& v) {
  std::string shape;
  for (const Dim& d : v.type.shape)
    shape += (shape.empty() ? "" : ", ") +
             (d.is_static() ? std::to_string(d.value) : json::json_quote(d.sym));
  return fmt::format("{{\"name\": {}, \"dtype\": {}, \"shape\": [{}]}}", json::json_quote(v.name),
                     json::json_quote(dtype_name(v.type.dtype)), shape);
}

std::string typed_json_list(const std::vector<NamedType>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + typed_json(values[i]);
  return out + "]";
}

std::string json_strings(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + json::json_quote(items[i]);
  return out + "]";
}

// The precision policy's changes come first: they explain the f16/bf16 dtypes and the converts
// in the node list below.
std::string precision_text(const PrecisionReport& p) {
  std::string out;
  if (!p.mode.empty() && p.mode != "f32") {
    out = fmt::format("precision {}: {} ops narrowed, {} weights stored narrow, {} converts\n",
                      p.mode, p.narrowed.size(), p.weights.size(), p.casts.size());
    for (const std::string& n : p.narrowed) out += "  narrowed  " + n + "\n";
    for (const std::string& w : p.weights) out += "  weight    " + w + "\n";
    for (const std::string& c : p.casts) out += "  convert   " + c + "\n";
  }
  if (!p.tf32.empty()) {
    out += fmt::format("--allow-tf32: {} f32 products may round their operands to TF32 where the "
                       "target has TF32 tensor cores (cuda); elsewhere they compute in f32\n",
                       p.tf32.size());
    for (const std::string& n : p.tf32) out += "  tf32      " + n + "\n";
  }
  return out;
}

std::string precision_json(const PrecisionReport& p) {
  std::string out;
  if (!p.mode.empty() && p.mode != "f32")
    out = fmt::format(
        ", \"precision\": {{\"mode\": {}, \"narrowed\": {}, \"weights\": {}, \"converts\": {}}}",
        json::json_quote(p.mode), json_strings(p.narrowed), json_strings(p.weights),
        json_strings(p.casts));
  if (!p.tf32.empty()) out += fmt::format(", \"allow_tf32\": {}", json_strings(p.tf32));
  return out;
}

}  // namespace

std::string DispatchReport::to_text(bool verbose) const {
  std::string out = precision_text(precision);
  out += fmt::format("dispatch for target '{}': {} nodes\n", target, entries.size());
  size_t wn = 1;
  for (const auto* list : {&inputs, &outputs})
    for (const NamedType& v : *list) wn = std::max(wn, v.name.size() + 1);
  for (const NamedType& v : inputs)
    out += fmt::format("  input   {:<{}}  {}\n", "%" + v.name, wn, v.type.str());
  for (const NamedType& v : outputs)
    out += fmt::format("  output  {:<{}}  {}\n", "%" + v.name, wn, v.type.str());
  size_t wv = 5, wo = 2, wd = 6, wt = 6;
  for (auto& e : entries) {
    wv = std::max(wv, e.value.size() + 1);
    wo = std::max(wo, e.op.size());
    wd = std::max(wd, e.dtypes.size());
    wt = std::max(wt, types_of(e.outputs).size());
  }
  out += fmt::format("  {:<{}}  {:<{}}  {:<{}}  {:<{}}  {:<10} {}\n", "value", wv, "op", wo,
                     "dtypes", wd, "output", wt, "path", "detail");
  for (auto& e : entries) {
    std::string detail;
    if (e.path == LoweringPath::kRewritten) detail = "via " + e.detail + "; ";
    if (e.path == LoweringPath::kNative && !e.detail.empty()) detail = e.detail;
    if (e.path != LoweringPath::kNative) detail += fmt::format("{} primitives", e.primitives);
    for (const auto& note : e.notes) detail += "; " + note;
    if (!e.loc.empty()) detail += fmt::format("{}loc '{}'", detail.empty() ? "" : "; ", e.loc);
    out += fmt::format("  {:<{}}  {:<{}}  {:<{}}  {:<{}}  {:<10} {}\n", "%" + e.value, wv, e.op, wo,
                       e.dtypes, wd, types_of(e.outputs), wt, path_name(e.path), detail);
    if (verbose || e.path == LoweringPath::kRewritten)
      for (auto& r : e.refused) out += fmt::format("      refused {}\n", r);
  }
  return out;
}

std::string DispatchReport::to_json() const {
  std::string out = "{\"target\": " + json::json_quote(target) +
                    ", \"inputs\": " + typed_json_list(inputs) +
                    ", \"outputs\": " + typed_json_list(outputs) + precision_json(precision) +
                    ", \"nodes\": [";
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    out += fmt::format(
        "{}{{\"value\": {}, \"op\": {}, \"loc\": {}, \"dtypes\": {}, \"outputs\": {}, "
        "\"path\": {}, \"rewrite\": {}, \"kernel\": {}, \"primitives\": {}, \"notes\": {}, "
        "\"refused\": [",
        i ? ", " : "", json::json_quote(e.value), json::json_quote(e.op), json::json_quote(e.loc),
        json::json_quote(e.dtypes), typed_json_list(e.outputs), json::json_quote(path_name(e.path)),
        json::json_quote(e.path == LoweringPath::kNative ? "" : e.detail),
        json::json_quote(e.path == LoweringPath::kNative ? e.detail : ""), e.primitives,
        json_strings(e.notes));
    for (size_t k = 0; k < e.refused.size(); ++k)
      out += (k ? ", " : "") + json::json_quote(e.refused[k]);
    out += "]}";
  }
  return out + "]}";
}

}  // namespace rlx
