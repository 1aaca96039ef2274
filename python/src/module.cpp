// rlx._rlx: the Python face of the runtime. It binds what the CLI's commands use (the registry,
// the model loader, Session and CompiledModel) rather than re-implementing them, so a model, a
// target list or an error reads the same from Python as from `rlx`. python/rlx/ wraps it.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <mutex>

#include "arrays.h"
#include "bindings.h"  // the CLI's: sizes_for_graph (checks bind= as --bind)
#include "errors.h"    // the CLI's: UsageError
#include "exceptions.h"
#include "model.h"  // the CLI's: plugin_registry, load_model, list_targets_json
#include "model_handle.h"
#include "rlx/core/error.h"
#include "rlx/core/passes.h"
#include "rlx/core/runtime.h"

namespace nb = nanobind;

namespace rlx::python {

const registry::Registry& the_registry() {
  return cli::plugin_registry(cli::GlobalOptions{}, /*build_legality=*/false);
}

std::shared_ptr<Target> executing_target(const std::string& name, const std::string& model_path) {
  std::shared_ptr<Target> target = cli::choose_target(the_registry(), name);
  cli::require_can_execute(*target, name, model_path);
  return target;
}

void bind_embed(nb::module_& m);     // embed.cpp
void bind_generate(nb::module_& m);  // generate.cpp

namespace {

// ("batch", 128) for f32[batch,128]: sizes as ints, symbolic dims by name.
nb::tuple shape_tuple(const Shape& shape) {
  nb::list dims;
  for (const Dim& d : shape) {
    if (d.is_static())
      dims.append(nb::int_(d.value));
    else
      dims.append(nb::str(d.sym.c_str()));
  }
  return nb::tuple(dims);
}

// [(name, dtype, shape)] of the graph's inputs or outputs.
nb::list tensor_infos(const Graph& g, const std::vector<ValueId>& ids) {
  nb::list out;
  for (ValueId v : ids) {
    const Value& value = g.values[v];
    out.append(nb::make_tuple(nb::str(value.name.c_str()),
                              nb::str(std::string(dtype_name(value.type.dtype)).c_str()),
                              shape_tuple(value.type.shape)));
  }
  return out;
}

// The precisions compile(precision=) offers: the model's own dtypes (None or "f32": nothing is
// changed), or "q8", products with block-quantized weights taking activations rounded to 8-bit
// blocks (`rlx run --q8-activations`, set_quantized_activations).
constexpr const char* kPrecisions =
    "None, \"f32\" (the model's own dtypes) or \"q8\" (8-bit "
    "activations for block-quantized products)";

std::string bind_argument(const std::string& name) {
  return "bind['" + name + "']";
}

// The graph `name` of the model as compile() is asked for it: symbols bound, precision applied.
Graph graph_to_compile(const Model& model, const std::string& name,
                       const std::map<std::string, int64_t>& bind,
                       const std::optional<std::string>& precision) {
  Graph g = model.graph(name);
  if (precision && *precision != "f32") {
    if (*precision != "q8")
      throw cli::UsageError(
          fmt::format("precision='{}' is not one rlx offers; it offers {}", *precision,
                      kPrecisions),
          "leave precision out to run in the model's own dtypes (rlx converts nothing on its "
          "own)");
    if (set_quantized_activations(g, "q8") == 0)
      throw_user_error(fmt::format(
          "precision='q8': the '{}' graph has no products with block-quantized weights (it "
          "applies to GGUF models stored as Q4_0, Q4_K, Q8_0, ...); leave precision out",
          name));
  }
  for (const auto& [symbol, size] : bind)
    if (size < 1)
      throw_user_error(fmt::format("{} = {}: a size is at least 1", bind_argument(symbol), size));
  Bindings sizes =
      cli::sizes_for_graph(Bindings(bind.begin(), bind.end()), g, model, &bind_argument);
  return sizes.empty() ? g : specialize(g, sizes);
}

struct PyCompiled {
  std::shared_ptr<const Model> model;   // what the compiled graph came from
  std::shared_ptr<const Graph> source;  // the graph compiled (bound and converted as asked)
  std::string graph;
  std::shared_ptr<Target> target;
  CompiledModel compiled;
  std::unique_ptr<std::mutex> running = std::make_unique<std::mutex>();  // not thread-safe

  // Runs with the GIL released; returns the outputs named in `wanted` (all when empty) as NumPy
  // arrays over rlx's buffers.
  nb::dict run(nb::handle inputs, const std::vector<std::string>& wanted) {
    NamedTensors given = tensors_of(inputs);
    NamedTensors outputs;
    {
      nb::gil_scoped_release no_gil;
      std::lock_guard<std::mutex> lock(*running);
      outputs = compiled.run(given);
    }
    nb::dict result;
    if (wanted.empty()) {
      for (ValueId v : source->outputs) {
        const std::string& name = source->values[v].name;
        if (auto it = outputs.find(name); it != outputs.end())
          result[name.c_str()] = numpy_from_tensor(it->second);
      }
      return result;
    }
    for (const std::string& name : wanted)
      result[name.c_str()] = numpy_from_tensor(output(outputs, name));
    return result;
  }

  // Runs writing each output named in `into` ({name: array}) into that array (checked: its
  // dtype, rank, layout; its shape after the run, when the output's is known); returns `into`.
  nb::dict run_into(nb::handle inputs, nb::dict into) {
    NamedTensors given = tensors_of(inputs);
    NamedTensors outputs;
    std::map<std::string, const void*> targets;
    for (auto [key, value] : into) {
      std::string name = nb::cast<std::string>(key);
      const Value& v = source->values[output_id(name)];
      Tensor t = output_view(value, name, v.type.dtype, v.type.shape.size());
      targets.emplace(name, t.data());
      outputs.emplace(name, std::move(t));
    }
    {
      nb::gil_scoped_release no_gil;
      std::lock_guard<std::mutex> lock(*running);
      compiled.run(given, outputs);
    }
    for (const auto& [name, data] : targets) {
      const Tensor& got = outputs.at(name);
      if (got.data() == data) continue;  // written in place
      // The runtime wrote elsewhere: the array's shape is not the output's (or the output is
      // an input it updates in place), so it cannot take the result as it is.
      nb::object array = into[name.c_str()];
      std::vector<int64_t> shape;
      for (nb::handle d : nb::tuple(array.attr("shape"))) shape.push_back(nb::cast<int64_t>(d));
      if (shape != got.shape())
        throw_user_error(
            fmt::format("outputs['{}'] has shape {}, and this run's output is {}{}: "
                        "give an array of that shape",
                        name, fmt::format("[{}]", fmt::join(shape, ",")), dtype_name(got.dtype()),
                        got.shape_str()));
      Tensor dest = output_view(array, name, got.dtype(), got.rank());
      std::memcpy(dest.data(), got.data(), got.nbytes());
    }
    return into;
  }

 private:
  NamedTensors tensors_of(nb::handle inputs) const {
    NamedTensors given;
    for (auto [key, value] : nb::borrow<nb::dict>(inputs)) {
      std::string name = nb::cast<std::string>(key);
      given.emplace(name, tensor_from_python(value, name));
    }
    return given;
  }

  std::string output_names() const {
    std::string names;
    for (ValueId v : source->outputs) names += (names.empty() ? "" : ", ") + source->values[v].name;
    return names;
  }

  ValueId output_id(const std::string& name) const {
    for (ValueId v : source->outputs)
      if (source->values[v].name == name) return v;
    throw_user_error("the model has no output '" + name + "' (its outputs: " + output_names() +
                     ")");
  }

  const Tensor& output(const NamedTensors& outputs, const std::string& name) const {
    auto it = outputs.find(name);
    if (it == outputs.end())
      throw_user_error("the model has no output '" + name + "' (its outputs: " + output_names() +
                       ")");
    return it->second;
  }
};

ImportOptions import_options(const std::map<std::string, int64_t>& bind,
                             const std::map<std::string, std::vector<int64_t>>& input_shapes,
                             nb::handle input_values) {
  ImportOptions o;
  o.dim_values = bind;
  o.input_shapes = input_shapes;
  if (!input_values.is_none())
    for (auto [key, value] : nb::borrow<nb::dict>(input_values)) {
      std::string name = nb::cast<std::string>(key);
      o.input_values.emplace(name, tensor_from_python(value, name).clone());
    }
  return o;
}

}  // namespace
}  // namespace rlx::python

NB_MODULE(_rlx, m) {
  using namespace rlx;
  using namespace rlx::python;
  m.doc() = "rlx's runtime: plugins, model loading, compiling and running (see the rlx package)";
  register_error_translator();
  bind_embed(m);
  bind_generate(m);

  m.def(
      "list_targets_json",
      [](bool verbose) { return cli::list_targets_json(the_registry(), verbose); },
      nb::arg("verbose") = false,
      "The document `rlx --list-targets --json` prints (with -v when verbose), as JSON text.");

  nb::class_<PyModel>(m, "Model", "A model read from a file or folder: its graphs and metadata.")
      .def_prop_ro("path", [](const PyModel& p) { return p.path; })
      .def_prop_ro("architecture", [](const PyModel& p) { return p.model->architecture; })
      .def_prop_ro("metadata", [](const PyModel& p) { return p.model->metadata; })
      .def_prop_ro(
          "graphs",
          [](const PyModel& p) {
            std::vector<std::string> names;
            for (const auto& [name, g] : p.model->graphs) names.push_back(name);
            return names;
          },
          "The names of the model's graphs (\"main\"; decoders \"prefill\" and \"decode\").")
      .def(
          "input_infos",
          [](const PyModel& p, const std::string& graph) {
            const Graph& g = p.model->graph(graph);
            return tensor_infos(g, g.inputs);
          },
          nb::arg("graph") = "main", "[(name, dtype, shape)] of the graph's inputs.")
      .def(
          "output_infos",
          [](const PyModel& p, const std::string& graph) {
            const Graph& g = p.model->graph(graph);
            return tensor_infos(g, g.outputs);
          },
          nb::arg("graph") = "main", "[(name, dtype, shape)] of the graph's outputs.")
      .def(
          "explain",
          [](const PyModel& p, const std::string& target_name, const std::string& graph, bool json,
             bool verbose) {
            std::shared_ptr<Target> target = cli::choose_target(the_registry(), target_name);
            const Graph& g = p.model->graph(graph);
            Session session(target);
            CompiledModel compiled = session.compile(g);
            return json ? compiled.report().to_json() : compiled.report().to_text(verbose);
          },
          nb::arg("target") = "cpu", nb::arg("graph") = "main", nb::arg("json") = false,
          nb::arg("verbose") = false,
          "The dispatch report `rlx explain` prints: each node's path, and why earlier paths "
          "refused. Raises CompileError naming the node when no path is legal.")
      .def(
          "compile",
          [](const PyModel& p, const std::string& target_name, const std::string& graph,
             const std::map<std::string, int64_t>& bind, std::optional<std::string> precision) {
            std::shared_ptr<Target> target = executing_target(target_name, p.path);
            auto c = std::make_unique<PyCompiled>();
            c->model = p.model;
            c->source =
                std::make_shared<const Graph>(graph_to_compile(*p.model, graph, bind, precision));
            c->graph = graph;
            c->target = target;
            Session session(target);
            {
              nb::gil_scoped_release no_gil;
              c->compiled = session.compile(*c->source, input_limits(*p.model));
            }
            return c;
          },
          nb::arg("target") = "cpu", nb::arg("graph") = "main",
          nb::arg("bind") = std::map<std::string, int64_t>{},
          nb::arg("precision").none() = nb::none(),
          "Compiles the graph for the target, its symbolic dims in `bind` fixed to those sizes "
          "and `precision` applied; raises CompileError when a node has no legal path.");

  nb::class_<PyCompiled>(m, "Compiled", "A graph compiled for one target, ready to run.")
      .def_prop_ro("graph", [](const PyCompiled& c) { return c.graph; })
      .def("input_infos",
           [](const PyCompiled& c) { return tensor_infos(*c.source, c.source->inputs); })
      .def("output_infos",
           [](const PyCompiled& c) { return tensor_infos(*c.source, c.source->outputs); })
      .def(
          "report",
          [](const PyCompiled& c, bool verbose) { return c.compiled.report().to_text(verbose); },
          nb::arg("verbose") = false, "The dispatch report, as `rlx explain` prints it.")
      .def("run", &PyCompiled::run, nb::arg("inputs"),
           nb::arg("outputs") = std::vector<std::string>{},
           "Runs on a dict of arrays (NumPy or DLPack); returns {name: numpy.ndarray} of the "
           "outputs named in `outputs` (all when empty). The GIL is released while it runs.")
      .def("run_into", &PyCompiled::run_into, nb::arg("inputs"), nb::arg("outputs"),
           "Runs on a dict of arrays, writing each output named in `outputs` ({name: array}) "
           "into that array, which must have the output's dtype and shape and be writable and "
           "C-contiguous; returns `outputs`.");

  m.def(
      "load",
      [](const std::string& path, const std::map<std::string, int64_t>& bind,
         const std::map<std::string, std::vector<int64_t>>& input_shapes, nb::handle input_values) {
        ImportOptions options = import_options(bind, input_shapes, input_values);
        auto model = std::make_shared<Model>();
        {
          nb::gil_scoped_release no_gil;
          *model = cli::load_model(the_registry(), path, options);
        }
        return PyModel{std::move(model), path};
      },
      nb::arg("path"), nb::arg("bind") = std::map<std::string, int64_t>{},
      nb::arg("input_shapes") = std::map<std::string, std::vector<int64_t>>{},
      nb::arg("input_values") = nb::none(),
      "Reads a model the way `rlx run` does: an importer that claims the path, else rlx IR text.");

  // For the tests of zero-copy inputs: the address a Python array has once it is an rlx Tensor.
  m.def("_tensor_address", [](nb::handle value) {
    Tensor t = tensor_from_python(value, "value");
    return reinterpret_cast<uintptr_t>(t.data());
  });
}
