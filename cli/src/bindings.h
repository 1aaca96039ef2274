// Sizes of symbolic dims given on the command line (--bind NAME=SIZE; bench adds --batch and
// --seq), in one place for compile, explain and bench. A size reaches the importer first (ONNX
// and rten fix the dims they cannot keep symbolic, such as a reflect Pad's `seq + 128`), then
// binds what stays symbolic when the model is lowered.
#pragma once
#include <string>
#include <vector>

#include "rlx/core/graph.h"
#include "rlx/core/model.h"
#include "rlx/core/shape.h"

namespace CLI {
class App;
}

namespace rlx::cli {

// The --bind NAME=SIZE option of a command (repeatable), with its help text.
void add_bind_option(CLI::App& app, std::vector<std::string>& into, const std::string& help);

// NAME=SIZE specs -> sizes (syntax only: a name, an integer >= min_size, each name once).
Bindings parse_bind_specs(const std::vector<std::string>& specs, int64_t min_size);

// What the importer gets from sizes the user gave.
ImportOptions import_options_for(const Bindings& sizes);

// Checks sizes given as `option` against the imported model: each name must be a symbol of
// `graph` or a dim the importer fixed (Model metadata kFixedDimsKey); returns the sizes of the
// symbols that remain. `given_as` turns a name into the option that gave it, for messages.
Bindings sizes_for_graph(const Bindings& sizes, const Graph& graph, const Model& model,
                         std::string (*given_as)(const std::string& name));

// The graph's symbols without a size, "a, b" (empty when none).
std::string unsized_symbols(const Bindings& sizes, const Graph& graph);

}  // namespace rlx::cli
