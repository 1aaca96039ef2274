// What the module's parts share: the process's plugin registry and a loaded model as Python
// holds it (rlx.Model wraps one), so embed, generate and compile start from the same objects.
#pragma once
#include <nanobind/nanobind.h>

#include <memory>
#include <string>
#include <vector>

#include "rlx/core/model.h"
#include "rlx/core/target.h"
#include "rlx/registry/registry.h"

namespace rlx::python {

// The plugins found once per process, as the CLI finds them (RLX_PLUGIN_PATH, the package's
// own folder, the user's and the system's).
const registry::Registry& the_registry();

// The target named `name`, checked to execute here (a codegen-only target is refused before
// any work, naming `model_path`).
std::shared_ptr<Target> executing_target(const std::string& name, const std::string& model_path);

// [(name, dtype, shape)] of the graph's inputs or outputs (`ids`): sizes as ints, symbolic dims
// by name.
nanobind::list tensor_infos(const Graph& g, const std::vector<ValueId>& ids);

struct PyModel {
  std::shared_ptr<Model> model;
  std::string path;
};

}  // namespace rlx::python
