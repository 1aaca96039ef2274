// rlx.Compiled's native part: a graph compiled for one target (with the sizes and precision
// compile() was given), run on dicts of arrays, its outputs returned as NumPy arrays or written
// into the caller's.
#pragma once
#include <nanobind/nanobind.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "model_handle.h"
#include "rlx/core/runtime.h"

namespace rlx::python {

struct PyCompiled {
  std::shared_ptr<const Model> model;   // what the compiled graph came from
  std::shared_ptr<const Graph> source;  // the graph compiled (bound and converted as asked)
  std::string graph;
  std::shared_ptr<Target> target;
  CompiledModel compiled;
  PrecisionReport precision;  // what precision= changed (mode empty: nothing)
  std::unique_ptr<std::mutex> running = std::make_unique<std::mutex>();  // not thread-safe

  // Model.compile: the graph `graph` of `p`, its symbols in `bind` fixed, `precision` and
  // `kv_cache` applied, compiled for the target with the GIL released.
  static std::unique_ptr<PyCompiled> create(const PyModel& p, const std::string& target_name,
                                            const std::string& graph,
                                            const std::map<std::string, int64_t>& bind,
                                            const std::optional<std::string>& precision,
                                            const std::optional<std::string>& kv_cache);

  // Runs with the GIL released; returns the outputs named in `wanted` (all when empty) as NumPy
  // arrays over rlx's buffers.
  nanobind::dict run(nanobind::handle inputs, const std::vector<std::string>& wanted);
  // Runs writing each output named in `into` ({name: array}) into that array (checked: its
  // dtype, rank, layout; its shape after the run); returns `into`.
  nanobind::dict run_into(nanobind::handle inputs, nanobind::dict into);

 private:
  NamedTensors tensors_of(nanobind::handle inputs) const;
  std::string output_names() const;
  ValueId output_id(const std::string& name) const;
  const Tensor& output(const NamedTensors& outputs, const std::string& name) const;
};

// The `precision` argument of compile() and generate() applied to graph `name` of a model (`g`,
// changed in place): None and "f32" change nothing, "f16", "bf16", "amp-f16", "amp-bf16" narrow
// as `--precision` does, "tf32" marks the f32 products, "q8" rounds block-quantized products'
// activations; a user error when the graph has nothing the choice changes, a usage error for
// any other string.
PrecisionReport apply_precision_option(Graph& g, const std::string& name,
                                       const std::optional<std::string>& precision);

// The `kv_cache` argument of compile() and generate() applied to graph `name` (`g`, changed in
// place): its KV cache (past_* inputs and the present_* outputs written from them) kept in "f32",
// "f16" or "bf16" (`--kv-cache`); a usage error for another string, a user error when the graph
// has no KV cache.
void apply_kv_cache_option(Graph& g, const std::string& name, const std::string& kv_cache);

// Registers rlx._rlx.Compiled.
void bind_compiled(nanobind::module_& m);

}  // namespace rlx::python
