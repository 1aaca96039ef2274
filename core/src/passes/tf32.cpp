// --allow-tf32 (passes.h): an allowance the user gives, recorded on each f32 product so that the
// target that acts on it (cuda's cuBLASLt) can say so, and every other computes as before.
#include "rlx/core/passes.h"

namespace rlx {

namespace {

void mark(Graph& g, std::vector<std::string>& marked, bool top) {
  for (int32_t i = 0; i < static_cast<int32_t>(g.nodes.size()); ++i) {
    Node& n = g.nodes[i];
    for (auto& r : n.regions) mark(*r, marked, false);
    if (n.op != "MatMul" && n.op != "Linear" && n.op != "dot_general") continue;
    if (n.outputs.empty() || g.type(n.outputs[0]).dtype != DType::kF32) continue;
    n.attrs["tf32"] = int64_t{1};
    marked.push_back(top ? g.describe_node(i) : "a loop body's " + g.describe_node(i));
  }
}

}  // namespace

std::vector<std::string> allow_tf32(Graph& g) {
  std::vector<std::string> marked;
  mark(g, marked, true);
  return marked;
}

}  // namespace rlx
