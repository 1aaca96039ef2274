#include "compiled.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <cstring>

#include "arrays.h"
#include "bindings.h"  // the CLI's: sizes_for_graph (checks bind= as --bind does)
#include "errors.h"    // the CLI's: UsageError
#include "rlx/core/device_stats.h"
#include "rlx/core/error.h"
#include "rlx/core/passes.h"
#include "rlx/core/precision.h"
#include "rlx/llm/decoding.h"

namespace nb = nanobind;

namespace rlx::python {
namespace {

// The precisions compile(precision=) offers: the model's own dtypes (None or "f32": nothing is
// changed), the policies of `--precision` (apply_precision), or "q8", products with
// block-quantized weights taking activations rounded to 8-bit blocks (`rlx run
// --q8-activations`, set_quantized_activations), or "tf32", f32 products allowed TF32 tensor
// cores (`rlx run --allow-tf32`, allow_tf32).
constexpr const char* kPrecisions =
    "None, \"f32\" (the model's own dtypes), \"f16\", \"bf16\", \"amp-f16\", \"amp-bf16\" "
    "(rlx run --precision), \"tf32\" (f32 products allowed TF32 tensor cores: rlx run "
    "--allow-tf32) or \"q8\" (8-bit activations for block-quantized products)";

bool is_policy(const std::string& precision) {
  return precision == "f16" || precision == "bf16" || precision == "amp-f16" ||
         precision == "amp-bf16";
}

std::string bind_argument(const std::string& name) {
  return "bind['" + name + "']";
}

// The graph `name` of the model as compile() is asked for it: symbols bound, precision applied.
Graph graph_to_compile(const Model& model, const std::string& name,
                       const std::map<std::string, int64_t>& bind,
                       const std::optional<std::string>& precision,
                       const std::optional<std::string>& kv_cache, PrecisionReport* report) {
  Graph g = model.graph(name);
  *report = apply_precision_option(g, name, precision);
  if (kv_cache) apply_kv_cache_option(g, name, *kv_cache);
  for (const auto& [symbol, size] : bind)
    if (size < 1)
      throw_user_error(fmt::format("{} = {}: a size is at least 1", bind_argument(symbol), size));
  Bindings sizes =
      cli::sizes_for_graph(Bindings(bind.begin(), bind.end()), g, model, &bind_argument);
  return sizes.empty() ? g : specialize(g, sizes);
}

}  // namespace

PrecisionReport apply_precision_option(Graph& g, const std::string& name,
                                       const std::optional<std::string>& precision) {
  PrecisionReport report;
  if (precision && is_policy(*precision)) {
    report = apply_precision(g, parse_precision(*precision));
    if (!report.changed())
      throw_user_error(fmt::format(
          "precision='{}': the '{}' graph has no f32 computation this mode narrows; leave "
          "precision out",
          *precision, name));
  } else if (precision && *precision == "tf32") {
    report.tf32 = allow_tf32(g);
    if (report.tf32.empty())
      throw_user_error(fmt::format(
          "precision='tf32': the '{}' graph has no f32 matrix product; leave precision out", name));
  } else if (precision && *precision != "f32") {
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
  return report;
}

void apply_kv_cache_option(Graph& g, const std::string& name, const std::string& kv_cache) {
  const std::optional<DType> t = parse_dtype(kv_cache);
  if (!t || (*t != DType::kF32 && *t != DType::kF16 && *t != DType::kBF16))
    throw cli::UsageError(
        fmt::format("kv_cache='{}' is not a dtype a KV cache is kept in", kv_cache),
        "give \"f32\", \"f16\" or \"bf16\", or leave kv_cache out");
  if (llm::set_kv_cache_dtype(g, *t) == 0)
    throw_user_error(fmt::format(
        "kv_cache='{}': the '{}' graph has no KV cache (no past_* inputs); leave kv_cache out",
        kv_cache, name));
}

std::unique_ptr<PyCompiled> PyCompiled::create(const PyModel& p, const std::string& target_name,
                                               const std::string& graph,
                                               const std::map<std::string, int64_t>& bind,
                                               const std::optional<std::string>& precision,
                                               const std::optional<std::string>& kv_cache) {
  std::shared_ptr<Target> target = executing_target(target_name, p.path);
  auto c = std::make_unique<PyCompiled>();
  c->model = p.model;
  c->source = std::make_shared<const Graph>(
      graph_to_compile(*p.model, graph, bind, precision, kv_cache, &c->precision));
  c->graph = graph;
  c->target = target;
  Session session(target);
  nb::gil_scoped_release no_gil;
  c->compiled = session.compile(*c->source, input_limits(*p.model));
  return c;
}

nb::dict PyCompiled::run(nb::handle inputs, const std::vector<std::string>& wanted) {
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

nb::dict PyCompiled::run_into(nb::handle inputs, nb::dict into) {
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

NamedTensors PyCompiled::tensors_of(nb::handle inputs) const {
  NamedTensors given;
  for (auto [key, value] : nb::borrow<nb::dict>(inputs)) {
    std::string name = nb::cast<std::string>(key);
    given.emplace(name, tensor_from_python(value, name));
  }
  return given;
}

std::string PyCompiled::output_names() const {
  std::string names;
  for (ValueId v : source->outputs) names += (names.empty() ? "" : ", ") + source->values[v].name;
  return names;
}

ValueId PyCompiled::output_id(const std::string& name) const {
  for (ValueId v : source->outputs)
    if (source->values[v].name == name) return v;
  throw_user_error("the model has no output '" + name + "' (its outputs: " + output_names() + ")");
}

const Tensor& PyCompiled::output(const NamedTensors& outputs, const std::string& name) const {
  auto it = outputs.find(name);
  if (it == outputs.end())
    throw_user_error("the model has no output '" + name + "' (its outputs: " + output_names() +
                     ")");
  return it->second;
}

void bind_compiled(nb::module_& m) {
  nb::class_<PyCompiled>(m, "Compiled", "A graph compiled for one target, ready to run.")
      .def_prop_ro("graph", [](const PyCompiled& c) { return c.graph; })
      .def("input_infos",
           [](const PyCompiled& c) { return tensor_infos(*c.source, c.source->inputs); })
      .def("output_infos",
           [](const PyCompiled& c) { return tensor_infos(*c.source, c.source->outputs); })
      .def(
          "report",
          [](const PyCompiled& c, bool verbose) {
            DispatchReport report = c.compiled.report();
            report.precision = c.precision;
            return report.to_text(verbose);
          },
          nb::arg("verbose") = false, "The dispatch report, as `rlx explain` prints it.")
      .def(
          "device_memory",
          [](const PyCompiled& c) -> nb::object {
            const DeviceStatsV1* stats = device_stats(*c.target);
            if (!stats || !stats->memory) return nb::none();
            uint64_t now = 0, peak = 0;
            check_device_stats(stats->memory(stats->context, &now, &peak), c.target->name());
            nb::dict d;
            d["bytes"] = now;
            d["peak_bytes"] = peak;
            return d;
          },
          "{'bytes', 'peak_bytes'}: the device memory the target holds now and at most so far "
          "(`rlx bench`'s peak_device_mb), or None where its device does not count (cpu).")
      .def("run", &PyCompiled::run, nb::arg("inputs"),
           nb::arg("outputs") = std::vector<std::string>{},
           "Runs on a dict of arrays (NumPy or DLPack); returns {name: numpy.ndarray} of the "
           "outputs named in `outputs` (all when empty). The GIL is released while it runs.")
      .def("run_into", &PyCompiled::run_into, nb::arg("inputs"), nb::arg("outputs"),
           "Runs on a dict of arrays, writing each output named in `outputs` ({name: array}) "
           "into that array, which must have the output's dtype and shape and be writable and "
           "C-contiguous; returns `outputs`.");
}

}  // namespace rlx::python
