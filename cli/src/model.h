// What explain, run and compile share: finding the plugins, choosing the target and loading the
// model.
#pragma once
#include "options.h"
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "commands.h"
#include "rlx/core/graph.h"
#include "rlx/core/model.h"
#include "rlx/core/precision.h"
#include "rlx/core/safetensors.h"
#include "rlx/core/target.h"
#include "rlx/registry/registry.h"

namespace rlx::cli {

// Discovers plugins once per process. The registry is never destroyed: the targets it hands out
// live in its libraries, and an error report or a static destructor running after an unload
// would touch unmapped code.
const registry::Registry& plugin_registry(const GlobalOptions& global, bool build_legality);

// `rlx --list-targets --json` (with -v: `verbose`): the same document for every caller.
std::string list_targets_json(const registry::Registry& reg, bool verbose);

// The target named by --target ("auto": target_choice.h); a user error (with the registry's reason)
// when it is unknown or cannot be used here.
std::shared_ptr<Target> choose_target(const registry::Registry& reg, const std::string& name);

// Refuses, before any work, a target that can compile but not run here (codegen-only).
void require_can_execute(Target& target, const std::string& target_name,
                         const std::string& model_path);

// Loads MODEL: an importer claims it (folder marker, magic bytes or extension), otherwise it is
// read as IR text (with the sibling .safetensors holding its params). When neither works and an
// importer that claims it cannot be used, the error names that importer and why.
// `options` reach the importer (sizes from --bind, input shapes from --inputs); IR text takes
// none. `read_by`, when given, receives the name of the importer that read it ("" for IR text).
Model load_model(const registry::Registry& reg, const std::filesystem::path& path,
                 const ImportOptions& options = {}, std::string* read_by = nullptr);

// Reads an --inputs folder through the importer that reads `model_path` (ONNX test data:
// input_0.pb, ... in the order of the model's inputs); a user error when no importer claims the
// model or its format stores no inputs in files.
TensorMap read_input_folder(const registry::Registry& reg, const std::filesystem::path& model_path,
                            const std::filesystem::path& folder);

// The file an option such as --output names, checked before any work: a user error naming
// `option` when its folder does not exist. nullopt when the option is not given.
std::optional<std::filesystem::path> writable_path(const std::optional<std::string>& given,
                                                   const char* option);

// --q8-activations: every graph's quantized products round activations to 8-bit blocks
// (set_quantized_activations); a user error when the model has no such product.
void use_q8_activations(Model& model, const std::string& model_path);

// --precision MODE: every graph of model narrowed as apply_precision does, with a note on stderr
// saying how much changed; a user error when MODE is not f32 and the model has no f32 computation
// to narrow. Returns the reports by graph name (empty for f32).
// --allow-tf32 too: every f32 product of the model is marked (allow_tf32), listed in the reports.
std::map<std::string, PrecisionReport> use_precision(Model& model, const PrecisionOptions& options,
                                                     const std::string& model_path);

// --kv-cache DTYPE: the KV cache of model's graph `graph` (its past_* inputs and the present_*
// outputs written from them) is kept in `dtype` (llm::set_kv_cache_dtype); a user error when
// that graph has no KV cache.
void use_kv_cache(Model& model, const std::string& graph, DType dtype,
                  const std::string& model_path);

}  // namespace rlx::cli
