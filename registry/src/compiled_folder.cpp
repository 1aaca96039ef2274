#include "rlx/registry/compiled_folder.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <fstream>

#include "rlx/core/json.h"
#include "rlx/sdk/deployable.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace rlx::registry {

namespace fs = std::filesystem;

namespace {

constexpr const char* kManifest = "manifest.json";
// Weights are checked by size only: hashing gigabytes would cost seconds at every load, and a
// side file is a safetensors file whose header read_program checks against the program.
constexpr const char* kUnhashedKind = "lir-constants";

// XXH3-128 of a file's bytes, as 32 hex digits.
std::string file_hash(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_user_error(fmt::format("cannot read {}", path.string()));
  XXH3_state_t* state = XXH3_createState();
  XXH3_128bits_reset(state);
  std::vector<char> chunk(1 << 20);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    XXH3_128bits_update(state, chunk.data(), static_cast<size_t>(in.gcount()));
  }
  XXH128_hash_t h = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

const sdk::RlxDeployableV1* deployable(const Target& target) {
  return static_cast<const sdk::RlxDeployableV1*>(
      target.extension(sdk::kDeployableExtension, sdk::kDeployableVersion));
}

std::string quote(std::string_view s) {
  return json::json_quote(s);
}

std::string specs_json(const lir::Program& p,
                       const std::vector<std::pair<std::string, int32_t>>& named) {
  std::vector<std::string> items;
  for (const auto& [name, b] : named)
    items.push_back(fmt::format("{{\"name\": {}, \"dtype\": {}, \"shape\": [{}]}}", quote(name),
                                quote(dtype_name(p.buffers[b].dtype)),
                                fmt::join(p.buffers[b].shape, ", ")));
  return fmt::format("[\n    {}\n  ]", fmt::join(items, ",\n    "));
}

// ---- reading ----

// The remedy of nearly every refusal: the folder does not fit, so build one that does.
std::string recompile_hint(const std::string& model, const std::string& target,
                           const fs::path& dir) {
  return fmt::format("compile it again here: rlx compile {} --target {} -o {}",
                     model.empty() ? "MODEL" : model, target.empty() ? "T" : target, dir.string());
}

const json::Value& member(const json::Value& doc, const char* key, const fs::path& manifest) {
  const json::Value* v = doc.find(key);
  if (!v)
    throw CompiledFolderError(fmt::format("{} lacks \"{}\"", manifest.string(), key),
                              "the manifest is damaged; compile the model again with rlx compile");
  return *v;
}

std::string string_of(const json::Value& doc, const char* key, const fs::path& manifest) {
  const json::Value& v = member(doc, key, manifest);
  if (!v.as_string())
    throw CompiledFolderError(fmt::format("{}: \"{}\" is not a string", manifest.string(), key),
                              "the manifest is damaged; compile the model again with rlx compile");
  return *v.as_string();
}

std::vector<TensorSpec> read_specs(const json::Value& doc, const char* key,
                                   const fs::path& manifest) {
  const json::Array* list = member(doc, key, manifest).as_array();
  auto bad = [&] {
    return CompiledFolderError(fmt::format("{}: \"{}\" is malformed", manifest.string(), key),
                               "the manifest is damaged; compile the model again");
  };
  if (!list) throw bad();
  std::vector<TensorSpec> out;
  for (const json::Value& item : *list) {
    const json::Value* name = item.find("name");
    const json::Value* dtype = item.find("dtype");
    const json::Value* shape = item.find("shape");
    if (!name || !name->as_string() || !dtype || !dtype->as_string() || !shape ||
        !shape->as_array())
      throw bad();
    std::optional<DType> dt = parse_dtype(*dtype->as_string());
    if (!dt) throw bad();
    TensorSpec spec{*name->as_string(), *dt, {}};
    for (const json::Value& d : *shape->as_array()) {
      std::optional<int64_t> n = d.as_number() ? d.as_number()->as_i64() : std::nullopt;
      if (!n) throw bad();
      spec.shape.push_back(*n);
    }
    out.push_back(std::move(spec));
  }
  return out;
}

bool overlaps(const Tensor& a, const Tensor& b) {
  const char* pa = static_cast<const char*>(a.data());
  const char* pb = static_cast<const char*>(b.data());
  return pa && pb && pa < pb + b.nbytes() && pb < pa + a.nbytes();
}

}  // namespace

void write_compiled_folder_manifest(const Registry& reg, Target& target,
                                    const lir::Program& program, const fs::path& dir,
                                    const CompileRecord& record) {
  std::optional<PluginRecord> plugin = reg.target_record(record.target);
  if (!plugin) throw_internal_error("the target compiled for has no plugin record");
  std::string needs = "{}";
  if (const sdk::RlxDeployableV1* ext = deployable(target)) {
    needs = ext->requirements(dir.c_str());
    // The answer goes into our file, so it must be a JSON object; anything else is the
    // plugin's message saying why it could not read what its emit() wrote.
    bool object = false;
    try {
      object = json::parse(needs).as_object() != nullptr;
    } catch (const std::exception&) {
    }
    if (!object)
      throw_user_error(
          fmt::format("the {} plugin cannot say what the files it wrote into {} "
                      "need: {}",
                      record.target, dir.string(), needs));
  }
  std::vector<std::string> files, bindings;
  for (const Artifact& f : record.files) {
    std::error_code ec;
    const auto bytes = fs::file_size(dir / f.path, ec);
    if (ec)
      throw_user_error(fmt::format("cannot read {}: {}", (dir / f.path).string(), ec.message()));
    std::string entry = fmt::format("{{\"path\": {}, \"kind\": {}, \"bytes\": {}", quote(f.path),
                                    quote(f.kind), bytes);
    if (f.kind != kUnhashedKind)
      entry += fmt::format(", \"xxh3_128\": {}", quote(file_hash(dir / f.path)));
    files.push_back(entry + "}");
  }
  std::vector<std::string> limits;
  for (const InputLimit& l : record.limits)
    limits.push_back(
        fmt::format("{{\"input\": {}, \"dim\": {}, \"min\": {}, \"max\": {}, "
                    "\"reason\": {}}}",
                    quote(l.input), l.dim, l.min, l.max, quote(l.reason)));
  for (const auto& [name, size] : record.bindings)
    bindings.push_back(fmt::format("{}: {}", quote(name), size));
  std::vector<std::string> frozen;
  for (const std::string& name : record.frozen_inputs) frozen.push_back(quote(name));
  std::string text = fmt::format(
      "{{\n  \"format\": {},\n  \"format_version\": {},\n  \"rlx_version\": {},\n"
      "  \"model\": {},\n  \"target\": {},\n  \"plugin_version\": {},\n  \"plugin_abi\": {},\n"
      "  \"requires\": {},\n  \"bindings\": {{{}}},\n  \"frozen_inputs\": [{}],\n  \"program\": {},\n  \"inputs\": {},\n"
      "  \"outputs\": {},\n  \"input_limits\": [{}],\n  \"compile_ms\": {:.3f},\n  \"files\": [\n  "
      "  {}\n  ]\n}}\n",
      quote(kCompiledFolderFormat), kCompiledFolderVersion, quote(RLX_PROJECT_VERSION),
      quote(record.model), quote(record.target), quote(plugin->version), quote(plugin->abi), needs,
      fmt::join(bindings, ", "), fmt::join(frozen, ", "), quote(record.program), specs_json(program, program.inputs),
      specs_json(program, program.outputs), fmt::join(limits, ", "), record.compile_ms,
      fmt::join(files, ",\n    "));
  std::ofstream out(dir / kManifest, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw_user_error(fmt::format("cannot write {}", (dir / kManifest).string()));
}

bool is_compiled_folder(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec) || !fs::is_regular_file(path / kManifest, ec)) return false;
  // A model folder of another kind could hold a file called manifest.json: ours names its format
  // (or, from an older rlx, lies beside model.lir).
  if (fs::exists(path / "model.lir", ec)) return true;
  std::ifstream in(path / kManifest, std::ios::binary);
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return head.find(kCompiledFolderFormat) != std::string::npos;
}

struct CompiledFolder::State {
  std::string target_name, model;
  std::vector<TensorSpec> inputs, outputs;
  std::map<std::string, int64_t> bindings;
  InputLimits limits;
  double compile_ms = 0, load_ms = 0;
  std::shared_ptr<Target> target;
  lir::Program program;
  std::unique_ptr<Executable> exe;
  std::vector<void*> ptrs;  // the binding table, constants filled in once
};

CompiledFolder CompiledFolder::load(const Registry& reg, const fs::path& dir,
                                    const std::string& target) {
  const auto start = std::chrono::steady_clock::now();
  const fs::path manifest = dir / kManifest;
  std::ifstream in(manifest, std::ios::binary);
  if (!in)
    throw CompiledFolderError(
        fmt::format("{} has no {}: it is not a folder rlx compile wrote", dir.string(), kManifest),
        "write one with: rlx compile MODEL --target T -o DIR");
  json::Value doc;
  try {
    doc = json::parse(std::string((std::istreambuf_iterator<char>(in)), {}));
  } catch (const std::exception& e) {
    throw CompiledFolderError(fmt::format("{} is not valid JSON: {}", manifest.string(), e.what()),
                              "the manifest is damaged; compile the model again with rlx compile");
  }
  auto st = std::make_shared<State>();
  const json::Value* format = doc.find("format");
  const json::Value* version = doc.find("format_version");
  const std::string recorded_model = doc.find("model") && doc.find("model")->as_string()
                                         ? *doc.find("model")->as_string()
                                         : std::string();
  const std::string recorded_target = doc.find("target") && doc.find("target")->as_string()
                                          ? *doc.find("target")->as_string()
                                          : std::string();
  const std::string again =
      recompile_hint(recorded_model, target.empty() ? recorded_target : target, dir);
  if (!format || !format->as_string() || *format->as_string() != kCompiledFolderFormat)
    throw CompiledFolderError(
        fmt::format("{} is not the manifest of a loadable compiled folder (written by an older "
                    "rlx, or by something else)",
                    manifest.string()),
        again);
  std::optional<int64_t> v =
      version && version->as_number() ? version->as_number()->as_i64() : std::nullopt;
  if (v != kCompiledFolderVersion)
    throw CompiledFolderError(
        fmt::format("{} has format version {}; this rlx loads version {}", manifest.string(),
                    v ? std::to_string(*v) : "(none)", kCompiledFolderVersion),
        again);

  // Which target: the folder's, and a named one must be it.
  st->target_name = string_of(doc, "target", manifest);
  st->model = recorded_model;
  if (!target.empty() && target != st->target_name)
    throw CompiledFolderError(
        fmt::format("{} was compiled for target '{}', not '{}'", dir.string(), st->target_name,
                    target),
        fmt::format("leave --target out to run it on {}, or {}", st->target_name,
                    recompile_hint(recorded_model, target, dir)));
  const std::string rlx_version = string_of(doc, "rlx_version", manifest);
  if (rlx_version != RLX_PROJECT_VERSION)
    throw CompiledFolderError(fmt::format("{} was compiled by rlx {}; this is rlx {}", dir.string(),
                                          rlx_version, RLX_PROJECT_VERSION),
                              again);
  st->target = reg.target(st->target_name);  // throws with the reason when it cannot be used
  std::optional<PluginRecord> plugin = reg.target_record(st->target_name);
  if (!plugin) throw_internal_error("a loaded target has no plugin record");
  const std::string plugin_version = string_of(doc, "plugin_version", manifest);
  const std::string plugin_abi = string_of(doc, "plugin_abi", manifest);
  if (plugin_version != plugin->version || plugin_abi != plugin->abi)
    throw CompiledFolderError(
        fmt::format("{} was compiled with the {} plugin {} (ABI {}); the one here is {} (ABI {}, "
                    "{})",
                    dir.string(), st->target_name, plugin_version, plugin_abi, plugin->version,
                    plugin->abi, plugin->library_path.string()),
        again);
  if (Verdict can = st->target->can_execute(); !can.ok)
    throw CompiledFolderError(
        fmt::format("target '{}' cannot execute on this machine: {}", st->target_name, can.reason),
        "run the folder on a machine where the target is available");
  if (st->target->program_level() != ProgramLevel::kLir)
    throw CompiledFolderError(
        fmt::format("target '{}' compiles the MIR graph, and a compiled folder holds LIR: it "
                    "cannot be loaded yet",
                    st->target_name),
        "run the model itself: rlx run MODEL --target " + st->target_name);

  // The machine: what the target's native code needs (cpu: architecture, ISA level).
  const json::Value& needs = member(doc, "requires", manifest);
  const sdk::RlxDeployableV1* ext = deployable(*st->target);
  const bool has_requirements = needs.as_object() && !needs.as_object()->empty();
  if (has_requirements) {
    if (!ext)
      throw CompiledFolderError(fmt::format("{} requires what the {} plugin here cannot check",
                                            dir.string(), st->target_name),
                                again);
    std::string text = "{";
    for (const json::Member& m : *needs.as_object())
      text += fmt::format("{}{}: {}", text.size() > 1 ? ", " : "", quote(m.first),
                          m.second.as_string() ? quote(*m.second.as_string()) : "null");
    text += "}";
    if (const char* why = ext->check(text.c_str()))
      throw CompiledFolderError(
          fmt::format("{} does not run on this machine: {}", dir.string(), why), again);
  }

  // The files: each present, of its size, with its content.
  const json::Array* files = member(doc, "files", manifest).as_array();
  if (!files)
    throw CompiledFolderError(fmt::format("{}: \"files\" is not a list", manifest.string()), again);
  for (const json::Value& f : *files) {
    const json::Value* path = f.find("path");
    const json::Value* bytes = f.find("bytes");
    if (!path || !path->as_string() || !bytes || !bytes->as_number())
      throw CompiledFolderError(fmt::format("{}: a file entry is malformed", manifest.string()),
                                again);
    const fs::path file = dir / *path->as_string();
    std::error_code ec;
    if (!fs::is_regular_file(file, ec))
      throw CompiledFolderError(fmt::format("{} is missing", file.string()),
                                "restore the folder as rlx compile wrote it, or " + again);
    const auto size = fs::file_size(file, ec);
    if (ec || static_cast<int64_t>(size) != bytes->as_number()->as_i64().value_or(-1))
      throw CompiledFolderError(fmt::format("{} is damaged: {} bytes, the manifest records {}",
                                            file.string(), size, bytes->as_number()->raw),
                                "restore the folder as rlx compile wrote it, or " + again);
    if (const json::Value* hash = f.find("xxh3_128"); hash && hash->as_string())
      if (file_hash(file) != *hash->as_string())
        throw CompiledFolderError(
            fmt::format("{} is damaged: its content differs from what rlx compile wrote",
                        file.string()),
            "restore the folder as rlx compile wrote it, or " + again);
  }

  st->inputs = read_specs(doc, "inputs", manifest);
  st->outputs = read_specs(doc, "outputs", manifest);
  if (const json::Value* b = doc.find("bindings"); b && b->as_object())
    for (const json::Member& m : *b->as_object())
      if (m.second.as_number() && m.second.as_number()->as_i64())
        st->bindings[m.first] = *m.second.as_number()->as_i64();
  if (const json::Value* list = doc.find("input_limits"); list && list->as_array())
    for (const json::Value& l : *list->as_array()) {
      auto integer = [&](const char* key) {
        const json::Value* v = l.find(key);
        std::optional<int64_t> n = v && v->as_number() ? v->as_number()->as_i64() : std::nullopt;
        if (!n)
          throw CompiledFolderError(
              fmt::format("{}: an input limit lacks \"{}\"", manifest.string(), key), again);
        return *n;
      };
      const json::Value* input = l.find("input");
      const json::Value* reason = l.find("reason");
      st->limits.push_back({input && input->as_string() ? *input->as_string() : "", integer("dim"),
                            integer("min"), integer("max"),
                            reason && reason->as_string() ? *reason->as_string() : ""});
    }
  if (const json::Value* ms = doc.find("compile_ms"); ms && ms->as_number())
    st->compile_ms = ms->as_number()->value;

  try {
    st->program = lir::read_program((dir / string_of(doc, "program", manifest)).string());
  } catch (const Error& e) {
    throw CompiledFolderError(e.what(), "restore the folder as rlx compile wrote it, or " + again);
  }
  if (ext)
    if (const char* why = ext->use_prebuilt(dir.c_str()))
      throw CompiledFolderError(fmt::format("the {} plugin cannot use the code in {}: {}",
                                            st->target_name, dir.string(), why),
                                again);
  st->exe = st->target->compile(st->program);
  st->ptrs.assign(st->program.buffers.size(), nullptr);
  for (const lir::Buffer& b : st->program.buffers)
    if (b.kind == lir::BufferKind::kConstant)
      st->ptrs[b.id] = const_cast<void*>(static_cast<const void*>(b.data.data()));
  st->load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  CompiledFolder folder;
  folder.state_ = std::move(st);
  return folder;
}

const std::string& CompiledFolder::target_name() const {
  return state_->target_name;
}
const std::string& CompiledFolder::model() const {
  return state_->model;
}
const std::vector<TensorSpec>& CompiledFolder::inputs() const {
  return state_->inputs;
}
const std::vector<TensorSpec>& CompiledFolder::outputs() const {
  return state_->outputs;
}
const std::map<std::string, int64_t>& CompiledFolder::bindings() const {
  return state_->bindings;
}
double CompiledFolder::compile_ms() const {
  return state_->compile_ms;
}
double CompiledFolder::load_ms() const {
  return state_->load_ms;
}

NamedTensors CompiledFolder::run(const NamedTensors& inputs) {
  NamedTensors outputs;
  run(inputs, outputs);
  return outputs;
}

void CompiledFolder::run(const NamedTensors& inputs, NamedTensors& outputs) {
  State& st = *state_;
  const lir::Program& p = st.program;
  for (const auto& [name, t] : inputs)
    if (std::none_of(p.inputs.begin(), p.inputs.end(),
                     [&](const auto& in) { return in.first == name; })) {
      std::vector<std::string> names;
      for (const auto& in : p.inputs) names.push_back(in.first);
      throw_user_error(fmt::format("unknown input '{}': the model's inputs are {}", name,
                                   fmt::join(names, ", ")));
    }
  // The program was compiled for these exact shapes: anything else is refused, never adapted.
  for (const auto& [name, b] : p.inputs) {
    auto it = inputs.find(name);
    if (it == inputs.end()) throw_user_error(fmt::format("input '{}' is missing", name));
    const lir::Buffer& buf = p.buffers[b];
    if (it->second.dtype() != buf.dtype || it->second.shape() != buf.shape)
      throw_user_error(fmt::format(
          "input '{}' is {}{}, the compiled model takes {}[{}] (sizes are fixed when compiling: "
          "compile again with other --bind sizes for other shapes)",
          name, dtype_name(it->second.dtype()), it->second.shape_str(), dtype_name(buf.dtype),
          fmt::join(buf.shape, ",")));
    st.ptrs[b] = const_cast<void*>(it->second.data());
  }
  // Before anything runs, so no kernel indexes a table with a bad id.
  check_input_limits(st.limits, inputs);
  std::vector<const Tensor*> bound;
  for (const auto& [name, b] : p.outputs) {
    const lir::Buffer& buf = p.buffers[b];
    auto it = outputs.find(name);
    bool reuse = it != outputs.end() && it->second.defined() && it->second.dtype() == buf.dtype &&
                 it->second.shape() == buf.shape;
    for (auto in = inputs.begin(); reuse && in != inputs.end(); ++in)
      reuse = !overlaps(it->second, in->second);
    for (const Tensor* other : bound) reuse = reuse && !overlaps(it->second, *other);
    if (!reuse) outputs[name] = Tensor(buf.dtype, buf.shape);
    const Tensor& t = outputs[name];
    st.ptrs[b] = const_cast<void*>(t.data());
    bound.push_back(&t);
  }
  st.exe->run(st.ptrs);
}

}  // namespace rlx::registry
