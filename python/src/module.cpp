// rlx._rlx: the Python face of the runtime. It binds what the CLI's commands use (the registry,
// the model loader, Session and CompiledModel) rather than re-implementing them, so a model, a
// target list or an error reads the same from Python as from `rlx`. python/rlx/ wraps it.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "arrays.h"
#include "compiled.h"
#include "exceptions.h"
#include "model.h"  // the CLI's: plugin_registry, load_model, list_targets_json
#include "model_handle.h"
#include "rlx/core/error.h"
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

}  // namespace

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

namespace {

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
  bind_compiled(m);
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
      .def("compile", &PyCompiled::create, nb::arg("target") = "cpu", nb::arg("graph") = "main",
           nb::arg("bind") = std::map<std::string, int64_t>{},
           nb::arg("precision").none() = nb::none(), nb::arg("kv_cache").none() = nb::none(),
           "Compiles the graph for the target, its symbolic dims in `bind` fixed to those sizes, "
           "`precision` and `kv_cache` applied; raises CompileError when a node has no legal "
           "path.");

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
