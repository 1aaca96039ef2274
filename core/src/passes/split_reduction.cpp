#include "passes/split_reduction.h"

#include <fmt/format.h>

#include <functional>
#include <numeric>

namespace rlx {

namespace {

// Split when at most this many outputs would each reduce at least kMinReduced elements.
constexpr int64_t kMaxOutputs = 64;
constexpr int64_t kMinReduced = int64_t{1} << 16;
// Chunks of the split dim: enough to fill a GPU's threads (a whole dim of up to kMaxChunks
// becomes parallel, each chunk then one index of it).
constexpr int64_t kMaxChunks = 4096, kMinChunks = 64;

int64_t product(const std::vector<int64_t>& v, size_t from, size_t to) {
  return std::accumulate(v.begin() + static_cast<std::ptrdiff_t>(from),
                         v.begin() + static_cast<std::ptrdiff_t>(to), int64_t{1},
                         std::multiplies<>());
}

// Whether an expression reads loop dim `d` other than through a load's strides.
bool reads_dim_directly(const lir::LoopKernel& k, int32_t d) {
  for (const lir::Expr& e : k.exprs) {
    if ((e.kind == lir::ExprKind::kIndex || e.kind == lir::ExprKind::kInRange) && e.dim == d)
      return true;
    if (e.kind == lir::ExprKind::kLoad)
      for (const lir::Guard& g : e.load.guards)
        if (g.dim == d) return true;
  }
  return false;
}

}  // namespace

std::optional<SplitReduction> split_reduction(const lir::LoopKernel& k, DType out_dtype,
                                              int32_t partial_buffer) {
  if (k.reduce.empty() || k.stores.size() != 1) return std::nullopt;
  if (out_dtype == DType::kF16 || out_dtype == DType::kBF16 || out_dtype == DType::kC64)
    return std::nullopt;
  const size_t np = static_cast<size_t>(k.num_parallel), rank = k.domain.size();
  const int64_t outputs = product(k.domain, 0, np), reduced = product(k.domain, np, rank);
  if (outputs > kMaxOutputs || reduced < kMinReduced) return std::nullopt;
  // The reduced dim with the most chunks: its extent E = C * L with C in [kMinChunks,
  // kMaxChunks].
  int32_t split = -1;
  int64_t chunks = 0;
  for (size_t d = np; d < rank; ++d) {
    if (reads_dim_directly(k, static_cast<int32_t>(d))) continue;
    const int64_t e = k.domain[d];
    for (int64_t c = std::min(kMaxChunks, e); c >= kMinChunks; --c)
      if (e % c == 0) {
        if (c > chunks) chunks = c, split = static_cast<int32_t>(d);
        break;
      }
  }
  if (split < 0) return std::nullopt;
  const int64_t length = k.domain[split] / chunks;

  // Stage 1: the chunk index becomes a parallel dim right after the outputs' dims; the split
  // dim keeps the position within a chunk. Loop dims after np move one place up.
  SplitReduction s;
  lir::LoopKernel& p = s.partials;
  p.name = k.name + "_partials";
  p.reduce = k.reduce;
  p.num_parallel = k.num_parallel + 1;
  p.domain.assign(k.domain.begin(), k.domain.begin() + static_cast<std::ptrdiff_t>(np));
  p.domain.push_back(chunks);
  for (size_t d = np; d < rank; ++d)
    p.domain.push_back(static_cast<int32_t>(d) == split ? length : k.domain[d]);
  auto moved = [&](int32_t d) { return d < static_cast<int32_t>(np) ? d : d + 1; };
  p.exprs = k.exprs;
  for (lir::Expr& e : p.exprs) {
    if (e.kind == lir::ExprKind::kIndex || e.kind == lir::ExprKind::kInRange) e.dim = moved(e.dim);
    if (e.kind != lir::ExprKind::kLoad) continue;
    std::vector<int64_t>& st = e.load.strides;
    std::vector<int64_t> now(st.begin(), st.begin() + static_cast<std::ptrdiff_t>(np));
    now.push_back(st[split] * length);
    now.insert(now.end(), st.begin() + static_cast<std::ptrdiff_t>(np), st.end());
    st = std::move(now);
    for (lir::Guard& g : e.load.guards) g.dim = moved(g.dim);
  }
  p.stores = {{partial_buffer, k.stores[0].expr}};
  s.partial_shape.assign(k.domain.begin(), k.domain.begin() + static_cast<std::ptrdiff_t>(np));
  s.partial_shape.push_back(chunks);

  // Stage 2: the partials reduced along their last dim into the original output.
  lir::LoopKernel& c = s.combine;
  c.name = k.name + "_combine";
  c.reduce = k.reduce;
  c.num_parallel = k.num_parallel;
  c.domain = s.partial_shape;
  lir::Expr load;
  load.kind = lir::ExprKind::kLoad;
  load.dtype = out_dtype;
  load.load.buffer = partial_buffer;
  int64_t stride = 1;
  load.load.strides.assign(c.domain.size(), 0);
  for (size_t d = c.domain.size(); d-- > 0;) {
    load.load.strides[d] = stride;
    stride *= c.domain[d];
  }
  c.exprs = {load};
  c.stores = {{k.stores[0].buffer, 0}};
  return s;
}

}  // namespace rlx
