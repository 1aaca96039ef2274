// `rlx compile MODEL --target T -o DIR`: everything a target produces for a model, on disk, with
// a manifest saying what each file is. Intermediate levels (MIR, LIR, dispatch report) are
// written too, so a generated artifact can always be traced back to the decisions behind it.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>

#include "bindings.h"
#include "commands.h"
#include "errors.h"
#include "inputs_file.h"
#include "json_out.h"
#include "model.h"
#include "options.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/lir.h"
#include "rlx/core/progress.h"
#include "rlx/core/runtime.h"
#include "rlx/core/target_cpu.h"
#include "rlx/registry/compiled_folder.h"
#include "table.h"

namespace rlx::cli {
namespace {

namespace fs = std::filesystem;

// Wall time of each stage, in the order they ran.
class StageTimer {
 public:
  void stage(std::string name) {
    auto now = std::chrono::steady_clock::now();
    if (!current_.empty())
      stages_.emplace_back(current_,
                           std::chrono::duration<double, std::milli>(now - start_).count());
    current_ = std::move(name);
    start_ = now;
    task_.reset();  // one progress task per stage, named like its timing
    if (!current_.empty()) task_.emplace("compile: " + current_);
  }
  void finish() { stage(""); }
  const std::vector<std::pair<std::string, double>>& stages() const { return stages_; }

 private:
  std::string current_;
  std::chrono::steady_clock::time_point start_;
  std::optional<progress::Task> task_;
  std::vector<std::pair<std::string, double>> stages_;
};

std::string bind_option_name(const std::string& name) {
  return "--bind " + name;
}

// Every symbolic dim needs a size before lowering: from --bind, or fixed by the importer.
Bindings lowering_sizes(const Bindings& given, const Graph& graph, const Model& model) {
  Bindings sizes = sizes_for_graph(given, graph, model, &bind_option_name);
  if (std::string missing = unsized_symbols(sizes, graph); !missing.empty()) {
    std::string example;
    for (const auto& s : graph.symbols())
      if (!sizes.count(s)) example += fmt::format(" --bind {}=<size>", s);
    throw CliError(fmt::format("the model has symbolic dims without a size: {}", missing),
                   fmt::format("compiling needs every size; add{}", example));
  }
  return sizes;
}

void write_file(const fs::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
  out.close();
  if (!out)
    throw CliError(fmt::format("cannot write {}", path.string()),
                   "check that the output folder is writable and the disk is not full");
}

// A target may report the stages of its own build (codegen, compiler, load) in an artifact of
// kind "build-report" (a JSON object with "stages_ms"); they replace that much of the "emit"
// stage, which keeps the rest. *note says when the target's kernel cache spared the compiler.
std::vector<std::pair<std::string, double>> split_target_stages(
    const std::vector<std::pair<std::string, double>>& stages, const std::vector<Artifact>& files,
    const fs::path& out_dir, std::string* note) {
  std::vector<std::pair<std::string, double>> own;
  for (const Artifact& f : files) {
    if (f.kind != "build-report") continue;
    std::ifstream in(out_dir / f.path);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    json::Value doc;
    try {
      doc = json::parse(text);
    } catch (const std::exception&) {
      continue;  // a malformed report only loses the split, never the compile
    }
    if (const json::Value* st = doc.find("stages_ms"); st && st->as_object())
      for (const auto& m : *st->as_object())
        if (const json::Number* n = m.second.as_number()) own.emplace_back(m.first, n->value);
    if (const json::Value* c = doc.find("cache"); c && c->as_string() && *c->as_string() == "hit")
      *note = fmt::format("  ({}: kernel cache hit, no compiler ran)\n", f.path);
  }
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [stage, ms] : stages) {
    if (stage != "emit" || own.empty()) {
      out.emplace_back(stage, ms);
      continue;
    }
    double rest = ms;
    for (const auto& s : own) rest -= s.second;
    out.insert(out.end(), own.begin(), own.end());
    out.emplace_back("emit", std::max(0.0, rest));
  }
  return out;
}

// --cpu, --cuda-arch, --deployment-target and --compute-units: handed to a target that
// generates for one member of a family (rlx/core/target_cpu.h): a microcontroller core, a GPU
// architecture, an OS release and compute units of CoreML.
struct ChoiceOption {
  std::string_view option, what, applies;
};
constexpr ChoiceOption kChoiceOptions[] = {
    {"--cpu", "CPU", "microcontroller targets such as cortexm"},
    {"--cuda-arch", "GPU architecture", "--target cuda"},
    {"--deployment-target", "deployment target", "--target ane"},
    {"--compute-units", "compute-unit preference", "--target ane"}};

void select_target_cpu(Target& target, const std::string& cpu, std::string_view option) {
  const ChoiceOption* o = &kChoiceOptions[0];
  for (const ChoiceOption& c : kChoiceOptions)
    if (c.option == option) o = &c;
  const auto* ext =
      static_cast<const TargetCpuV1*>(target.extension(kTargetCpuExtension, kTargetCpuVersion));
  if (!ext || !ext->select)
    throw CliError(fmt::format("{} {}: the target {} generates for no particular {}", option, cpu,
                               target.name(), o->what),
                   fmt::format("leave {} out; it applies to {}", option, o->applies));
  if (const char* why = ext->select(ext->context, cpu.c_str()))
    throw CliError(fmt::format("{} {}: {}", option, cpu, why),
                   fmt::format("choose one of: {}", ext->cpus));
}

struct CompileOptions {
  std::string model, target, output_dir, graph;
  std::optional<std::string> cpu, cuda_arch, deployment_target, compute_units;
  std::vector<std::string> bind;
  InputOptions inputs;
  bool timings = false, json = false;
  PrecisionOptions precision;
  std::optional<DType> kv_cache;
};

void declare_compile_options(CLI::App& app, CompileOptions& o) {
  add_model_argument(app, o.model);
  add_target_option(app, o.target, "compile for");
  add_value(app, "-o,--output-dir", "DIR", o.output_dir,
            "the folder to write into (created when missing)", Presence::kRequired);
  add_bind_option(app, o.bind, "the size of a symbolic dim");
  add_value(app, "--cpu", "NAME", o.cpu,
            "the core a microcontroller target generates for (cortexm: cortex-m4, cortex-m7, "
            "cortex-m55)");
  add_value(app, "--cuda-arch", "ARCH", o.cuda_arch,
            "the GPU architecture --target cuda writes PTX and a cubin for (sm_80, sm_90, ...; "
            "default: RLX_CUDA_ARCH, else the GPU here, else sm_90)");
  add_value(app, "--deployment-target", "OS", o.deployment_target,
            "the OS release --target ane writes its CoreML package for (ios15..ios18, "
            "macos12..macos15; default ios17)");
  add_value(app, "--compute-units", "UNITS", o.compute_units,
            "the compute units --target ane's package asks CoreML for (ALL, CPU_AND_NE, CPU_ONLY, "
            "CPU_AND_GPU; default ALL)");
  add_input_options(app, o.inputs);
  add_flag(app, "--timings", o.timings,
           "print the time of each stage in ms (a target that builds code adds its own: codegen, "
           "compiler, load)");
  add_flag(app, "--json", o.json, "print a JSON summary of the files written (and the timings)");
  add_graph_option(app, o.graph);
  add_precision_option(app, o.precision);
  add_kv_cache_option(app, o.kv_cache);
}

int compile_main(const CompileOptions& o, const GlobalOptions& global) {
  const fs::path model_path = o.model;
  const fs::path out_dir = o.output_dir;
  const bool timings = o.timings;
  const bool json_output = o.json;

  StageTimer timer;
  timer.stage("plugin discovery");
  const registry::Registry& reg = plugin_registry(global, /*build_legality=*/false);
  std::shared_ptr<Target> target = choose_target(reg, o.target);
  const std::string target_name = target->name();  // --target auto names one
  if (o.cuda_arch && target_name != "cuda")
    throw CliError(fmt::format("--cuda-arch {}: the target {} is not cuda", *o.cuda_arch,
                               target_name),
                   "leave --cuda-arch out, or compile with --target cuda");
  if (o.cpu) select_target_cpu(*target, *o.cpu, "--cpu");
  if (o.cuda_arch) select_target_cpu(*target, *o.cuda_arch, "--cuda-arch");
  for (const auto& [value, option] : {std::pair{&o.deployment_target, "--deployment-target"},
                                      std::pair{&o.compute_units, "--compute-units"}}) {
    if (!*value) continue;
    if (target_name != "ane")
      throw CliError(fmt::format("{} {}: the target {} is not ane", option, **value, target_name),
                     fmt::format("leave {} out, or compile with --target ane", option));
    select_target_cpu(*target, **value, option);
  }

  const Bindings given = parse_bind_specs(o.bind, 0);
  // Input values (--inputs, --input) only freeze the inputs that decide shapes; their shapes
  // reach the importer as run's do.
  GivenInputs given_inputs = read_inputs(
      o.inputs, [&](const fs::path& folder) { return read_input_folder(reg, model_path, folder); });
  ImportOptions import_options = import_options_for(given);
  ImportOptions from_inputs = import_options_for(given_inputs);
  import_options.input_shapes = std::move(from_inputs.input_shapes);
  import_options.input_values = std::move(from_inputs.input_values);
  timer.stage("import");
  Model model_file = load_model(reg, model_path, import_options);
  const std::vector<std::string> frozen = take_frozen_inputs(model_file, given_inputs);
  use_precision(model_file, o.precision, model_path.string());
  if (o.kv_cache) use_kv_cache(model_file, o.graph, *o.kv_cache, model_path.string());
  json::Array frozen_json;
  for (const std::string& name : frozen) frozen_json.push_back(jstring(name));
  const Graph& graph = model_file.graph(o.graph);
  Bindings bindings = lowering_sizes(given, graph, model_file);

  timer.stage("dispatch+passes");
  Session session(target);
  CompiledModel model = session.compile(graph);

  timer.stage("lowering");
  lir::Program program = model.lir_for(bindings);

  timer.stage("write ir");
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec || !fs::is_directory(out_dir))
    throw CliError(fmt::format("cannot create the output folder {}: {}", out_dir.string(),
                               ec ? ec.message() : "a file of that name exists"),
                   "choose another -o DIR");
  std::vector<Artifact> files;
  write_file(out_dir / "model.mir", print_graph(model.mir()));
  files.push_back({"model.mir", "mir"});
  // Constants go to a binary side file: as decimal text MiniLM's weights took 300 MB and seconds.
  // Weights the model file holds unchanged are hard-linked from it, not copied.
  std::vector<std::string> sides = lir::write_program((out_dir / "model.lir").string(), program);
  files.push_back({"model.lir", "lir"});
  for (const std::string& side : sides) files.push_back({side, "lir-constants"});
  std::string report = model.report().to_json();
  write_file(out_dir / "dispatch.json", report + "\n");
  files.push_back({"dispatch.json", "dispatch-report"});
  timer.stage("emit");
  std::vector<Artifact> emitted = target->program_level() == ProgramLevel::kMir
                                      ? target->emit_mir(model.mir_for(bindings), out_dir)
                                      : target->emit(program, out_dir);
  for (Artifact& a : emitted) {
    // A target that writes one of our file names wins; the manifest lists each path once.
    std::erase_if(files, [&](const Artifact& f) { return f.path == a.path; });
    files.push_back(std::move(a));
  }
  timer.finish();

  json::Array file_list;
  for (const Artifact& f : files) {
    json::Object entry = {{"path", jstring(f.path)}, {"kind", jstring(f.kind)}};
    auto size = fs::file_size(out_dir / f.path, ec);
    if (!ec) entry.emplace_back("bytes", jint(static_cast<int64_t>(size)));
    file_list.push_back(json::Value{std::move(entry)});
  }
  // The manifest makes the folder loadable (`rlx run DIR`): what a loader checks, and each file.
  registry::CompileRecord record;
  record.model = fs::absolute(model_path).lexically_normal().string();
  record.target = target_name;
  // The sizes given (some fixed at import, so no longer symbols) and those lowering used.
  record.bindings = std::map<std::string, int64_t>(given.begin(), given.end());
  record.bindings.insert(bindings.begin(), bindings.end());
  record.files = files;
  record.program = "model.lir";
  record.limits = input_limits(model_file);
  record.frozen_inputs = frozen;
  for (const auto& [stage, ms] : timer.stages()) record.compile_ms += ms;
  registry::write_compiled_folder_manifest(reg, *target, program, out_dir, record);

  double total = 0;
  json::Object timing_json;
  std::string timing_text;
  std::string cache_note;
  auto stages = split_target_stages(timer.stages(), files, out_dir, &cache_note);
  for (const auto& [stage, ms] : stages) {
    total += ms;
    timing_json.emplace_back(stage, jms(ms));
    timing_text += fmt::format("  {:<18} {:>10.3f} ms\n", stage, ms);
  }
  timing_json.emplace_back("total", jms(total));
  timing_text += fmt::format("  {:<18} {:>10.3f} ms\n", "total", total);

  if (json_output) {
    json::Array all_files = file_list;
    all_files.push_back(json::Value{
        json::Object{{"path", jstring("manifest.json")}, {"kind", jstring("manifest")}}});
    json::Object doc = {{"output_dir", jstring(out_dir.string())},
                        {"target", jstring(target_name)},
                        {"files", json::Value{std::move(all_files)}},
                        {"frozen_inputs", json::Value{std::move(frozen_json)}}};
    if (timings) doc.emplace_back("timings_ms", json::Value{std::move(timing_json)});
    std::fputs((to_json_text(json::Value{std::move(doc)}) + "\n").c_str(), stdout);
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const Artifact& f : files) rows.push_back({f.path, f.kind});
  rows.push_back({"manifest.json", "manifest"});
  std::string out = fmt::format("wrote {} files to {}:\n", rows.size(), out_dir.string());
  out += format_table(rows);
  // A target's own summary (cortexm: code size and RAM), an artifact of kind "summary".
  for (const Artifact& f : files)
    if (f.kind == "summary") {
      std::ifstream in(out_dir / f.path);
      out += std::string((std::istreambuf_iterator<char>(in)), {});
    }
  if (timings) out += "timings:\n" + timing_text + cache_note;
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace

Command compile_command() {
  return make_command<CompileOptions>(
      {"compile", "compile a model and write the target's artifacts to a folder",
       "MODEL --target T -o DIR [--bind NAME=SIZE]... [--cpu NAME] [--cuda-arch ARCH]\n"
       "       [--precision MODE] [--kv-cache f32|f16|bf16] [--inputs IN]\n"
       "       [--input NAME=VALUES]... [--timings] [--json]",
       "Compiles MODEL for target T and writes into DIR: model.mir (the graph after dispatch and\n"
       "passes), model.lir (the kernel program; its large constants in model.lir.safetensors),\n"
       "dispatch.json (the path of every node), the target's own artifacts (cpu: the kernels'\n"
       "C source and shared object; cortexm: firmware C for the --cpu core, with its code size\n"
       "and RAM; hexagon: the program's C, its runtime, build.sh and the ELF where clang has the\n"
       "Hexagon backend; cuda: the .cu, its PTX and a cubin for --cuda-arch; mlx: model.cpp, a\n"
       "standalone C++ program against Apple MLX's API, with its weights.safetensors and a\n"
       "CMakeLists.txt that builds it), and manifest.json: the versions, target, CPU and sizes it\n"
       "was built for, the inputs and outputs, and every file with its size and hash.\n"
       "DIR is deployable: `rlx run DIR` and `rlx bench DIR` load it without the model, the\n"
       "importer or a compiler, after checking that it fits this rlx, plugin and CPU.\n"
       "Symbolic dims of the inputs need a size: --bind batch=4. The size reaches the importer\n"
       "too: ONNX and rten fix such dims at import, which models whose shape arithmetic rlx\n"
       "cannot keep symbolic need (a reflect Pad: `sequence + 128`).\n"
       "Input values given as `rlx run` takes them (--inputs, --input) freeze the ONNX inputs\n"
       "whose values decide shapes (a Reshape's shape, a Slice's starts): those become\n"
       "constants, a note on stderr names them and manifest.json lists them (frozen_inputs);\n"
       "the other inputs stay inputs.\n"
       "A decoder's decode graph keeps its KV cache in --kv-cache's dtype (its past_* inputs and\n"
       "present_* outputs), as `rlx generate --kv-cache` runs it."},
      &declare_compile_options, &compile_main);
}

}  // namespace rlx::cli
