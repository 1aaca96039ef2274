// set_quantized_activations: the arithmetic of a model's DequantMatMul nodes, chosen by the
// caller (rlx generate|run|bench --q8-activations), never by a target.
#include <fmt/format.h>

#include "rlx/core/error.h"
#include "rlx/core/passes.h"
#include "rlx/core/quant.h"

namespace rlx {

int set_quantized_activations(Graph& g, const std::string& mode) {
  if (mode != "f32" && mode != "q8")
    throw_user_error(fmt::format("quantized activations are \"f32\" or \"q8\", not \"{}\"", mode));
  int changed = 0;
  for (Node& n : g.nodes) {
    for (auto& region : n.regions) changed += set_quantized_activations(*region, mode);
    if (n.op != "DequantMatMul") continue;
    const quant::QTypeInfo* q = quant::find_qtype(n.attr_string("qtype", ""));
    // Plain float storage (f16, bf16) has no block to round activations to.
    if (!q || (q->block_size != 32 && q->block_size != 256)) continue;
    if (n.attr_string("activations", "f32") == mode) continue;
    n.attrs["activations"] = mode;
    ++changed;
  }
  return changed;
}

}  // namespace rlx
