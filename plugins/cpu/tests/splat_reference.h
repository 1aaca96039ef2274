// An independent, straightforward Gaussian-splatting renderer for the tests: f64, no tiles
// lists, no sort structure. Each pixel walks every Gaussian in depth order and keeps those whose
// 16x16-tile rectangle covers the pixel's tile (the rule the tiled kernels implement), written
// from the formulas in docs/splatting.md rather than from the kernels.
#pragma once
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

namespace rlx::splat_test {

struct Scene {
  int n = 0, width = 0, height = 0;
  std::vector<double> means, scales, quats, opacities, colors;  // [n,3] [n,3] [n,4] [n] [n,3]
  std::vector<double> view = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  std::vector<double> intrinsics;  // fx fy cx cy
  std::vector<double> background = {0.1, 0.2, 0.3};
};

// n random Gaussians in front of a camera looking down +z.
inline Scene random_scene(int n, int width, int height, unsigned seed, double max_opacity = 1.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> normal(0, 1);
  Scene s;
  s.n = n, s.width = width, s.height = height;
  s.intrinsics = {0.9 * width, 0.9 * width, 0.5 * width, 0.5 * height};
  s.view[3] = 0.1, s.view[7] = -0.05, s.view[11] = 0.5;  // a small translation
  for (int i = 0; i < n; ++i) {
    const double z = 2 + 4 * u(rng);
    s.means.insert(s.means.end(), {(u(rng) - 0.5) * z * 1.2, (u(rng) - 0.5) * z * 0.9, z});
    for (int j = 0; j < 3; ++j) s.scales.push_back(std::exp(-3.5 + 2 * u(rng)));
    for (int j = 0; j < 4; ++j) s.quats.push_back(normal(rng));
    s.opacities.push_back(0.05 + (max_opacity - 0.05) * u(rng));
    for (int j = 0; j < 3; ++j) s.colors.push_back(u(rng));
  }
  return s;
}

struct Render {
  std::vector<double> image, final_t;  // [h,w,3] [h,w]
  std::vector<int> last_id;            // the last Gaussian composited at each pixel, -1: none
};

inline Render reference_render(const Scene& s, double near = 0.01) {
  struct Proj {
    double mx, my, A, B, C, z;
    int x0, y0, x1, y1;
    bool ok = false;
  };
  const int tiles_x = (s.width + 15) / 16, tiles_y = (s.height + 15) / 16;
  std::vector<Proj> p(s.n);
  for (int i = 0; i < s.n; ++i) {
    const double* v = s.view.data();
    const double* m = &s.means[3 * i];
    double c[3];
    for (int r = 0; r < 3; ++r)
      c[r] = v[4 * r] * m[0] + v[4 * r + 1] * m[1] + v[4 * r + 2] * m[2] + v[4 * r + 3];
    if (c[2] < near) continue;
    double q[4];
    const double* qi = &s.quats[4 * i];
    const double qn = std::sqrt(qi[0] * qi[0] + qi[1] * qi[1] + qi[2] * qi[2] + qi[3] * qi[3]);
    for (int j = 0; j < 4; ++j) q[j] = qi[j] / qn;
    const double w = q[0], x = q[1], y = q[2], z = q[3];
    const double R[3][3] = {{1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)},
                            {2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)},
                            {2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)}};
    // Sigma = R S S R^T, seen by the camera: V Sigma V^T.
    double sig[3][3] = {}, cam[3][3] = {};
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b)
        for (int k = 0; k < 3; ++k)
          sig[a][b] += R[a][k] * R[b][k] * s.scales[3 * i + k] * s.scales[3 * i + k];
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b)
        for (int k = 0; k < 3; ++k)
          for (int l = 0; l < 3; ++l) cam[a][b] += v[4 * a + k] * sig[k][l] * v[4 * b + l];
    const double fx = s.intrinsics[0], fy = s.intrinsics[1];
    const double J[2][3] = {{fx / c[2], 0, -fx * c[0] / (c[2] * c[2])},
                            {0, fy / c[2], -fy * c[1] / (c[2] * c[2])}};
    double cov[2][2] = {};
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 2; ++b)
        for (int k = 0; k < 3; ++k)
          for (int l = 0; l < 3; ++l) cov[a][b] += J[a][k] * cam[k][l] * J[b][l];
    cov[0][0] += 0.3, cov[1][1] += 0.3;
    const double det = cov[0][0] * cov[1][1] - cov[0][1] * cov[1][0];
    if (det <= 0) continue;
    const double mid = 0.5 * (cov[0][0] + cov[1][1]);
    const int radius =
        static_cast<int>(std::ceil(3 * std::sqrt(mid + std::sqrt(std::max(0.1, mid * mid - det)))));
    Proj& o = p[i];
    o.mx = fx * c[0] / c[2] + s.intrinsics[2];
    o.my = fy * c[1] / c[2] + s.intrinsics[3];
    o.A = cov[1][1] / det, o.B = -cov[0][1] / det, o.C = cov[0][0] / det, o.z = c[2];
    auto clampi = [](double v, int hi) {
      return std::min(std::max(static_cast<int>(std::floor(v)), 0), hi);
    };
    o.x0 = clampi((o.mx - radius) / 16, tiles_x), o.x1 = clampi((o.mx + radius + 15) / 16, tiles_x);
    o.y0 = clampi((o.my - radius) / 16, tiles_y), o.y1 = clampi((o.my + radius + 15) / 16, tiles_y);
    o.ok = o.x1 > o.x0 && o.y1 > o.y0;
  }
  std::vector<int> order(s.n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a].z < p[b].z; });
  Render out;
  out.image.assign(size_t(s.width) * s.height * 3, 0);
  out.final_t.assign(size_t(s.width) * s.height, 1);
  out.last_id.assign(size_t(s.width) * s.height, -1);
  for (int py = 0; py < s.height; ++py)
    for (int px = 0; px < s.width; ++px) {
      const int tx = px / 16, ty = py / 16;
      double T = 1, col[3] = {0, 0, 0};
      int last = -1;
      for (int i : order) {
        const Proj& g = p[i];
        if (!g.ok || tx < g.x0 || tx >= g.x1 || ty < g.y0 || ty >= g.y1) continue;
        const double dx = g.mx - (px + 0.5), dy = g.my - (py + 0.5);
        const double sigma = 0.5 * (g.A * dx * dx + g.C * dy * dy) + g.B * dx * dy;
        if (sigma < 0) continue;
        const double alpha = std::min(0.99, s.opacities[i] * std::exp(-sigma));
        if (alpha < 1.0 / 255) continue;
        if (T * (1 - alpha) <= 1e-4) break;
        for (int c = 0; c < 3; ++c) col[c] += s.colors[3 * i + c] * alpha * T;
        T *= 1 - alpha;
        last = i;
      }
      const size_t pix = size_t(py) * s.width + px;
      for (int c = 0; c < 3; ++c) out.image[3 * pix + c] = col[c] + T * s.background[c];
      out.final_t[pix] = T;
      out.last_id[pix] = last;
    }
  return out;
}

}  // namespace rlx::splat_test
