// TileBin on the cpu: every (tile, Gaussian) pair, ordered by tile and then by depth. The
// tile part of the key is a counting sort (a stable one-digit radix pass over tile ids); each
// tile's list is then sorted by depth on its own, the tiles in parallel.
#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>

#include "rlx/core/error.h"
#include "splat_kernels.h"

namespace rlx::cpu::splat {

template <typename T>
void tile_bin(const Attrs& a, int64_t n, const T* means2d, const T* depths, const int32_t* radii,
              int64_t capacity, int32_t* tile_offsets, int32_t* ids) {
  const Grid g(a);
  // Where each Gaussian's pairs start, in Gaussian order.
  std::vector<int64_t> start(static_cast<size_t>(n) + 1, 0);
  std::vector<TileRect> rects(static_cast<size_t>(n));
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, 4096), [&](const auto& r) {
    for (int64_t i = r.begin(); i < r.end(); ++i)
      if (radii[i] > 0) rects[i] = tile_rect(g, means2d[2 * i], means2d[2 * i + 1], radii[i]);
  });
  for (int64_t i = 0; i < n; ++i) start[i + 1] = start[i] + rects[i].count();
  const int64_t pairs = start[n];
  if (pairs > capacity)
    throw_user_error(fmt::format(
        "TileBin: the Gaussians cover {} (tile, Gaussian) pairs but capacity is {}; build the "
        "graph with capacity >= {} (the sum of ProjectGaussians' tile_counts bounds it)",
        pairs, capacity, pairs));
  if (pairs > INT32_MAX)
    throw_user_error(fmt::format("TileBin: {} pairs do not fit i32 offsets", pairs));
  std::vector<int32_t> tile_of(static_cast<size_t>(pairs));
  std::vector<int64_t> count(static_cast<size_t>(g.tiles()) + 1, 0);
  for (int64_t i = 0; i < n; ++i) {
    const TileRect& r = rects[i];
    int64_t k = start[i];
    for (int ty = r.y0; ty < r.y1; ++ty)
      for (int tx = r.x0; tx < r.x1; ++tx) {
        const int tile = ty * g.tiles_x + tx;
        tile_of[k++] = tile;
        ++count[tile + 1];
      }
  }
  for (int t = 0; t < g.tiles(); ++t) count[t + 1] += count[t];
  for (int t = 0; t <= g.tiles(); ++t) tile_offsets[t] = static_cast<int32_t>(count[t]);
  std::vector<int64_t> fill(count.begin(), count.end() - 1);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = start[i]; k < start[i + 1]; ++k)
      ids[fill[tile_of[k]]++] = static_cast<int32_t>(i);
  std::fill(ids + pairs, ids + capacity, -1);
  tbb::parallel_for(tbb::blocked_range<int>(0, g.tiles()), [&](const auto& r) {
    for (int t = r.begin(); t < r.end(); ++t)
      std::sort(ids + tile_offsets[t], ids + tile_offsets[t + 1], [&](int32_t x, int32_t y) {
        return depths[x] < depths[y] || (depths[x] == depths[y] && x < y);
      });
  });
}

template void tile_bin<float>(const Attrs&, int64_t, const float*, const float*, const int32_t*,
                              int64_t, int32_t*, int32_t*);
template void tile_bin<double>(const Attrs&, int64_t, const double*, const double*, const int32_t*,
                               int64_t, int32_t*, int32_t*);

}  // namespace rlx::cpu::splat
