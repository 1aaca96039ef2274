#include "lir_kernel_uses.h"

#include <algorithm>

namespace rlx::cpu {

KernelUses kernel_uses(const lir::Program& p) {
  const size_t nb = p.buffers.size();
  KernelUses u{std::vector<std::vector<int32_t>>(nb), std::vector<int32_t>(nb, -1),
               std::vector<bool>(nb, false)};
  auto read = [&](int32_t b, int32_t k) {
    auto& r = u.readers[p.storage_of(b)];
    if (r.empty() || r.back() != k) r.push_back(k);
  };
  auto write = [&](int32_t b, int32_t k) {
    int32_t& w = u.writer[p.storage_of(b)];
    w = w == -1 || w == k ? k : -2;
  };
  for (int32_t k = 0; k < static_cast<int32_t>(p.kernels.size()); ++k) {
    if (auto* l = std::get_if<lir::LoopKernel>(&p.kernels[k])) {
      for (auto& e : l->exprs)
        if (e.kind == lir::ExprKind::kLoad) read(e.load.buffer, k);
      for (auto& s : l->stores) write(s.buffer, k);
    } else {
      const auto& c = std::get<lir::CallKernel>(p.kernels[k]);
      for (int32_t b : c.inputs) read(b, k);
      for (int32_t b : c.outputs) write(b, k);
    }
  }
  for (auto& [name, b] : p.outputs) u.is_output[p.storage_of(b)] = true;
  return u;
}

std::vector<int64_t> row_major(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    s[d] = s[d + 1] * shape[d + 1];
  return s;
}

namespace {

void recompute_lifetimes(lir::Program& p) {
  for (auto& b : p.buffers) b.first_use = b.last_use = -1;
  auto touch = [&](int32_t b, int32_t k) {
    lir::Buffer& s = p.buffers[p.storage_of(b)];
    if (s.first_use < 0) s.first_use = k;
    s.last_use = std::max(s.last_use, k);
  };
  for (int32_t k = 0; k < static_cast<int32_t>(p.kernels.size()); ++k) {
    if (auto* l = std::get_if<lir::LoopKernel>(&p.kernels[k])) {
      for (auto& s : l->stores) touch(s.buffer, k);
      for (auto& e : l->exprs)
        if (e.kind == lir::ExprKind::kLoad) touch(e.load.buffer, k);
    } else {
      auto& c = std::get<lir::CallKernel>(p.kernels[k]);
      for (int32_t b : c.outputs) touch(b, k);
      for (int32_t b : c.inputs) touch(b, k);
    }
  }
}

}  // namespace

void drop_kernels(lir::Program& p, const std::vector<bool>& erase) {
  std::vector<lir::Kernel> kept;
  for (size_t k = 0; k < p.kernels.size(); ++k)
    if (!erase[k]) kept.push_back(std::move(p.kernels[k]));
  p.kernels = std::move(kept);
  recompute_lifetimes(p);
  lir::plan_buffers(p);
}

}  // namespace rlx::cpu
