// Compiled folders: what `rlx compile MODEL --target T -o DIR` writes, loaded again without the
// model, the importer or a recompile, as IREE loads a .vmfb. The folder holds the LIR program
// (model.lir and its constants' side files), the target's artifacts and manifest.json, which
// says what a loader must check before it trusts the rest: the format's version, the rlx and
// plugin versions and the plugin ABI it was built with, the target, what the target's native
// code needs of the machine (cpu: architecture and ISA level), the bound sizes, the inputs and
// outputs, and every file with its size (and a content hash, weights aside).
//
// It lives in the registry because loading one is finding its target's plugin and asking it
// (through the "rlx.deployable" extension, rlx/sdk/deployable.h) to check the machine and to
// take its prebuilt code; core stays free of plugins.
//
//   auto folder = rlx::registry::CompiledFolder::load(registry, "out/");   // checks, no compile
//   rlx::NamedTensors outputs = folder.run({{"ids", ids}});
#pragma once
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rlx/core/error.h"
#include "rlx/core/input_limits.h"
#include "rlx/core/lir.h"
#include "rlx/core/runtime.h"
#include "rlx/core/target.h"
#include "rlx/registry/registry.h"

namespace rlx::registry {

inline constexpr const char* kCompiledFolderFormat = "rlx-compiled-folder";
// Raised when the manifest's meaning changes; a loader refuses any other version.
inline constexpr int kCompiledFolderVersion = 1;

// Why a folder cannot be loaded here (another target, plugin version or CPU; a damaged or
// missing file), and what to do about it: a user error.
class CompiledFolderError : public Error {
 public:
  CompiledFolderError(std::string message, std::string remedy)
      : Error(ErrorKind::kUser, std::move(message)), remedy_(std::move(remedy)) {}
  const std::string& remedy() const { return remedy_; }

 private:
  std::string remedy_;
};

struct TensorSpec {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
};

// What the compiler knows that the manifest records besides what it reads from the program and
// the registry.
struct CompileRecord {
  std::string model;                        // the model file compiled (absolute)
  std::string target;                       // its name
  std::map<std::string, int64_t> bindings;  // the sizes of the symbolic dims
  std::vector<Artifact> files;              // every file written into the folder but the manifest
  std::string program;                      // the LIR text among them ("model.lir")
  double compile_ms = 0;                    // wall time of the whole compile
  InputLimits limits;  // the model's limits on input values (input_limits.h), checked per run
  // Graph inputs the importer froze to the values given at compile time (frozen_inputs.h): the
  // folder's program no longer takes them.
  std::vector<std::string> frozen_inputs;
};

// Writes dir/manifest.json for `program` (the LIR in the folder), compiled for `target`.
void write_compiled_folder_manifest(const Registry& reg, Target& target,
                                    const lir::Program& program, const std::filesystem::path& dir,
                                    const CompileRecord& record);

// Whether `path` is a compiled folder: a manifest.json naming the format, or one beside a
// model.lir (an older rlx's, which load() refuses with that reason).
bool is_compiled_folder(const std::filesystem::path& path);

class CompiledFolder {
 public:
  // Reads and checks the folder, then compiles its LIR for the target with the folder's
  // prebuilt code (for cpu: no C compiler runs). `target` empty means the manifest's; a
  // different name is refused. Throws CompiledFolderError when the folder does not fit this
  // machine or is damaged.
  static CompiledFolder load(const Registry& reg, const std::filesystem::path& dir,
                             const std::string& target = "");

  const std::string& target_name() const;
  const std::string& model() const;  // the model it was compiled from
  const std::vector<TensorSpec>& inputs() const;
  const std::vector<TensorSpec>& outputs() const;
  const std::map<std::string, int64_t>& bindings() const;
  double compile_ms() const;  // as the manifest records it
  double load_ms() const;     // what load() took

  // Inputs by name, each of exactly the recorded dtype and shape and within the model's input
  // limits (token ids inside the vocabulary, ...); outputs by name.
  NamedTensors run(const NamedTensors& inputs);
  // Like run(), reusing a tensor of `outputs` of the right dtype and shape that shares no memory
  // with an input, so a loop allocates nothing after its first run.
  void run(const NamedTensors& inputs, NamedTensors& outputs);

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace rlx::registry
