// ProjectGaussians and its backward on the cpu: one Gaussian per iteration, in parallel.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "splat_kernels.h"

namespace rlx::cpu::splat {

namespace {

using M3 = std::array<std::array<double, 3>, 3>;

constexpr double kLowPass = 0.3;  // pixels^2 added to the 2D covariance's diagonal

double near_of(const Attrs& a) {
  auto it = a.find("near");
  if (it == a.end()) return 0.01;
  if (auto* d = std::get_if<double>(&it->second)) return *d;
  return static_cast<double>(std::get<int64_t>(it->second));
}

M3 mul(const M3& a, const M3& b) {
  M3 c{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) c[i][j] += a[i][k] * b[k][j];
  return c;
}

M3 transpose(const M3& a) {
  M3 t{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) t[i][j] = a[j][i];
  return t;
}

// Rotation of the unit quaternion (w, x, y, z).
M3 rotation(const std::array<double, 4>& q) {
  const double w = q[0], x = q[1], y = q[2], z = q[3];
  return {{{1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)},
           {2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)},
           {2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)}}};
}

// Everything the forward pass computes for one Gaussian, in f64; the backward pass reruns it.
struct Projected {
  bool visible = false;
  double x = 0, y = 0, z = 0;  // camera space
  std::array<double, 4> qn{};  // normalised quaternion
  double qnorm = 0;
  M3 rot{}, m{}, cov_cam{};             // R, M = R diag(s), W Sigma W^T
  double a = 0, b = 0, c = 0, det = 0;  // 2D covariance (with the low-pass)
  double mx = 0, my = 0;
  int radius = 0;
  int64_t tiles = 0;
};

template <typename T>
Projected project_one(const Grid& g, double near, const T* mean, const T* scale, const T* quat,
                      const M3& w, const double* t, const T* k) {
  Projected p;
  p.x = w[0][0] * mean[0] + w[0][1] * mean[1] + w[0][2] * mean[2] + t[0];
  p.y = w[1][0] * mean[0] + w[1][1] * mean[1] + w[1][2] * mean[2] + t[1];
  p.z = w[2][0] * mean[0] + w[2][1] * mean[1] + w[2][2] * mean[2] + t[2];
  if (!(p.z >= near)) return p;
  p.qnorm = std::sqrt(double(quat[0]) * quat[0] + double(quat[1]) * quat[1] +
                      double(quat[2]) * quat[2] + double(quat[3]) * quat[3]);
  if (!(p.qnorm > 0)) return p;
  for (int i = 0; i < 4; ++i) p.qn[i] = quat[i] / p.qnorm;
  p.rot = rotation(p.qn);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) p.m[i][j] = p.rot[i][j] * scale[j];
  const M3 wm = mul(w, p.m);
  p.cov_cam = mul(wm, transpose(wm));
  const double fx = k[0], fy = k[1], iz = 1 / p.z;
  const double j00 = fx * iz, j02 = -fx * p.x * iz * iz, j11 = fy * iz, j12 = -fy * p.y * iz * iz;
  const M3& s = p.cov_cam;
  // J S J^T with J = [[j00, 0, j02], [0, j11, j12]].
  p.a = j00 * j00 * s[0][0] + 2 * j00 * j02 * s[0][2] + j02 * j02 * s[2][2] + kLowPass;
  p.b = j00 * j11 * s[0][1] + j00 * j12 * s[0][2] + j02 * j11 * s[2][1] + j02 * j12 * s[2][2];
  p.c = j11 * j11 * s[1][1] + 2 * j11 * j12 * s[1][2] + j12 * j12 * s[2][2] + kLowPass;
  p.det = p.a * p.c - p.b * p.b;
  if (!(p.det > 0)) return p;
  const double mid = 0.5 * (p.a + p.c);
  const double lambda = mid + std::sqrt(std::max(0.1, mid * mid - p.det));
  p.radius = static_cast<int>(std::ceil(3 * std::sqrt(lambda)));
  p.mx = fx * p.x * iz + k[2];
  p.my = fy * p.y * iz + k[3];
  p.tiles = tile_rect(g, p.mx, p.my, p.radius).count();
  p.visible = p.tiles > 0;
  return p;
}

// What the node's attributes and view matrix say, the view's rotation and translation in f64.
struct Camera {
  Grid grid;
  double near;
  M3 w;
  double t[3];
  template <typename T>
  Camera(const Attrs& a, const T* v) : grid(a), near(near_of(a)) {
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) w[i][j] = v[i * 4 + j];
      t[i] = v[i * 4 + 3];
    }
  }
};

}  // namespace

Grid::Grid(const Attrs& a)
    : width(static_cast<int>(std::get<int64_t>(a.at("width")))),
      height(static_cast<int>(std::get<int64_t>(a.at("height")))),
      tiles_x((width + kTile - 1) / kTile),
      tiles_y((height + kTile - 1) / kTile) {}

template <typename T>
TileRect tile_rect(const Grid& g, T mx, T my, int radius) {
  auto lo = [](double v, int limit) {
    return std::clamp(static_cast<int>(std::floor(v / kTile)), 0, limit);
  };
  auto hi = [](double v, int limit) {
    return std::clamp(static_cast<int>(std::floor((v + kTile - 1) / kTile)), 0, limit);
  };
  TileRect r{lo(double(mx) - radius, g.tiles_x), lo(double(my) - radius, g.tiles_y),
             hi(double(mx) + radius, g.tiles_x), hi(double(my) + radius, g.tiles_y)};
  if (r.x1 < r.x0) r.x1 = r.x0;
  if (r.y1 < r.y0) r.y1 = r.y0;
  return r;
}

template <typename T>
void project(const Attrs& a, int64_t n, const T* means, const T* scales, const T* quats,
             const T* view, const T* intr, T* means2d, T* conics, T* depths, int32_t* radii,
             int32_t* tile_counts) {
  const Camera cam(a, view);
  const Grid& g = cam.grid;
  const double near = cam.near;
  const M3& w = cam.w;
  const double* t = cam.t;
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, 1024), [&](const auto& r) {
    for (int64_t i = r.begin(); i < r.end(); ++i) {
      Projected p = project_one(g, near, means + 3 * i, scales + 3 * i, quats + 4 * i, w, t, intr);
      if (!p.visible) p = Projected{};
      means2d[2 * i] = T(p.mx), means2d[2 * i + 1] = T(p.my);
      const double inv = p.visible ? 1 / p.det : 0;
      conics[3 * i] = T(p.c * inv), conics[3 * i + 1] = T(-p.b * inv);
      conics[3 * i + 2] = T(p.a * inv);
      depths[i] = T(p.z * p.visible);
      radii[i] = p.radius;
      tile_counts[i] = static_cast<int32_t>(p.tiles);
    }
  });
}

template <typename T>
void project_backward(const Attrs& a, int64_t n, const T* means, const T* scales, const T* quats,
                      const T* view, const T* intr, const int32_t* radii, const T* d_means2d,
                      const T* d_conics, const T* d_depths, T* d_means, T* d_scales, T* d_quats) {
  const Camera cam(a, view);
  const Grid& g = cam.grid;
  const double near = cam.near;
  const M3& w = cam.w;
  const double* t = cam.t;
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, 1024), [&](const auto& r) {
    for (int64_t i = r.begin(); i < r.end(); ++i) {
      std::fill_n(d_means + 3 * i, 3, T(0));
      std::fill_n(d_scales + 3 * i, 3, T(0));
      std::fill_n(d_quats + 4 * i, 4, T(0));
      if (radii[i] <= 0) continue;
      const Projected p =
          project_one(g, near, means + 3 * i, scales + 3 * i, quats + 4 * i, w, t, intr);
      if (!p.visible) continue;
      const double fx = intr[0], fy = intr[1], iz = 1 / p.z;
      // Conic (A, B, C) = (c, -b, a) / det: back to the covariance entries a, b, c.
      const double dA = d_conics[3 * i], dB = d_conics[3 * i + 1], dC = d_conics[3 * i + 2];
      const double a2 = p.a, b2 = p.b, c2 = p.c, id2 = 1 / (p.det * p.det);
      const double da = (-dA * c2 * c2 + dB * b2 * c2 - dC * b2 * b2) * id2;
      const double db = (2 * dA * b2 * c2 - dB * (p.det + 2 * b2 * b2) + 2 * dC * a2 * b2) * id2;
      const double dc = (-dA * b2 * b2 + dB * a2 * b2 - dC * a2 * a2) * id2;
      // G: the gradient as a symmetric matrix (b sits in two entries).
      const double g00 = da, g01 = 0.5 * db, g11 = dc;
      const double j00 = fx * iz, j02 = -fx * p.x * iz * iz, j11 = fy * iz,
                   j12 = -fy * p.y * iz * iz;
      const double J[2][3] = {{j00, 0, j02}, {0, j11, j12}};
      const double G[2][2] = {{g00, g01}, {g01, g11}};
      // dS = J^T G J; dJ = 2 G J S.
      M3 dS{};
      for (int u = 0; u < 3; ++u)
        for (int v = 0; v < 3; ++v)
          for (int r2 = 0; r2 < 2; ++r2)
            for (int c3 = 0; c3 < 2; ++c3) dS[u][v] += J[r2][u] * G[r2][c3] * J[c3][v];
      double GJ[2][3] = {}, dJ[2][3] = {};
      for (int r2 = 0; r2 < 2; ++r2)
        for (int v = 0; v < 3; ++v)
          for (int c3 = 0; c3 < 2; ++c3) GJ[r2][v] += G[r2][c3] * J[c3][v];
      for (int r2 = 0; r2 < 2; ++r2)
        for (int v = 0; v < 3; ++v)
          for (int u = 0; u < 3; ++u) dJ[r2][v] += 2 * GJ[r2][u] * p.cov_cam[u][v];
      const double dmx = d_means2d[2 * i], dmy = d_means2d[2 * i + 1];
      double dx = dJ[0][2] * (-fx * iz * iz) + dmx * fx * iz;
      double dy = dJ[1][2] * (-fy * iz * iz) + dmy * fy * iz;
      double dz = dJ[0][0] * (-fx * iz * iz) + dJ[0][2] * (2 * fx * p.x * iz * iz * iz) +
                  dJ[1][1] * (-fy * iz * iz) + dJ[1][2] * (2 * fy * p.y * iz * iz * iz) -
                  dmx * fx * p.x * iz * iz - dmy * fy * p.y * iz * iz + double(d_depths[i]);
      for (int j = 0; j < 3; ++j)
        d_means[3 * i + j] = T(w[0][j] * dx + w[1][j] * dy + w[2][j] * dz);
      // Sigma = M M^T with W Sigma W^T seen by the camera: dSigma = W^T dS W, dM = 2 dSigma M.
      const M3 dsigma = mul(transpose(w), mul(dS, w));
      const M3 dm = mul(dsigma, p.m);
      M3 dr{};
      for (int u = 0; u < 3; ++u)
        for (int j = 0; j < 3; ++j) {
          dr[u][j] = 2 * dm[u][j] * scales[3 * i + j];
          d_scales[3 * i + j] += T(2 * dm[u][j] * p.rot[u][j]);
        }
      const double qw = p.qn[0], qx = p.qn[1], qy = p.qn[2], qz = p.qn[3];
      const std::array<double, 4> dq = {
          2 * (-qz * dr[0][1] + qy * dr[0][2] + qz * dr[1][0] - qx * dr[1][2] - qy * dr[2][0] +
               qx * dr[2][1]),
          2 * (qy * dr[0][1] + qz * dr[0][2] + qy * dr[1][0] - 2 * qx * dr[1][1] - qw * dr[1][2] +
               qz * dr[2][0] + qw * dr[2][1] - 2 * qx * dr[2][2]),
          2 * (-2 * qy * dr[0][0] + qx * dr[0][1] + qw * dr[0][2] + qx * dr[1][0] + qz * dr[1][2] -
               qw * dr[2][0] + qz * dr[2][1] - 2 * qy * dr[2][2]),
          2 * (-2 * qz * dr[0][0] - qw * dr[0][1] + qx * dr[0][2] + qw * dr[1][0] -
               2 * qz * dr[1][1] + qy * dr[1][2] + qx * dr[2][0] + qy * dr[2][1])};
      // Through the normalisation q / |q|.
      const double dot = qw * dq[0] + qx * dq[1] + qy * dq[2] + qz * dq[3];
      for (int j = 0; j < 4; ++j) d_quats[4 * i + j] = T((dq[j] - p.qn[j] * dot) / p.qnorm);
    }
  });
}

#define RLX_SPLAT_PROJECT(T)                                                                       \
  template TileRect tile_rect<T>(const Grid&, T, T, int);                                          \
  template void project<T>(const Attrs&, int64_t, const T*, const T*, const T*, const T*,          \
                           const T*, T*, T*, T*, int32_t*, int32_t*);                              \
  template void project_backward<T>(const Attrs&, int64_t, const T*, const T*, const T*, const T*, \
                                    const T*, const int32_t*, const T*, const T*, const T*, T*,    \
                                    T*, T*);
RLX_SPLAT_PROJECT(float)
RLX_SPLAT_PROJECT(double)
#undef RLX_SPLAT_PROJECT

}  // namespace rlx::cpu::splat
