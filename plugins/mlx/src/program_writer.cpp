// The standalone program: the graph is built once by graph_builder.cpp with a CallRecorder
// attached, on placeholder arrays that are never evaluated (MLX arrays are lazy: building the
// graph computes shapes and dtypes only), and the calls it made become forward()'s body.
#include "program_writer.h"

#include <fmt/format.h>
#include <mlx/ops.h>

#include <fstream>

#include "graph_builder.h"
#include "mlx_calls.h"
#include "mlx_dtypes.h"
#include "program_source.h"
#include "rlx/core/error.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/safetensors.h"

namespace rlx::mlx_target {

namespace mx = mlx::core;

namespace {

void write_text(const std::filesystem::path& file, const std::string& text) {
  std::ofstream f(file, std::ios::binary);
  f << text;
  if (!f) throw_user_error(fmt::format("mlx: cannot write {}", file.string()));
}

std::string type_text(const TensorType& t) {
  std::string shape;
  for (const Dim& d : t.shape) shape += (shape.empty() ? "" : ", ") + d.str();
  return fmt::format("{}[{}]", dtype_name(t.dtype), shape);
}

// forward() reads its tensors by position (inputs) and by name (weights, constants); each becomes
// a named placeholder for the builder, and a line of forward() that names it.
class ProgramArgs {
 public:
  ProgramArgs(CallRecorder& recorder, std::vector<std::string>& body)
      : recorder_(recorder), body_(body) {}

  void add(const TensorType& t, const std::string& var, const std::string& source,
           const std::string& what) {
    // Lazy: the zeros are never made, only their shape and dtype are read.
    mx::array placeholder = mx::zeros(mlx_shape(t), to_mlx(t.dtype));
    recorder_.bind(placeholder, var);
    body_.push_back(
        fmt::format("const mx::array {} = {};  // {}: {}", var, source, what, type_text(t)));
    arrays_.push_back(placeholder);
  }
  const std::vector<mx::array>& arrays() const { return arrays_; }

 private:
  CallRecorder& recorder_;
  std::vector<std::string>& body_;
  std::vector<mx::array> arrays_;
};

void require_static(const Graph& g) {
  for (ValueId v : g.inputs)
    for (const Dim& d : g.type(v).shape)
      if (!d.is_static())
        throw_user_error(fmt::format(
            "mlx: the input %{} is {}; the standalone program is written for one shape: bind "
            "every symbolic dim (rlx compile --bind NAME=SIZE)",
            g.values[v].name, type_text(g.type(v))));
}

ProgramTensor program_tensor(const CallRecorder& text, const Graph& g, ValueId v) {
  const TensorType& t = g.type(v);
  return {text.spell(g.values[v].name), text.spell(to_mlx(t.dtype)), text.spell(mlx_shape(t))};
}

// The name of the k-th constant in weights.safetensors: one no weight of the graph has.
std::string constant_name(const Graph& g, size_t k) {
  std::string name = fmt::format("rlx.constant.{}", k);
  while (g.weights.count(name)) name += "_";
  return name;
}

}  // namespace

std::vector<Artifact> write_program(const Graph& g, const std::filesystem::path& dir) {
  require_static(g);
  CallRecorder recorder;
  ProgramParts parts;
  parts.graph = g.name;
  ProgramArgs args(recorder, parts.body);
  TensorMap weights;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const ValueId v = g.inputs[i];
    args.add(g.type(v), fmt::format("in{}", i), fmt::format("inputs.at({})", i),
             "input %" + g.values[v].name);
    parts.inputs.push_back(program_tensor(recorder, g, v));
  }
  for (size_t i = 0; i < g.params.size(); ++i) {
    const std::string& name = g.values[g.params[i]].name;
    auto w = g.weights.find(name);
    if (w == g.weights.end())
      throw_user_error(fmt::format(
          "mlx: the weight '{}' has no data, so weights.safetensors cannot hold it; load the "
          "model's weights before compiling",
          name));
    weights[name] = w->second;
    args.add(g.type(g.params[i]), fmt::format("w{}", i),
             fmt::format("weights.at({})", recorder.spell(name)), "weight %" + name);
  }
  size_t k = 0;
  for (const Node& n : g.nodes) {
    if (n.op != "constant") continue;
    const std::string name = constant_name(g, k);
    weights[name] = n.attr_tensor("value");
    args.add(g.type(n.outputs.at(0)), fmt::format("c{}", k),
             fmt::format("weights.at({})", recorder.spell(name)),
             "constant %" + g.values[n.outputs.at(0)].name);
    ++k;
  }

  const std::vector<mx::array> results = build(g, args.arrays(), &recorder);
  parts.body.insert(parts.body.end(), recorder.lines().begin(), recorder.lines().end());
  for (const mx::array& r : results) parts.results.push_back(recorder.name_of(r));
  // Every output, one returned twice included (main() saves it once): the index checks follow
  // them in forward()'s results.
  for (ValueId v : g.outputs) parts.outputs.push_back(program_tensor(recorder, g, v));
  parts.checks = index_checks(g);

  write_safetensors(dir / "weights.safetensors", weights,
                    {{"producer", "rlx compile --target mlx"}, {"graph", g.name}});
  write_text(dir / "model.cpp", program_source(parts));
  write_text(dir / "CMakeLists.txt", program_cmake(g.name));
  write_text(dir / "model.mir", print_graph(g));
  return {{"model.cpp", "cpp-source"},
          {"weights.safetensors", "safetensors"},
          {"CMakeLists.txt", "cmake"},
          {"model.mir", "mir"}};
}

}  // namespace rlx::mlx_target
