// What run and bench share for a compiled folder (`rlx compile -o DIR`, then `rlx run DIR`):
// loading it through the registry's CompiledFolder, its refusals turned into messages with what
// to do, and the folder's inputs in the form the input readers take.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include "commands.h"
#include "rlx/core/graph.h"
#include "rlx/registry/compiled_folder.h"

namespace rlx::cli {

// Loads DIR for `target` (nullopt: the target the folder was compiled for). A folder that does
// not fit this machine or is damaged is a CliError saying why and how to compile it again. With
// `global.verbose`, the load time and the recorded compile time go to stderr.
registry::CompiledFolder load_compiled_folder(const GlobalOptions& global,
                                              const std::filesystem::path& dir,
                                              const std::optional<std::string>& target);

// A graph holding only the folder's inputs, with their fixed types: what match_inputs and the
// made-up inputs of bench read.
Graph folder_inputs_graph(const registry::CompiledFolder& folder);

// Refuses an option that changes how a model compiles (--graph, --q8-activations, --kv-cache)
// for a folder, whose compile is done: `given` says whether the option was on the command line.
void refuse_compile_option(bool given, const std::string& option, const std::string& dir);

}  // namespace rlx::cli
