#include "model_facts.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "rlx/core/quant.h"

namespace rlx::cli {
namespace {

namespace fs = std::filesystem;

std::string meta(const Model& m, const std::string& key) {
  auto it = m.metadata.find(key);
  return it == m.metadata.end() ? std::string() : it->second;
}

std::string format_of(const Model& m, const std::string& path, const std::string& importer) {
  std::error_code ec;
  if (importer.empty()) return "rlx IR text";
  if (importer == "safetensors")
    return fs::is_directory(path, ec) ? "Hugging Face folder (config.json + safetensors)"
                                      : "safetensors file (tensors only)";
  if (importer == "gguf")
    return "GGUF v" + meta(m, "gguf.version") +
           (meta(m, "gguf.vocab_only") == "true" ? " (vocabulary only, no tensors)" : "");
  if (importer == "onnx") return "ONNX (IR version " + meta(m, "ir_version") + ")";
  if (importer == "rten") return "RTen (format version " + meta(m, "rten.format_version") + ")";
  return importer;  // an importer from outside the tree: its name is all rlx knows
}

// Metadata that says what the model is, shown beside the architecture rather than in the list,
// in this order (ONNX opsets, "opset" and "opset.<domain>", after the producer).
int architecture_rank(const std::string& key) {
  static const std::vector<std::string> keys = {"config.model_type",
                                                "config.architectures",
                                                "general.architecture",
                                                "general.name",
                                                "producer",
                                                "ir_version"};
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i] == key) return static_cast<int>(i);
  return key.rfind("opset", 0) == 0 ? static_cast<int>(keys.size()) : -1;
}

// Metadata another section of the report already shows in its own words.
bool is_shown_elsewhere(const std::string& key) {
  static const std::set<std::string> keys = {kFixedDimsKey,       kTokenizerProblemKey,
                                             "gguf.no_tokenizer", "gguf.version",
                                             "gguf.vocab_only",   "rten.format_version"};
  return keys.count(key) || key.rfind(kInputLimitPrefix, 0) == 0;
}

// One line, at most about kMetadataValueChars: a GGUF chat template is kilobytes of Jinja. The
// cut falls between UTF-8 characters, never inside one.
std::string shorten(const std::string& value) {
  std::string out;
  for (char c : value) {
    const bool continues = (static_cast<unsigned char>(c) & 0xC0) == 0x80;
    if (out.size() >= kMetadataValueChars && !continues) return out + "...";
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return out;
}

int graph_rank(const std::string& name) {
  if (name == "main") return 0;
  if (name == "prefill") return 1;
  if (name == "decode") return 2;
  return 3;
}

// bench's rules (bench.cpp): --batch sizes B, --seq S, --bind any symbol.
void describe_symbol(SymbolFacts& s) {
  if (s.name == "B") {
    s.meaning = "batch";
    s.bind = "--batch N or --bind B=N";
  } else if (s.name == "S") {
    s.meaning = "sequence length";
    s.bind = "--seq N or --bind S=N";
  } else if (s.name == "T") {
    s.meaning = "KV-cache capacity";
    s.bind = "--bind T=N";
  } else {
    s.bind = "--bind " + s.name + "=N";
  }
}

KeyValues parse_fixed_dims(const std::string& list) {
  KeyValues out;
  for (size_t begin = 0; begin < list.size();) {
    const size_t comma = std::min(list.find(',', begin), list.size());
    const std::string item = list.substr(begin, comma - begin);
    const size_t eq = item.find('=');
    out.emplace_back(item.substr(0, eq), eq == std::string::npos ? "" : item.substr(eq + 1));
    begin = comma + 1;
  }
  return out;
}

// Walks every graph (and the bodies of loops) once, counting each param by name: a decoder's
// three graphs share one set of weights.
class WeightCounter {
 public:
  void add_graph(const Graph& g) {
    std::map<ValueId, std::string> qtype_of = block_formats(g);
    for (ValueId v : g.params) {
      const Value& value = g.values[v];
      if (!seen_.insert(value.name).second || !is_static(value.type.shape)) continue;
      const int64_t numel = num_elements(static_dims(value.type.shape));
      const int64_t bytes = numel * static_cast<int64_t>(dtype_size(value.type.dtype));
      auto q = qtype_of.find(v);
      const quant::QTypeInfo* info = q == qtype_of.end() ? nullptr : quant::find_qtype(q->second);
      if (info) {
        // u8[rows, bytes per row]: every block_bytes hold block_size weights.
        add(quantized_, std::string(info->name), true, bytes / info->block_bytes * info->block_size,
            bytes);
      } else {
        add(dense_, std::string(dtype_name(value.type.dtype)), false, numel, bytes);
      }
    }
    for (const Node& n : g.nodes)
      for (const auto& region : n.regions)
        if (region) add_graph(*region);
  }

  std::vector<WeightGroup> groups() const {
    std::vector<WeightGroup> out;
    for (int i = 0; i < kNumDTypes; ++i)
      if (auto it = dense_.find(std::string(dtype_name(all_dtypes()[i]))); it != dense_.end())
        out.push_back(it->second);
    for (const auto& [name, group] : quantized_) out.push_back(group);
    return out;
  }

 private:
  // Params read as block-quantized bytes: the weight operand of DequantMatMul, and the table an
  // Embedding gathers rows from before DequantizeRows decodes them.
  static std::map<ValueId, std::string> block_formats(const Graph& g) {
    std::map<ValueId, std::string> out;
    for (const Node& n : g.nodes) {
      size_t operand;
      if (n.op == "DequantMatMul")
        operand = 1;
      else if (n.op == "DequantizeRows")
        operand = 0;
      else
        continue;
      if (n.inputs.size() <= operand) continue;
      ValueId v = n.inputs[operand];
      // Back through the gather (and any reshape) to the stored table.
      for (int hop = 0; hop < 4 && g.values[v].producer >= 0; ++hop) {
        const Node& p = g.nodes[g.values[v].producer];
        if (p.inputs.empty()) break;
        v = p.inputs[0];
      }
      out[v] = n.attr_string("qtype", "");
    }
    return out;
  }

  static void add(std::map<std::string, WeightGroup>& groups, const std::string& kind,
                  bool quantized, int64_t elements, int64_t bytes) {
    WeightGroup& g = groups[kind];
    g.kind = kind;
    g.quantized = quantized;
    g.tensors += 1;
    g.elements += elements;
    g.bytes += bytes;
  }

  std::set<std::string> seen_;
  std::map<std::string, WeightGroup> dense_, quantized_;
};

// Tensors written into the graph itself (small ONNX initializers, shapes, scalars).
void count_constants(const Graph& g, WeightGroup& into) {
  for (const Node& n : g.nodes) {
    if (n.op == "constant" && n.has_attr("value")) {
      const Tensor& t = n.attr_tensor("value");
      into.tensors += 1;
      into.elements += t.numel();
      into.bytes += static_cast<int64_t>(t.nbytes());
    }
    for (const auto& region : n.regions)
      if (region) count_constants(*region, into);
  }
}

}  // namespace

ModelFacts describe_model(const Model& model, const std::string& path,
                          const std::string& importer) {
  ModelFacts f;
  f.format = format_of(model, path, importer);
  f.importer = importer;
  f.architecture = model.architecture;
  std::vector<std::pair<int, std::pair<std::string, std::string>>> details;
  for (const auto& [key, value] : model.metadata) {
    if (const int rank = architecture_rank(key); rank >= 0)
      details.push_back({rank, {key.rfind("config.", 0) == 0 ? key.substr(7) : key, value}});
    else if (!is_shown_elsewhere(key))
      f.metadata.emplace_back(key, shorten(value));
  }
  std::stable_sort(details.begin(), details.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [rank, kv] : details)
    f.architecture_details.emplace_back(kv.first, shorten(kv.second));

  std::vector<const Graph*> graphs;
  std::vector<std::string> names;
  for (const auto& [name, g] : model.graphs) names.push_back(name);
  std::stable_sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    return graph_rank(a) < graph_rank(b);
  });
  WeightCounter weights;
  for (const std::string& name : names) {
    const Graph& g = model.graphs.at(name);
    GraphFacts gf{name, static_cast<int64_t>(g.nodes.size()), {}, {}};
    for (ValueId v : g.inputs) gf.inputs.emplace_back(g.values[v].name, g.type(v));
    for (ValueId v : g.outputs) gf.outputs.emplace_back(g.values[v].name, g.type(v));
    f.graphs.push_back(std::move(gf));
    for (const std::string& sym : g.symbols()) {
      auto it = std::find_if(f.symbols.begin(), f.symbols.end(),
                             [&](const SymbolFacts& s) { return s.name == sym; });
      if (it == f.symbols.end()) {
        f.symbols.push_back({sym, "", "", {}});
        describe_symbol(f.symbols.back());
        it = std::prev(f.symbols.end());
      }
      it->graphs.push_back(name);
    }
    weights.add_graph(g);
  }
  f.fixed_dims = parse_fixed_dims(meta(model, kFixedDimsKey));

  if (model.tokenizer) {
    f.has_tokenizer = true;
    f.tokenizer_kind = model.tokenizer->kind;
    f.tokenizer_vocab = static_cast<int64_t>(model.tokenizer->tokens.size());
  } else {
    f.tokenizer_note = meta(model, kTokenizerProblemKey);
    if (f.tokenizer_note.empty()) f.tokenizer_note = meta(model, "gguf.no_tokenizer");
    if (f.tokenizer_note.empty()) f.tokenizer_note = "the model's files hold none";
  }

  f.weights = weights.groups();
  for (const WeightGroup& g : f.weights) {
    f.parameters += g.elements;
    f.weight_bytes += g.bytes;
  }
  f.constants.kind = "constant";
  if (auto main = model.graphs.find("main"); main != model.graphs.end())
    count_constants(main->second, f.constants);
  f.limits = input_limits(model);
  return f;
}

}  // namespace rlx::cli
