// The text of the standalone MLX program (program_writer.h): model.cpp around the calls the graph
// builder recorded, and the CMakeLists.txt that builds it against an MLX install.
#pragma once
#include <string>
#include <vector>

#include "graph_builder.h"

namespace rlx::mlx_target {

// An input or output of the program: its name in the safetensors files, its type as C++ text.
struct ProgramTensor {
  std::string name;   // as a C++ string literal
  std::string dtype;  // "mx::float32"
  std::string shape;  // "mx::Shape{2, 4}"
};

// What model.cpp says about one graph.
struct ProgramParts {
  std::string graph;                  // the graph's name, for comments
  std::vector<ProgramTensor> inputs;  // in the order forward() takes them
  std::vector<ProgramTensor> outputs;
  std::vector<IndexCheck> checks;  // one per top-level gather/scatter, in order
  // forward()'s body: the lines naming its inputs and weights, then the recorded calls.
  std::vector<std::string> body;
  std::vector<std::string> results;  // the C++ names forward() returns, outputs then checks
};

std::string program_source(const ProgramParts& parts);
std::string program_cmake(const std::string& graph);

}  // namespace rlx::mlx_target
