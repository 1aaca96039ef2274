#include "rlx/core/model.h"

#include <fmt/format.h>

#include "rlx/core/error.h"

namespace rlx {

const Graph& Model::graph(const std::string& name) const {
  auto it = graphs.find(name);
  if (it != graphs.end()) return it->second;
  std::string have;
  for (auto& [n, g] : graphs) have += (have.empty() ? "" : ", ") + n;
  throw_user_error(fmt::format("the {} model has no graph '{}' (it has: {})",
                               architecture.empty() ? "imported" : architecture, name,
                               have.empty() ? "none" : have));
}

}  // namespace rlx
