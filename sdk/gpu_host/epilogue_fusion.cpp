// Epilogue fusion of the GPU-style targets' matrix products (epilogue_fusion.h).
#include "epilogue_fusion.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

namespace rlx::gpu_host {

namespace {

// Epilogue kernels fused into one product at most, and the buffers the fused kernel may bind:
// WebGPU guarantees 8 storage buffers per shader stage, and lowering keeps kernels within the
// device's limit, which a fusion must not undo.
constexpr size_t kMaxEpilogueKernels = 3;
constexpr int32_t kMaxEpilogueParams = 8;

}  // namespace

// Whether reading with `strides` over `domain` visits a dense row-major block exactly once in
// another order (a transpose): the strides of the dims larger than 1, in increasing order, are
// 1 and then each the product of the sizes before it.
bool dense_permutation(const std::vector<int64_t>& domain, const std::vector<int64_t>& strides) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  for (size_t d = 0; d < domain.size(); ++d)
    if (domain[d] > 1) dims.emplace_back(strides[d], domain[d]);
  std::sort(dims.begin(), dims.end());
  int64_t expected = 1;
  for (const auto& [stride, size] : dims) {
    if (stride != expected) return false;
    expected *= size;
  }
  return true;
}

// Folds the loop kernels right after product `i` that take its result element by element, and
// that nothing else reads, into `mm` as its epilogue (render.h, MatmulEpilogue): a bias, an
// activation and a residual add are then applied in registers instead of by kernels that each
// read and write the whole result again. Returns how many kernels it took.
size_t fuse_epilogue(MatmulCall& mm, const lir::Program& p, size_t i,
                     const std::vector<int>& readers) {
  const int64_t elements = mm.shape.batch * mm.shape.m * mm.shape.n;
  std::vector<int32_t> params(mm.buffers.begin(), mm.buffers.end() - 1);  // A and B
  std::vector<const lir::LoopKernel*> chain;
  std::vector<int32_t> inputs;  // per kernel: the storage it reads the previous result from
  std::vector<int64_t> last_strides;
  int32_t cur = mm.buffers.back();
  for (size_t j = i + 1; j < p.kernels.size() && chain.size() < kMaxEpilogueKernels; ++j) {
    const auto* k = std::get_if<lir::LoopKernel>(&p.kernels[j]);
    if (!k || !k->reduce.empty() || k->num_parallel != static_cast<int32_t>(k->domain.size()) ||
        k->stores.size() != 1 || p.buffers[cur].kind != lir::BufferKind::kTemp)
      break;
    int64_t n = 1;
    for (int64_t d : k->domain) n *= d;
    if (n != elements) break;
    const std::vector<int64_t> identity = row_major_strides(k->domain);
    int identity_loads = 0, permuted_loads = 0;
    std::vector<int64_t> permuted;  // the strides of this kernel's permuted reads of the result
    bool ok = true;
    std::vector<int32_t> extra;
    const int32_t out = p.storage_of(k->stores[0].buffer);
    for (const lir::Expr& e : k->exprs) {
      if (e.kind != lir::ExprKind::kLoad) continue;
      const int32_t b = p.storage_of(e.load.buffer);
      ok = ok && b != out;
      if (b != cur) {
        if (std::find(params.begin(), params.end(), b) == params.end() &&
            std::find(extra.begin(), extra.end(), b) == extra.end())
          extra.push_back(b);
        continue;
      }
      ok = ok && e.load.guards.empty() && e.load.offset == 0 &&
           e.load.strides.size() == k->domain.size();
      if (!ok) break;
      bool same = true;
      for (size_t d = 0; d < k->domain.size(); ++d)
        same = same && (k->domain[d] == 1 || e.load.strides[d] == identity[d]);
      if (same) {
        ++identity_loads;
      } else if (dense_permutation(k->domain, e.load.strides) &&
                 (permuted.empty() || permuted == e.load.strides)) {
        ++permuted_loads;
        permuted = e.load.strides;
      } else {
        ok = false;
      }
    }
    // A permuting kernel reads the result one way only and ends the chain.
    ok = ok && !(identity_loads > 0 && permuted_loads > 0);
    // The result must reach this kernel only, and the output be a buffer of its own.
    ok = ok && identity_loads + permuted_loads > 0 &&
         readers[cur] == identity_loads + permuted_loads &&
         std::find(params.begin(), params.end(), out) == params.end() &&
         std::find(extra.begin(), extra.end(), out) == extra.end() &&
         std::find(inputs.begin(), inputs.end(), out) == inputs.end();
    if (!ok || static_cast<int32_t>(params.size() + extra.size()) + 1 > kMaxEpilogueParams) break;
    params.insert(params.end(), extra.begin(), extra.end());
    chain.push_back(k);
    inputs.push_back(cur);
    cur = out;
    if (permuted_loads > 0) {
      last_strides = permuted;
      break;
    }
  }
  if (chain.empty()) return 0;
  // The parameters again, for the chain that stayed: A and B, what its kernels read, its output.
  params.assign(mm.buffers.begin(), mm.buffers.end() - 1);
  for (const lir::LoopKernel* k : chain)
    for (const lir::Expr& e : k->exprs)
      if (e.kind == lir::ExprKind::kLoad) {
        const int32_t b = p.storage_of(e.load.buffer);
        if (std::find(inputs.begin(), inputs.end(), b) == inputs.end() &&
            std::find(params.begin(), params.end(), b) == params.end())
          params.push_back(b);
      }
  params.push_back(cur);  // the last kernel's output, the kernel's result

  auto epilogue = std::make_shared<sdk::MatmulEpilogue>();
  lir::Program& local = epilogue->program;
  std::map<int32_t, int32_t> id;  // storage -> local id (positions first)
  auto add = [&](int32_t storage) {
    lir::Buffer b;
    b.id = static_cast<int32_t>(local.buffers.size());
    b.dtype = p.buffers[storage].dtype;
    b.shape = p.buffers[storage].shape;
    id[storage] = b.id;
    local.buffers.push_back(std::move(b));
  };
  for (int32_t storage : params) add(storage);
  epilogue->params = static_cast<int32_t>(params.size());
  for (int32_t storage : inputs) add(storage);
  for (size_t j = 0; j < chain.size(); ++j) {
    lir::LoopKernel k = *chain[j];
    for (lir::Expr& e : k.exprs)
      if (e.kind == lir::ExprKind::kLoad) e.load.buffer = id.at(p.storage_of(e.load.buffer));
    k.stores[0].buffer = id.at(p.storage_of(k.stores[0].buffer));
    local.kernels.push_back(std::move(k));
    epilogue->inputs.push_back(id.at(inputs[j]));
  }
  epilogue->last_strides = std::move(last_strides);
  mm.shape.c_buffer = epilogue->params - 1;
  mm.shape.epilogue = std::move(epilogue);
  mm.buffers = std::move(params);
  return chain.size();
}

// Takes the loop kernel after vendor product `i` into it when that kernel only sums the product
// with a bias row along n and/or a residual of the product's shape (one batch, every tensor of
// the product's own float dtype): the vendor library adds them before it stores, and the product
// stores the kernel's output. For f16 and bf16 that rounds once where the loop kernel rounded
// twice (after the product and after the sum): the closer result. Returns how many kernels it
// took (0 or 1).
size_t fuse_vendor_epilogue(LibraryMatmul& lm, const lir::Program& p, size_t i,
                            const std::vector<int>& readers) {
  const sdk::MatmulShape& s = lm.shape;
  const DType dt = s.c_dtype;
  if (dt != DType::kF32 && dt != DType::kF16 && dt != DType::kBF16) return 0;
  if (s.batch != 1 || i + 1 >= p.kernels.size()) return 0;
  const auto* k = std::get_if<lir::LoopKernel>(&p.kernels[i + 1]);
  if (!k || !k->reduce.empty() || k->stores.size() != 1 ||
      k->num_parallel != static_cast<int32_t>(k->domain.size()) || k->domain.empty() ||
      k->domain.back() != s.n)
    return 0;
  const int32_t c = lm.buffers[s.c_buffer], out = p.storage_of(k->stores[0].buffer);
  if (p.buffers[c].kind != lir::BufferKind::kTemp || readers[c] != 1 ||
      p.buffers[out].dtype != dt || p.buffers[out].numel() != s.m * s.n ||
      std::find(lm.buffers.begin(), lm.buffers.end(), out) != lm.buffers.end())
    return 0;
  const std::vector<int64_t> identity = row_major_strides(k->domain);
  auto in_order = [&](const std::vector<int64_t>& strides) {
    if (strides.size() != k->domain.size()) return false;
    for (size_t d = 0; d < strides.size(); ++d)
      if (k->domain[d] != 1 && strides[d] != identity[d]) return false;
    return true;
  };
  auto along_n = [&](const std::vector<int64_t>& strides) {
    if (strides.size() != k->domain.size() || strides.back() != 1) return false;
    for (size_t d = 0; d + 1 < strides.size(); ++d)
      if (k->domain[d] != 1 && strides[d] != 0) return false;
    return true;
  };
  // Every expression a load or an add in dt, every value but the stored one used once: the
  // stored value is the sum of the loads.
  std::vector<int> uses(k->exprs.size(), 0);
  int32_t bias = -1, residual = -1, loads = 0, adds = 0;
  bool product = false;
  for (const lir::Expr& e : k->exprs) {
    if (e.kind == lir::ExprKind::kBinary && e.op == "add" && e.dtype == dt && e.args.size() == 2) {
      ++adds;
      for (int32_t a : e.args) ++uses.at(a);
      continue;
    }
    if (e.kind != lir::ExprKind::kLoad || !e.load.guards.empty() || e.load.offset != 0 ||
        e.dtype != dt)
      return 0;
    ++loads;
    const int32_t b = p.storage_of(e.load.buffer);
    if (p.buffers[b].dtype != dt || b == out) return 0;
    if (b == c && in_order(e.load.strides) && !product) {
      product = true;
    } else if (bias < 0 && p.buffers[b].numel() == s.n && along_n(e.load.strides)) {
      bias = b;
    } else if (residual < 0 && b != c && p.buffers[b].numel() == s.m * s.n &&
               in_order(e.load.strides)) {
      residual = b;
    } else {
      return 0;
    }
  }
  const int32_t root = k->stores[0].expr;
  for (size_t j = 0; j < uses.size(); ++j)
    if (uses[j] != (static_cast<int32_t>(j) == root ? 0 : 1)) return 0;
  if (!product || loads < 2 || adds != loads - 1) return 0;
  lm.bias = bias;
  lm.residual = residual;
  lm.buffers[s.c_buffer] = out;
  return 1;
}

}  // namespace rlx::gpu_host
