#include "attention_layouts.h"

#include <algorithm>

#include "dot_general_form.h"

namespace rlx::gpu_host {

bool merges_heads(const AttentionCall& a, const lir::CallKernel& c, const lir::Program& p, size_t j,
                  const std::vector<int>& readers) {
  if (j >= p.kernels.size()) return false;
  const auto* k = std::get_if<lir::LoopKernel>(&p.kernels[j]);
  const int32_t out = p.storage_of(c.outputs[0]);
  if (!k || !k->reduce.empty() || k->num_parallel != 4 || k->exprs.size() != 1 ||
      k->stores.size() != 1 || k->stores[0].expr != 0 || readers[out] != 1 ||
      p.buffers[out].kind != lir::BufferKind::kTemp)
    return false;
  const lir::Expr& e = k->exprs[0];
  const sdk::AttentionShape& s = a.shape;
  const std::vector<int64_t> domain = {s.batch, s.q_len, s.heads, s.v_dim};
  const std::vector<int64_t> strides = {s.heads * s.q_len * s.v_dim, s.v_dim, s.q_len * s.v_dim, 1};
  const int32_t to = p.storage_of(k->stores[0].buffer);
  return e.kind == lir::ExprKind::kLoad && p.storage_of(e.load.buffer) == out &&
         e.load.offset == 0 && e.load.guards.empty() && k->domain == domain &&
         same_walk(domain, e.load.strides, strides) && p.buffers[to].dtype == p.buffers[out].dtype;
}

SplitHeads splits_heads(const lir::Program& p, size_t j, int32_t t,
                        const std::vector<int>& readers) {
  const auto* k = std::get_if<lir::LoopKernel>(&p.kernels[j]);
  const lir::Buffer& out = p.buffers[t];
  if (!k || !k->reduce.empty() || k->num_parallel != 4 || k->exprs.size() != 1 ||
      k->stores.size() != 1 || k->stores[0].expr != 0 || p.storage_of(k->stores[0].buffer) != t ||
      readers[t] != 1 || out.kind != lir::BufferKind::kTemp || out.shape.size() != 4 ||
      k->domain != out.shape)
    return {};
  const lir::Expr& e = k->exprs[0];
  if (e.kind != lir::ExprKind::kLoad || e.load.offset < 0 || !e.load.guards.empty() ||
      e.load.strides.size() != 4)
    return {};
  const int64_t b = out.shape[0], h = out.shape[1], s = out.shape[2], d = out.shape[3];
  // The row stride: the position dim's, or (one position) a batch's.
  const int64_t row = s > 1 ? e.load.strides[2] : b > 1 ? e.load.strides[0] : h * d;
  const std::vector<int64_t> strides = {s * row, d, row, 1};
  const int32_t from = p.storage_of(e.load.buffer);
  const lir::Buffer& in = p.buffers[from];
  if (row < h * d || !same_walk(k->domain, e.load.strides, strides) || in.dtype != out.dtype ||
      in.numel() < e.load.offset + (b * s - 1) * row + h * d || from == t)
    return {};
  return {from, row, e.load.offset};
}

void read_split_heads(AttentionCall& a, const std::vector<std::pair<int, SplitHeads>>& splits) {
  if (splits.empty()) return;
  sdk::AttentionShape& sh = a.shape;
  for (auto [operand, heads] : splits) {
    int32_t& position = operand == 0 ? sh.q_buffer : operand == 1 ? sh.k_buffer : sh.v_buffer;
    (operand == 0 ? sh.q_split_heads : operand == 1 ? sh.k_split_heads : sh.v_split_heads) = true;
    (operand == 0 ? sh.q_row : operand == 1 ? sh.k_row : sh.v_row) = heads.row;
    (operand == 0 ? sh.q_offset : operand == 1 ? sh.k_offset : sh.v_offset) = heads.offset;
    position = static_cast<int32_t>(a.buffers.size());  // renumbered below
    a.buffers.push_back(heads.from);
  }
  std::vector<int32_t> kept;
  for (int32_t* position :
       {&sh.q_buffer, &sh.k_buffer, &sh.v_buffer, &sh.mask_buffer, &sh.out_buffer}) {
    if (*position < 0) continue;
    const int32_t storage = a.buffers[*position];
    auto it = std::find(kept.begin(), kept.end(), storage);
    *position = static_cast<int32_t>(it - kept.begin());
    if (it == kept.end()) kept.push_back(storage);
  }
  a.buffers = std::move(kept);
}

}  // namespace rlx::gpu_host
