// Rasterize and its backward on the cpu, one 16x16 tile per task. Inside a tile the loop runs
// over the tile's Gaussians, front to back, with the 256 pixels as the inner loop (the SIMD
// direction); a tile stops as soon as every pixel in it is saturated.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "splat_kernels.h"

namespace rlx::cpu::splat {

namespace {

constexpr double kMinAlpha = 1.0 / 255;
constexpr double kMaxAlpha = 0.99;
constexpr double kMinT = 1e-4;
constexpr int kPixels = kTile * kTile;

// The pixels of tile t that lie in the image.
struct TilePixels {
  int x0, y0, w, h;
  TilePixels(const Grid& g, int t)
      : x0(t % g.tiles_x * kTile),
        y0(t / g.tiles_x * kTile),
        w(std::min(kTile, g.width - x0)),
        h(std::min(kTile, g.height - y0)) {}
  int count() const { return w * h; }
  // Pixel centres, row by row.
  template <typename T>
  void centres(T* xs, T* ys) const {
    for (int p = 0; p < count(); ++p) xs[p] = T(x0 + p % w + 0.5), ys[p] = T(y0 + p / w + 0.5);
  }
  int64_t index(const Grid& g, int p) const { return int64_t{y0 + p / w} * g.width + x0 + p % w; }
};

// RasterArgs' float inputs at their type.
template <typename T>
struct Typed {
  const T *means, *conics, *colors, *opac, *bg;
  explicit Typed(const RasterArgs& r)
      : means(static_cast<const T*>(r.means2d)),
        conics(static_cast<const T*>(r.conics)),
        colors(static_cast<const T*>(r.colors)),
        opac(static_cast<const T*>(r.opacities)),
        bg(static_cast<const T*>(r.background)) {}
};

// One Gaussian's contribution at pixel (px, py): sigma, and alpha before and after the clamp.
template <typename T>
struct Splat {
  T mx, my, ca, cb, cc, o;
  Splat(const T* m, const T* c, const T* op, int32_t g)
      : mx(m[2 * g]),
        my(m[2 * g + 1]),
        ca(c[3 * g]),
        cb(c[3 * g + 1]),
        cc(c[3 * g + 2]),
        o(op[g]) {}
  T sigma(T dx, T dy) const { return T(0.5) * (ca * dx * dx + cc * dy * dy) + cb * dx * dy; }
  // sigma at every pixel of the tile: a loop without branches, which the compiler vectorises.
  void sigmas(const T* xs, const T* ys, int np, T* out) const {
    for (int p = 0; p < np; ++p) out[p] = sigma(mx - xs[p], my - ys[p]);
  }
  // Beyond this sigma, opacity * exp(-sigma) is surely below 1/255 (the margin covers the
  // rounding of log and exp), so most pixels of a tile skip the exp; those near the threshold
  // still take the exact test below.
  T far() const { return o > 0 ? T(std::log(double(o) * 255.0) + 1e-3) : T(-1); }
};

}  // namespace

template <typename T>
void rasterize(const Attrs& a, const RasterArgs& r, T* image, T* final_t, int32_t* last) {
  const Grid g(a);
  const int64_t C = r.channels;
  const Typed<T> in(r);
  tbb::parallel_for(tbb::blocked_range<int>(0, g.tiles()), [&](const auto& range) {
    std::array<T, kPixels> trans;
    std::array<int32_t, kPixels> last_k;
    std::array<bool, kPixels> done;
    std::vector<T> acc(static_cast<size_t>(kPixels * C));
    alignas(64) std::array<T, kPixels> xs, ys, sig;
    for (int t = range.begin(); t < range.end(); ++t) {
      const TilePixels tp(g, t);
      const int np = tp.count();
      tp.centres(xs.data(), ys.data());
      trans.fill(T(1));
      last_k.fill(-1);
      done.fill(false);
      std::fill(acc.begin(), acc.end(), T(0));
      int active = np;
      for (int32_t k = r.tile_offsets[t]; k < r.tile_offsets[t + 1] && active > 0; ++k) {
        const int32_t id = r.ids[k];
        const Splat<T> s(in.means, in.conics, in.opac, id);
        const T* col = in.colors + id * C;
        const T far = s.far();
        s.sigmas(xs.data(), ys.data(), np, sig.data());
        for (int p = 0; p < np; ++p) {
          const T sigma = sig[p];
          if (sigma < 0 || sigma > far || done[p]) continue;
          const T alpha = std::min(T(kMaxAlpha), s.o * std::exp(-sigma));
          if (alpha < T(kMinAlpha)) continue;
          const T next = trans[p] * (1 - alpha);
          if (next <= T(kMinT)) {
            done[p] = true;
            --active;
            continue;
          }
          for (int64_t c = 0; c < C; ++c) acc[p * C + c] += col[c] * alpha * trans[p];
          trans[p] = next;
          last_k[p] = k;
        }
      }
      for (int p = 0; p < np; ++p) {
        const int64_t pix = tp.index(g, p);
        for (int64_t c = 0; c < C; ++c) image[pix * C + c] = acc[p * C + c] + trans[p] * in.bg[c];
        final_t[pix] = trans[p];
        last[pix] = last_k[p];
      }
    }
  });
}

template <typename T>
void rasterize_backward(const Attrs& a, const RasterArgs& r, const T* final_t, const int32_t* last,
                        const T* d_image, const T* d_final_t, T* d_means2d, T* d_conics,
                        T* d_colors, T* d_opacities, T* d_background) {
  const Grid g(a);
  const int64_t C = r.channels;
  const Typed<T> in(r);
  // Each (tile, Gaussian) pair belongs to one tile, so tiles write their pair's gradients
  // without races; the pairs are summed per Gaussian afterwards. Per pair: 2 mean, 3 conic,
  // 1 opacity, C colour entries.
  const int64_t stride = 6 + C;
  const int64_t pairs = r.tile_offsets[g.tiles()];
  std::vector<T> per_pair(static_cast<size_t>(pairs * stride), T(0));
  std::vector<T> bg_parts(static_cast<size_t>(g.tiles() * C), T(0));
  tbb::parallel_for(tbb::blocked_range<int>(0, g.tiles()), [&](const auto& range) {
    std::array<T, kPixels> trans, dft;
    std::vector<T> behind(static_cast<size_t>(kPixels * C)), v(static_cast<size_t>(kPixels * C));
    std::array<int32_t, kPixels> last_k;
    alignas(64) std::array<T, kPixels> xs, ys, sig;
    for (int t = range.begin(); t < range.end(); ++t) {
      const TilePixels tp(g, t);
      const int np = tp.count();
      tp.centres(xs.data(), ys.data());
      int32_t top = -1;
      for (int p = 0; p < np; ++p) {
        const int64_t pix = tp.index(g, p);
        trans[p] = final_t[pix];
        dft[p] = d_final_t[pix] * final_t[pix];
        last_k[p] = last[pix];
        top = std::max(top, last_k[p]);
        for (int64_t c = 0; c < C; ++c) {
          v[p * C + c] = d_image[pix * C + c];
          behind[p * C + c] = final_t[pix] * in.bg[c];
          bg_parts[t * C + c] += d_image[pix * C + c] * final_t[pix];
        }
      }
      for (int32_t k = top; k >= r.tile_offsets[t]; --k) {
        const int32_t id = r.ids[k];
        const Splat<T> s(in.means, in.conics, in.opac, id);
        const T* col = in.colors + id * C;
        T* out = per_pair.data() + k * stride;
        const T far = s.far();
        s.sigmas(xs.data(), ys.data(), np, sig.data());
        for (int p = 0; p < np; ++p) {
          const T sigma = sig[p];
          if (sigma < 0 || sigma > far || k > last_k[p]) continue;
          const T dx = s.mx - xs[p], dy = s.my - ys[p];
          const T vis = std::exp(-sigma);
          const T raw = s.o * vis;
          const T alpha = std::min(T(kMaxAlpha), raw);
          if (alpha < T(kMinAlpha)) continue;
          const T before = trans[p] / (1 - alpha);
          // d pixel / d alpha = c T_before - (what lies behind) / (1 - alpha); final T likewise.
          T d_alpha = -dft[p] / (1 - alpha);
          for (int64_t c = 0; c < C; ++c) {
            const T vc = v[p * C + c];
            d_alpha += vc * (col[c] * before - behind[p * C + c] / (1 - alpha));
            out[6 + c] += alpha * before * vc;
            behind[p * C + c] += col[c] * alpha * before;
          }
          trans[p] = before;
          if (raw > T(kMaxAlpha)) continue;  // clamped: alpha does not move with o or sigma
          out[5] += vis * d_alpha;
          const T d_sigma = -alpha * d_alpha;
          out[0] += (s.ca * dx + s.cb * dy) * d_sigma;
          out[1] += (s.cb * dx + s.cc * dy) * d_sigma;
          out[2] += T(0.5) * dx * dx * d_sigma;
          out[3] += dx * dy * d_sigma;
          out[4] += T(0.5) * dy * dy * d_sigma;
        }
      }
    }
  });
  std::fill_n(d_means2d, 2 * r.n, T(0));
  std::fill_n(d_conics, 3 * r.n, T(0));
  std::fill_n(d_colors, C * r.n, T(0));
  std::fill_n(d_opacities, r.n, T(0));
  for (int64_t k = 0; k < pairs; ++k) {
    const int64_t id = r.ids[k];
    const T* in = per_pair.data() + k * stride;
    d_means2d[2 * id] += in[0], d_means2d[2 * id + 1] += in[1];
    for (int j = 0; j < 3; ++j) d_conics[3 * id + j] += in[2 + j];
    d_opacities[id] += in[5];
    for (int64_t c = 0; c < C; ++c) d_colors[id * C + c] += in[6 + c];
  }
  for (int64_t c = 0; c < C; ++c) {
    d_background[c] = T(0);
    for (int t = 0; t < g.tiles(); ++t) d_background[c] += bg_parts[t * C + c];
  }
}

#define RLX_SPLAT_RASTER(T)                                                                      \
  template void rasterize<T>(const Attrs&, const RasterArgs&, T*, T*, int32_t*);                 \
  template void rasterize_backward<T>(const Attrs&, const RasterArgs&, const T*, const int32_t*, \
                                      const T*, const T*, T*, T*, T*, T*, T*);
RLX_SPLAT_RASTER(float)
RLX_SPLAT_RASTER(double)
#undef RLX_SPLAT_RASTER

}  // namespace rlx::cpu::splat
