#include "attention_layout_fusion.h"

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "lir_kernel_uses.h"

namespace rlx::cpu {

namespace {

constexpr int64_t kAlign = 16;

bool aligned(int64_t v) {
  return v % kAlign == 0;
}

// The loop kernel `k` when it is a plain copy over a rank-4 domain: one load stored as is.
const lir::LoopKernel* copy_kernel(const lir::Program& p, int32_t k) {
  if (k < 0 || k >= static_cast<int32_t>(p.kernels.size())) return nullptr;
  const auto* l = std::get_if<lir::LoopKernel>(&p.kernels[k]);
  if (!l || !l->reduce.empty() || l->domain.size() != 4 || l->num_parallel != 4 ||
      l->stores.size() != 1 || l->exprs.size() != 1 || l->stores[0].expr != 0)
    return nullptr;
  const lir::Expr& e = l->exprs[0];
  if (e.kind != lir::ExprKind::kLoad || !e.load.guards.empty() || e.load.strides.size() != 4 ||
      p.buffers[e.load.buffer].dtype != p.buffers[l->stores[0].buffer].dtype)
    return nullptr;
  return l;
}

// The layout attribute of an operand read in place: [offset, batch, head, position stride] and
// the operand's shape [B, H, S, D].
std::optional<IntList> input_layout(const lir::Program& p, const KernelUses& u, int32_t call,
                                    int32_t x, int32_t out_storage, int32_t* source,
                                    int32_t* copy) {
  const int32_t xs = p.storage_of(x);
  if (xs != x || p.buffers[x].kind != lir::BufferKind::kTemp || u.is_output[xs] ||
      u.readers[xs] != std::vector<int32_t>{call} || u.writer[xs] < 0 || u.writer[xs] >= call)
    return std::nullopt;
  const lir::LoopKernel* l = copy_kernel(p, u.writer[xs]);
  if (!l || l->stores[0].buffer != x || l->domain != p.buffers[x].shape) return std::nullopt;
  const lir::AffineLoad& ld = l->exprs[0].load;
  if (ld.strides[3] != 1 || !aligned(ld.offset) || p.storage_of(ld.buffer) == out_storage)
    return std::nullopt;
  for (int d = 0; d < 3; ++d)
    if (!aligned(ld.strides[d])) return std::nullopt;
  *source = ld.buffer;
  *copy = u.writer[xs];
  const auto& shape = p.buffers[x].shape;
  return IntList{ld.offset, ld.strides[0], ld.strides[1], ld.strides[2],
                 shape[0],  shape[1],      shape[2],      shape[3]};
}

// The layout the result may be written in instead of the copy that reads it.
std::optional<IntList> output_layout(const lir::Program& p, const KernelUses& u, int32_t call,
                                     int32_t o, int32_t* target, int32_t* copy) {
  const int32_t os = p.storage_of(o);
  if (os != o || p.buffers[o].kind != lir::BufferKind::kTemp || u.is_output[os] ||
      u.readers[os].size() != 1 || u.readers[os][0] <= call)
    return std::nullopt;
  const lir::LoopKernel* l = copy_kernel(p, u.readers[os][0]);
  if (!l) return std::nullopt;
  const lir::AffineLoad& ld = l->exprs[0].load;
  if (ld.buffer != o || ld.offset != 0) return std::nullopt;
  const auto& shape = p.buffers[o].shape;
  const auto rm_o = row_major(shape), rm_y = row_major(l->domain);
  // Each dim of the copy's domain walks one dim of the result: its stride there.
  std::array<int64_t, 4> st{0, 0, 0, 0};
  std::array<bool, 4> seen{false, false, false, false};
  for (int k = 0; k < 4; ++k) {
    if (l->domain[k] == 1) continue;
    int found = -1;
    for (int d = 0; d < 4 && found < 0; ++d)
      if (!seen[d] && shape[d] == l->domain[k] && ld.strides[k] == rm_o[d]) found = d;
    if (found < 0) return std::nullopt;
    seen[found] = true;
    st[found] = rm_y[k];
  }
  for (int d = 0; d < 4; ++d)
    if (!seen[d] && shape[d] != 1) return std::nullopt;
  if (shape[3] != 1 && st[3] != 1) return std::nullopt;
  for (int d = 0; d < 3; ++d)
    if (!aligned(st[d])) return std::nullopt;
  const int32_t y = l->stores[0].buffer;
  // The call reads its operands while it writes: none may share the new result's storage.
  for (int32_t in : std::get<lir::CallKernel>(p.kernels[call]).inputs)
    if (p.storage_of(in) == p.storage_of(y)) return std::nullopt;
  *target = y;
  *copy = u.readers[os][0];
  return IntList{0, st[0], st[1], st[2], shape[0], shape[1], shape[2], shape[3]};
}

}  // namespace

int fold_attention_layouts(lir::Program& p) {
  const KernelUses u = kernel_uses(p);
  std::vector<bool> erase(p.kernels.size(), false);
  int folded = 0;
  static const char* const kNames[] = {"q_layout", "k_layout", "v_layout"};
  for (int32_t ci = 0; ci < static_cast<int32_t>(p.kernels.size()); ++ci) {
    auto* c = std::get_if<lir::CallKernel>(&p.kernels[ci]);
    if (!c || c->callee != "native:Attention" || c->inputs.size() < 3 || c->outputs.size() != 1 ||
        c->attrs.count("o_layout"))
      continue;
    lir::CallKernel merged = *c;
    int32_t target = -1, copy = -1;
    if (auto lay = output_layout(p, u, ci, c->outputs[0], &target, &copy)) {
      merged.outputs[0] = target;
      merged.attrs["o_layout"] = *lay;
      erase[copy] = true;
      ++folded;
    }
    const int32_t out_storage = p.storage_of(merged.outputs[0]);
    for (int i = 0; i < 3; ++i) {
      int32_t source = -1;
      // q, k and v are distinct buffers here (each copy is read once), so each is judged alone.
      if (auto lay = input_layout(p, u, ci, c->inputs[i], out_storage, &source, &copy)) {
        merged.inputs[i] = source;
        merged.attrs[kNames[i]] = *lay;
        erase[copy] = true;
        ++folded;
      }
    }
    p.kernels[ci] = std::move(merged);
  }
  if (folded) drop_kernels(p, erase);
  return folded;
}

}  // namespace rlx::cpu
