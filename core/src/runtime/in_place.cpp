#include "in_place.h"

#include <variant>
#include <vector>

namespace rlx {

std::map<int32_t, int32_t> in_place_updates(const lir::Program& p) {
  // Per storage buffer: how many kernels write it and how many operand slots read it.
  std::vector<int> writers(p.buffers.size(), 0), reads(p.buffers.size(), 0);
  for (const lir::Kernel& k : p.kernels) {
    if (const auto* l = std::get_if<lir::LoopKernel>(&k)) {
      for (const lir::Expr& e : l->exprs)
        if (e.kind == lir::ExprKind::kLoad) ++reads[p.storage_of(e.load.buffer)];
      for (const lir::Store& s : l->stores) ++writers[p.storage_of(s.buffer)];
      continue;
    }
    const auto& c = std::get<lir::CallKernel>(k);
    for (int32_t b : c.inputs) ++reads[p.storage_of(b)];
    for (int32_t b : c.outputs) ++writers[p.storage_of(b)];
  }
  // The calls whose first operand becomes their output where both are one memory: a scatter
  // writes its rows, an all-reduce or broadcast exchanges the buffer in place (what Gloo and
  // NCCL do anyway, so the operand is not copied to the output first).
  auto updates_in_place = [](const lir::CallKernel& c) {
    if (c.outputs.size() != 1) return false;
    if (c.callee == "scatter") return c.inputs.size() == 3;
    return (c.callee == "native:AllReduce" || c.callee == "native:Broadcast") &&
           c.inputs.size() == 1;
  };
  std::map<int32_t, int32_t> pairs;
  for (const lir::Kernel& k : p.kernels) {
    const auto* c = std::get_if<lir::CallKernel>(&k);
    if (!c || !updates_in_place(*c)) continue;
    const int32_t in = p.storage_of(c->inputs[0]), out = p.storage_of(c->outputs[0]);
    const lir::Buffer& bi = p.buffers[in];
    const lir::Buffer& bo = p.buffers[out];
    if (bi.kind != lir::BufferKind::kInput || bo.kind != lir::BufferKind::kOutput) continue;
    if (bi.dtype != bo.dtype || bi.shape != bo.shape) continue;
    // The call is the input's only reader (so no kernel sees what it writes early) and the
    // output's only writer; a scatter's operand may not also be its indices or updates.
    if (reads[in] != 1 || writers[out] != 1) continue;
    pairs.emplace(out, in);
  }
  return pairs;
}

}  // namespace rlx
