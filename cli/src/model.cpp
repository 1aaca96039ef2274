#include "model.h"

#include <fmt/format.h>

#include <algorithm>

#include "errors.h"
#include "rlx/core/error.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/passes.h"
#include "rlx/core/progress.h"
#include "rlx/llm/decoding.h"
#include "stderr_status.h"
#include "target_choice.h"
#include "rlx/registry/compiled_folder.h"

namespace rlx::cli {

namespace fs = std::filesystem;

namespace {

// "no importer could read X: the importer 'evil' that claims it is broken: <why>", one line per
// importer that claims it.
CliError unusable_importers_error(const fs::path& path,
                                  const std::vector<registry::PluginRecord>& importers) {
  std::string message = fmt::format("no importer could read '{}':", path.string());
  for (const registry::PluginRecord& p : importers)
    message += fmt::format("\n  the importer '{}' that claims it is {}: {}", p.name,
                           registry::status_name(p.status), p.detail);
  return CliError(std::move(message),
                  "fix or remove that plugin (`rlx --list-targets -v` shows its files)");
}

}  // namespace

const registry::Registry& plugin_registry(const GlobalOptions& global, bool build_legality) {
  static const registry::Registry* reg = nullptr;
  if (!reg) {
    registry::Options options;
    options.plugin_paths = global.plugin_paths;
    options.build_legality = build_legality;
    reg = new registry::Registry(registry::Registry::discover(options));  // never freed, see .h
  }
  return *reg;
}

std::shared_ptr<Target> choose_target(const registry::Registry& reg, const std::string& name) {
  if (name.empty())
    throw UsageError("--target needs a name", "run `rlx --list-targets` to see the targets");
  // The design names several targets for placement (--target cuda,cpu); until it exists, one.
  if (name.find(',') != std::string::npos)
    throw CliError(
        fmt::format("placement over several targets ('{}') is not supported yet", name),
        fmt::format(
            "name one target, e.g. --target {}; `rlx --list-targets` shows them",
            name.substr(0, name.find(',')).empty() ? "cpu" : name.substr(0, name.find(','))));
  if (name == "auto") return choose_auto_target(reg);
  return reg.target(name);
}

void require_can_execute(Target& target, const std::string& target_name,
                         const std::string& model_path) {
  if (Verdict v = target.can_execute(); !v.ok)
    throw CliError(
        fmt::format("target '{}' cannot execute on this machine: {}", target_name, v.reason),
        fmt::format("use `rlx compile {} --target {} -o DIR` to emit its artifacts, "
                    "or run on a target listed as available by `rlx --list-targets`",
                    model_path, target_name));
  if (std::string software = software_device_note(target); !software.empty()) note(software);
}

Model load_model(const registry::Registry& reg, const fs::path& path, const ImportOptions& options,
                 std::string* read_by) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw CliError(fmt::format("model '{}' does not exist", path.string()),
                   "check the path; MODEL is an rlx IR text file or a file an importer reads");
  if (auto importer = reg.importer_for(path)) {
    if (read_by) *read_by = importer->name();
    try {
      progress::Task task(
          fmt::format("importing {} ({} importer)", path.filename().string(), importer->name()));
      return importer->load(path, options);
    } catch (const Error& e) {
      // A user error (the importer says what is wrong with the files) or an unclassified one
      // (almost always the files are at fault too): either way the hint is what it reads.
      if (e.kind() != ErrorKind::kUser && e.kind() != ErrorKind::kPlugin) throw;
      throw CliError(e.what(), fmt::format("the {} importer could not read {}; docs/models.md "
                                           "lists what it reads and the sizes (--bind) it takes",
                                           importer->name(), path.string()));
    }
  }
  // No usable importer claims it. A claimant that cannot be used (a plugin that crashed in its
  // probe, say) is passed over like an absent one; if nothing else reads the path, it is named
  // rather than a parse error of, say, ONNX bytes as IR text.
  const std::vector<registry::PluginRecord> unusable = reg.unusable_importers_for(path);
  if (fs::is_directory(path, ec)) {
    if (!unusable.empty()) throw unusable_importers_error(path, unusable);
    if (registry::is_compiled_folder(path))
      throw CliError(
          fmt::format("'{}' is a compiled folder, which only run and bench load", path.string()),
          fmt::format("`rlx run {}` or `rlx bench {}`; other commands take the model "
                      "it was compiled from",
                      path.string(), path.string()));
    throw CliError(
        fmt::format("no importer reads the folder '{}'", path.string()),
        "see the importers in `rlx --list-targets`; a Hugging Face folder needs its config.json");
  }
  // The LIR of a compiled folder is no model; the folder it lies in is what loads.
  if (path.extension() == ".lir" &&
      registry::is_compiled_folder(path.parent_path().empty() ? fs::path(".")
                                                              : path.parent_path())) {
    const std::string dir = path.parent_path().empty() ? "." : path.parent_path().string();
    throw CliError(
        fmt::format("'{}' is the kernel program of a compiled folder, not a model", path.string()),
        fmt::format("load the whole folder: `rlx run {}` or `rlx bench {}`", dir, dir));
  }
  if (read_by) read_by->clear();
  Model m;
  m.architecture = "ir";
  try {
    m.graphs["main"] = load_graph_file(path);
  } catch (const Error&) {
    // Not IR text either: the importer that claims it but cannot be used is the story.
    if (!unusable.empty()) throw unusable_importers_error(path, unusable);
    throw;
  }
  return m;
}

void use_q8_activations(Model& model, const std::string& model_path) {
  int changed = 0;
  for (auto& [name, graph] : model.graphs) changed += set_quantized_activations(graph, "q8");
  if (changed == 0)
    throw CliError(fmt::format("--q8-activations: {} has no products with block-quantized weights",
                               model_path),
                   "the flag applies to GGUF models stored in a block format (Q4_0, Q4_K, Q8_0, "
                   "...); leave it out");
}

std::map<std::string, PrecisionReport> use_precision(Model& model, const PrecisionOptions& options,
                                                     const std::string& model_path) {
  std::map<std::string, PrecisionReport> reports;
  const std::string& mode = options.mode;
  const PrecisionMode m = parse_precision(mode.empty() ? "f32" : mode);
  if (options.tf32) {
    size_t marked = 0;
    for (auto& [name, graph] : model.graphs) {
      reports[name].tf32 = allow_tf32(graph);
      marked += reports[name].tf32.size();
    }
    if (marked == 0)
      throw CliError(fmt::format("--allow-tf32: {} has no f32 matrix product", model_path),
                     "TF32 applies to f32 MatMul, Linear and dot_general; leave the option out");
    note(fmt::format("--allow-tf32: {} f32 products may round their operands to TF32 on a target "
                     "with TF32 tensor cores; rlx explain --allow-tf32 lists them",
                     marked));
  }
  if (m == PrecisionMode::kAsIs) return reports;
  size_t narrowed = 0, casts = 0, weights = 0;
  for (auto& [name, graph] : model.graphs) {
    PrecisionReport r = apply_precision(graph, m);
    narrowed += r.narrowed.size();
    casts += r.casts.size();
    weights += r.weights.size();
    r.tf32 = std::move(reports[name].tf32);
    reports[name] = std::move(r);
  }
  if (narrowed == 0)
    throw CliError(fmt::format("--precision {}: {} has no f32 computation this mode narrows",
                               mode, model_path),
                   "its products and ops already run in their stored dtypes; leave the option out");
  note(fmt::format("--precision {}: {} ops compute in {}, {} converts at the boundaries, {} weights "
                   "stored narrow; rlx explain --precision {} lists them",
                   mode, narrowed, mode.find("bf16") != std::string::npos ? "bf16" : "f16", casts,
                   weights, mode));
  return reports;
}

void use_kv_cache(Model& model, const std::string& graph, DType dtype,
                  const std::string& model_path) {
  auto it = model.graphs.find(graph);
  const int caches = it == model.graphs.end() ? 0 : llm::set_kv_cache_dtype(it->second, dtype);
  if (caches == 0) {
    std::string with_cache;
    for (const auto& [name, g] : model.graphs)
      if (std::any_of(g.inputs.begin(), g.inputs.end(),
                      [&g](ValueId v) { return g.values[v].name.rfind("past_", 0) == 0; }))
        with_cache += (with_cache.empty() ? "" : ", ") + name;
    throw CliError(
        fmt::format("--kv-cache: the {} graph of {} has no KV cache (no past_* inputs)", graph,
                    model_path),
        with_cache.empty()
            ? std::string("the option applies to a decoder's decode graph; leave it out")
            : fmt::format("graphs of this model with one: {}; choose one with --graph, or "
                          "leave the option out",
                          with_cache));
  }
}

TensorMap read_input_folder(const registry::Registry& reg, const fs::path& model_path,
                            const fs::path& folder) {
  auto importer = reg.importer_for(model_path);
  if (!importer)
    throw CliError(fmt::format("--inputs {}: a folder of inputs is read by the model's importer, "
                               "and no importer reads {}",
                               folder.string(), model_path.string()),
                   "give a .safetensors, .npz or .json file of the inputs");
  try {
    return importer->read_inputs(model_path, folder);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kUser && e.kind() != ErrorKind::kUnsupported &&
        e.kind() != ErrorKind::kPlugin)
      throw;
    throw CliError(fmt::format("--inputs {}: {}", folder.string(), e.what()),
                   "a folder of inputs is ONNX test data (input_0.pb, input_1.pb, ... in the "
                   "order of the model's inputs); otherwise give a .safetensors, .npz or .json "
                   "file");
  }
}

std::optional<fs::path> writable_path(const std::optional<std::string>& given, const char* option) {
  if (!given) return std::nullopt;
  fs::path path = *given;
  std::error_code ec;
  if (path.has_parent_path() && !fs::is_directory(path.parent_path(), ec))
    throw CliError(fmt::format("cannot write {}: folder {} does not exist", path.string(),
                               path.parent_path().string()),
                   fmt::format("create the folder first, or choose another {}", option));
  return path;
}

}  // namespace rlx::cli
