#include "tensor_file.h"

#include "rlx/core/builder.h"
#include "rlx/core/safetensors.h"

namespace rlx::frontends {

Model load_tensor_file(const std::filesystem::path& path) {
  Model m;
  m.architecture = "safetensors";
  Graph& g = m.graphs["main"];
  GraphBuilder b(g);
  for (auto& [name, t] : map_safetensors(path)) b.output(b.param(name, t));
  m.metadata["source"] = path.string();
  return m;
}

}  // namespace rlx::frontends
