// The textual form of HIR/MIR graphs. print_graph(parse_graph(t)) reproduces t exactly for text
// in canonical form, and parse_graph(print_graph(g)) rebuilds g.
//
//   graph @mlp(%x: f32[B,4]) params(%w: f32[4,8]) {
//     %h = MatMul(%x, %w) : f32[B,8] loc("fc1")
//     %y = GELU(%h) {approximate = "tanh"} : f32[B,8]
//     return %y
//   }
#pragma once
#include <filesystem>
#include <string>
#include <string_view>

#include "rlx/core/graph.h"

namespace rlx {

std::string print_graph(const Graph& g);
// `source` names the text in error messages ("model.rlx"); errors carry line:column.
Graph parse_graph(std::string_view text, const std::string& source = "<text>");
// Reads an IR file and binds params from `weights` (default: the file with the same stem and a
// .safetensors extension, when the graph has params).
Graph load_graph_file(const std::filesystem::path& path);

}  // namespace rlx
