// `rlx info MODEL [--json]`: what a model is before anything is compiled: its format and
// importer, architecture, graphs with their inputs and outputs, the symbolic dims and the options
// that size them, tokenizer, weights by dtype or block format, input limits and the rest of its
// metadata. It imports the model and stops there: no target, and weights stay mapped, unread.
#include <fmt/format.h>

#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "bindings.h"
#include "commands.h"
#include "json_out.h"
#include "model.h"
#include "model_facts.h"
#include "options.h"
#include "table.h"

namespace rlx::cli {
namespace {

struct InfoOptions {
  std::string model;
  std::vector<std::string> bind;
  bool json = false;
};

void declare_info_options(CLI::App& app, InfoOptions& o) {
  add_model_argument(app, o.model);
  add_bind_option(app, o.bind,
                  "a size for a symbolic dim the importer cannot keep symbolic (some ONNX models)");
  add_flag(app, "--json", o.json, "print the same facts as one JSON object");
}

// 656128 -> "656,128"
std::string grouped(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (n < 0 ? "-" : "") + out;
}

// Decimal units (10^3), as bench reports memory.
std::string human_bytes(int64_t bytes) {
  const char* units[] = {"bytes", "kB", "MB", "GB", "TB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  return u == 0 ? fmt::format("{} bytes", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

std::string join(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

// "past_key.0" -> {"past_key", 0}; nullopt for a name without a numeric suffix.
std::optional<std::pair<std::string, int64_t>> numbered(const std::string& name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos || dot + 1 == name.size() || dot + 10 < name.size())
    return std::nullopt;
  for (size_t i = dot + 1; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
  return std::make_pair(name.substr(0, dot), std::stoll(name.substr(dot + 1)));
}

// A decoder's per-layer cache tensors (past_key.0 .. past_key.27, all of one type) as one row,
// "past_key.{0..27}", where the numbers run without a gap; everything else one row each. The
// JSON lists every value.
std::vector<std::vector<std::string>> value_rows(
    const std::string& label, const std::vector<std::pair<std::string, TensorType>>& values) {
  std::map<std::pair<std::string, std::string>, std::vector<int64_t>> groups;
  for (const auto& [name, type] : values)
    if (auto n = numbered(name)) groups[{n->first, type.str()}].push_back(n->second);
  auto collapses = [&](const std::vector<int64_t>& numbers) {
    if (numbers.size() < 2) return false;
    for (size_t i = 0; i < numbers.size(); ++i)
      if (numbers[i] != numbers.front() + static_cast<int64_t>(i)) return false;
    return true;
  };
  std::vector<std::vector<std::string>> rows;
  std::set<std::pair<std::string, std::string>> shown;
  for (const auto& [name, type] : values) {
    std::string shown_name = name;
    if (auto n = numbered(name)) {
      const std::pair<std::string, std::string> key{n->first, type.str()};
      const std::vector<int64_t>& numbers = groups[key];
      if (collapses(numbers)) {
        if (!shown.insert(key).second) continue;
        shown_name = fmt::format("{}.{{{}..{}}}", n->first, numbers.front(), numbers.back());
      }
    }
    rows.push_back({rows.empty() ? label : "", shown_name, type.str()});
  }
  return rows;
}

std::string limit_text(const InputLimit& l) {
  return l.dim < 0 ? fmt::format("values {} to {}", l.min, l.max)
                   : fmt::format("dim {} size {} to {}", l.dim, l.min, l.max);
}

std::string to_text(const ModelFacts& f, const std::string& path) {
  std::vector<std::vector<std::string>> head = {
      {"model", path},
      {"format", f.format},
      {"importer", f.importer.empty() ? "none (rlx reads IR text itself)" : f.importer}};
  std::vector<std::string> details;
  for (const auto& [k, v] : f.architecture_details) details.push_back(k + " " + v);
  head.push_back(
      {"architecture", f.architecture + (details.empty() ? "" : " (" + join(details, "; ") + ")")});
  head.push_back({"tokenizer", f.has_tokenizer ? fmt::format("{}, {} tokens", f.tokenizer_kind,
                                                             grouped(f.tokenizer_vocab))
                                               : "none: " + f.tokenizer_note});
  int64_t tensors = 0;
  for (const WeightGroup& g : f.weights) tensors += g.tensors;
  head.push_back({"parameters", fmt::format("{} in {} tensors, {}", grouped(f.parameters), tensors,
                                            human_bytes(f.weight_bytes))});
  std::string out = format_table(head, 0);
  std::vector<std::vector<std::string>> weights;
  for (const WeightGroup& g : f.weights)
    weights.push_back({g.kind + (g.quantized ? " (blocks)" : ""), grouped(g.elements),
                       fmt::format("{} tensors", g.tensors),
                       fmt::format("{} bytes", grouped(g.bytes))});
  if (f.constants.tensors)
    weights.push_back({"constants in main", grouped(f.constants.elements),
                       fmt::format("{} tensors", f.constants.tensors),
                       fmt::format("{} bytes", grouped(f.constants.bytes))});
  out += format_table(weights, 14);

  out += "\ngraphs\n";
  if (f.graphs.empty()) out += "  none: the model has no graph to run\n";
  for (const GraphFacts& g : f.graphs) {
    out += fmt::format("  {} ({} nodes)\n", g.name, g.nodes);
    std::vector<std::vector<std::string>> rows = value_rows("in", g.inputs);
    if (g.inputs.empty()) rows.push_back({"in", "(none)", ""});
    for (auto& row : value_rows("out", g.outputs)) rows.push_back(std::move(row));
    out += format_table(rows, 4);
  }

  out += "\nsymbolic dims\n";
  std::vector<std::vector<std::string>> dims;
  for (const SymbolFacts& s : f.symbols)
    dims.push_back({s.name, s.meaning.empty() ? "-" : s.meaning, s.bind, join(s.graphs)});
  for (const auto& [name, size] : f.fixed_dims)
    dims.push_back({name, "fixed at import to " + size, "--bind " + name + "=" + size, "all"});
  if (dims.empty())
    out += f.graphs.empty() ? "  none\n" : "  none: every input shape is static\n";
  else
    out +=
        format_table(dims) +
        "  (`rlx run` and `rlx bench --inputs` take every size from the input tensors' shapes)\n";

  if (!f.limits.empty()) {
    out += "\ninput limits\n";
    std::vector<std::vector<std::string>> rows;
    for (const InputLimit& l : f.limits) rows.push_back({l.input, limit_text(l), l.reason});
    out += format_table(rows);
  }

  constexpr size_t kShown = 12;
  if (!f.metadata.empty()) {
    out += fmt::format("\nmetadata ({} keys)\n", f.metadata.size());
    std::vector<std::vector<std::string>> rows;
    for (size_t i = 0; i < f.metadata.size() && i < kShown; ++i)
      rows.push_back(
          {f.metadata[i].first, f.metadata[i].second.empty() ? "(empty)" : f.metadata[i].second});
    out += format_table(rows);
    if (f.metadata.size() > kShown)
      out += fmt::format("  ... {} more (--json lists them all)\n", f.metadata.size() - kShown);
  }
  return out;
}

// {"name": "input_ids", "dtype": "i64", "shape": ["B", "S"]}: sizes as numbers, symbols as
// strings.
json::Value typed_value(const std::string& name, const TensorType& type) {
  json::Array shape;
  for (const Dim& d : type.shape) shape.push_back(d.is_static() ? jint(d.value) : jstring(d.sym));
  return json::Value{json::Object{{"name", jstring(name)},
                                  {"dtype", jstring(dtype_name(type.dtype))},
                                  {"shape", json::Value{std::move(shape)}}}};
}

json::Value key_values(const KeyValues& kv) {
  json::Object o;
  for (const auto& [k, v] : kv) o.emplace_back(k, jstring(v));
  return json::Value{std::move(o)};
}

json::Value strings(const std::vector<std::string>& items) {
  json::Array a;
  for (const std::string& s : items) a.push_back(jstring(s));
  return json::Value{std::move(a)};
}

json::Value weight_group(const WeightGroup& g) {
  return json::Value{json::Object{{g.quantized ? "qtype" : "dtype", jstring(g.kind)},
                                  {"tensors", jint(g.tensors)},
                                  {"count", jint(g.elements)},
                                  {"bytes", jint(g.bytes)}}};
}

json::Value to_json(const ModelFacts& f, const std::string& path) {
  json::Array graphs, symbols, dense, quantized, limits;
  for (const GraphFacts& g : f.graphs) {
    json::Array inputs, outputs;
    for (const auto& [name, type] : g.inputs) inputs.push_back(typed_value(name, type));
    for (const auto& [name, type] : g.outputs) outputs.push_back(typed_value(name, type));
    graphs.push_back(json::Value{json::Object{{"name", jstring(g.name)},
                                              {"nodes", jint(g.nodes)},
                                              {"inputs", json::Value{std::move(inputs)}},
                                              {"outputs", json::Value{std::move(outputs)}}}});
  }
  for (const SymbolFacts& s : f.symbols)
    symbols.push_back(
        json::Value{json::Object{{"name", jstring(s.name)},
                                 {"meaning", s.meaning.empty() ? jnull() : jstring(s.meaning)},
                                 {"bind", jstring(s.bind)},
                                 {"graphs", strings(s.graphs)}}});
  for (const WeightGroup& g : f.weights)
    (g.quantized ? quantized : dense).push_back(weight_group(g));
  for (const InputLimit& l : f.limits)
    limits.push_back(json::Value{json::Object{{"input", jstring(l.input)},
                                              {"dim", l.dim < 0 ? jnull() : jint(l.dim)},
                                              {"min", jint(l.min)},
                                              {"max", jint(l.max)},
                                              {"reason", jstring(l.reason)}}});
  json::Object tokenizer{{"present", json::Value{f.has_tokenizer}}};
  if (f.has_tokenizer) {
    tokenizer.emplace_back("kind", jstring(f.tokenizer_kind));
    tokenizer.emplace_back("vocab_size", jint(f.tokenizer_vocab));
  } else {
    tokenizer.emplace_back("why_not", jstring(f.tokenizer_note));
  }
  return json::Value{json::Object{
      {"model", jstring(path)},
      {"format", jstring(f.format)},
      {"importer", f.importer.empty() ? jnull() : jstring(f.importer)},
      {"architecture", jstring(f.architecture)},
      {"architecture_details", key_values(f.architecture_details)},
      {"graphs", json::Value{std::move(graphs)}},
      {"symbols", json::Value{std::move(symbols)}},
      {"fixed_dims", key_values(f.fixed_dims)},
      {"tokenizer", json::Value{std::move(tokenizer)}},
      {"parameters", json::Value{json::Object{{"count", jint(f.parameters)},
                                              {"bytes", jint(f.weight_bytes)},
                                              {"by_dtype", json::Value{std::move(dense)}},
                                              {"quantized", json::Value{std::move(quantized)}}}}},
      {"constants", json::Value{json::Object{{"tensors", jint(f.constants.tensors)},
                                             {"count", jint(f.constants.elements)},
                                             {"bytes", jint(f.constants.bytes)}}}},
      {"input_limits", json::Value{std::move(limits)}},
      {"metadata", key_values(f.metadata)}}};
}

int info_main(const InfoOptions& o, const GlobalOptions& global) {
  const registry::Registry& reg = plugin_registry(global, /*build_legality=*/false);
  std::string importer;
  const Model model =
      load_model(reg, o.model, import_options_for(parse_bind_specs(o.bind, 1)), &importer);
  const ModelFacts facts = describe_model(model, o.model, importer);
  const std::string out =
      o.json ? to_json_text(to_json(facts, o.model)) + "\n" : to_text(facts, o.model);
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace

Command info_command() {
  return make_command<InfoOptions>(
      {"info", "describe a model: format, graphs, inputs and outputs, dims, weights, tokenizer",
       "MODEL [--bind NAME=SIZE]... [--json]",
       "Imports MODEL (a Hugging Face folder, .gguf, .onnx, .rten or rlx IR text) without\n"
       "compiling it and prints: its format and the importer that read it; the architecture\n"
       "(config.json's model_type and architectures, GGUF general.architecture, ONNX producer\n"
       "and opset); every graph (main; prefill and decode for decoders) with each input and\n"
       "output's dtype and shape; the symbolic dims and the option that sizes each (--batch for\n"
       "B, --seq for S, --bind T=N for a KV cache's capacity); the tokenizer; the parameter\n"
       "count and bytes by dtype or block format; the limits on input values; and the rest of\n"
       "the metadata. Weights stay mapped and unread, so it is quick on large models."},
      &declare_info_options, &info_main);
}

}  // namespace rlx::cli
