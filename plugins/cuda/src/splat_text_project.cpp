// The CUDA text of ProjectGaussians and its backward op (splat_cuda_kernels.cpp puts the module
// together; splat_cuda_text.h names the pieces). The arithmetic follows the cpu's kernels operation
// for operation, as splat_cuda_kernels.h says.
#include "splat_cuda_text.h"

namespace rlx::cuda::splat_text {

// ProjectGaussians' per-Gaussian computation, all in f64 as on the cpu (splat_project.cpp).
extern const char* const kProjectOne = R"(
constexpr double kLowPass = 0.3;  // pixels^2 added to the 2D covariance's diagonal

struct M3 {
  double v[3][3];
};

__device__ M3 mul(const M3& a, const M3& b) {
  M3 c;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      double s = 0;
      for (int k = 0; k < 3; ++k) s += a.v[i][k] * b.v[k][j];
      c.v[i][j] = s;
    }
  return c;
}

__device__ M3 transposed(const M3& a) {
  M3 t;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) t.v[i][j] = a.v[j][i];
  return t;
}

// The view's rotation W and translation t.
struct Camera {
  M3 w;
  double t[3];
};

__device__ Camera camera_of(const T* view) {
  Camera c;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) c.w.v[i][j] = view[i * 4 + j];
    c.t[i] = view[i * 4 + 3];
  }
  return c;
}

struct Projected {
  bool visible;
  double x, y, z;  // camera space
  double qn[4];    // the normalised quaternion
  double qnorm;
  M3 rot, m, cov;        // R, M = R diag(s), W Sigma W^T
  double a, b, c, det;   // the 2D covariance, low-pass included
  double mx, my;
  int radius;
  long long tiles;
};

__device__ Projected project_one(long long i, const T* means, const T* scales, const T* quats,
                                 const Camera& cam, const T* k) {
  Projected p = {};
  const T* mean = means + 3 * i;
  const T* scale = scales + 3 * i;
  const T* q = quats + 4 * i;
  const M3& w = cam.w;
  p.x = w.v[0][0] * mean[0] + w.v[0][1] * mean[1] + w.v[0][2] * mean[2] + cam.t[0];
  p.y = w.v[1][0] * mean[0] + w.v[1][1] * mean[1] + w.v[1][2] * mean[2] + cam.t[1];
  p.z = w.v[2][0] * mean[0] + w.v[2][1] * mean[1] + w.v[2][2] * mean[2] + cam.t[2];
  if (!(p.z >= near_plane())) return p;
  p.qnorm = sqrt((double)q[0] * q[0] + (double)q[1] * q[1] + (double)q[2] * q[2] +
                 (double)q[3] * q[3]);
  if (!(p.qnorm > 0)) return p;
  for (int j = 0; j < 4; ++j) p.qn[j] = q[j] / p.qnorm;
  const double qw = p.qn[0], qx = p.qn[1], qy = p.qn[2], qz = p.qn[3];
  p.rot.v[0][0] = 1 - 2 * (qy * qy + qz * qz);
  p.rot.v[0][1] = 2 * (qx * qy - qw * qz);
  p.rot.v[0][2] = 2 * (qx * qz + qw * qy);
  p.rot.v[1][0] = 2 * (qx * qy + qw * qz);
  p.rot.v[1][1] = 1 - 2 * (qx * qx + qz * qz);
  p.rot.v[1][2] = 2 * (qy * qz - qw * qx);
  p.rot.v[2][0] = 2 * (qx * qz - qw * qy);
  p.rot.v[2][1] = 2 * (qy * qz + qw * qx);
  p.rot.v[2][2] = 1 - 2 * (qx * qx + qy * qy);
  for (int r = 0; r < 3; ++r)
    for (int j = 0; j < 3; ++j) p.m.v[r][j] = p.rot.v[r][j] * scale[j];
  const M3 wm = mul(w, p.m);
  p.cov = mul(wm, transposed(wm));
  const double fx = k[0], fy = k[1], iz = 1 / p.z;
  const double j00 = fx * iz, j02 = -fx * p.x * iz * iz, j11 = fy * iz,
               j12 = -fy * p.y * iz * iz;
  const M3& s = p.cov;
  // J S J^T with J = [[j00, 0, j02], [0, j11, j12]].
  p.a = j00 * j00 * s.v[0][0] + 2 * j00 * j02 * s.v[0][2] + j02 * j02 * s.v[2][2] + kLowPass;
  p.b = j00 * j11 * s.v[0][1] + j00 * j12 * s.v[0][2] + j02 * j11 * s.v[2][1] +
        j02 * j12 * s.v[2][2];
  p.c = j11 * j11 * s.v[1][1] + 2 * j11 * j12 * s.v[1][2] + j12 * j12 * s.v[2][2] + kLowPass;
  p.det = p.a * p.c - p.b * p.b;
  if (!(p.det > 0)) return p;
  const double mid = 0.5 * (p.a + p.c);
  const double spread = mid * mid - p.det;
  const double lambda = mid + sqrt(0.1 < spread ? spread : 0.1);  // std::max(0.1, spread)
  p.radius = to_int(ceil(3 * sqrt(lambda)));
  p.mx = fx * p.x * iz + k[2];
  p.my = fy * p.y * iz + k[3];
  p.tiles = tile_rect(p.mx, p.my, p.radius).count();
  p.visible = p.tiles > 0;
  return p;
}
)";

extern const char* const kProject = R"(
// One thread per Gaussian; a culled one gets zeros (and radius 0).
extern "C" __global__ void project(const T* means, const T* scales, const T* quats, const T* view,
                                   const T* intr, T* means2d, T* conics, T* depths, int* radii,
                                   int* tile_counts) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= kN) return;
  Projected p = project_one(i, means, scales, quats, camera_of(view), intr);
  if (!p.visible) p = Projected{};
  means2d[2 * i] = T(p.mx);
  means2d[2 * i + 1] = T(p.my);
  const double inv = p.visible ? 1 / p.det : 0;
  conics[3 * i] = T(p.c * inv);
  conics[3 * i + 1] = T(-p.b * inv);
  conics[3 * i + 2] = T(p.a * inv);
  depths[i] = T(p.z * p.visible);
  radii[i] = p.radius;
  tile_counts[i] = (int)p.tiles;
}
)";

extern const char* const kProjectBackward = R"(
// One thread per Gaussian: the forward computation again, then the chain rule back through the
// conic, J, the camera and the quaternion's normalisation (splat_project.cpp's derivation).
extern "C" __global__ void project_backward(const T* means, const T* scales, const T* quats,
                                            const T* view, const T* intr, const int* radii,
                                            const T* d_means2d, const T* d_conics,
                                            const T* d_depths, T* d_means, T* d_scales,
                                            T* d_quats) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= kN) return;
  for (int j = 0; j < 3; ++j) d_means[3 * i + j] = T(0), d_scales[3 * i + j] = T(0);
  for (int j = 0; j < 4; ++j) d_quats[4 * i + j] = T(0);
  if (radii[i] <= 0) return;
  const Camera cam = camera_of(view);
  const Projected p = project_one(i, means, scales, quats, cam, intr);
  if (!p.visible) return;
  const M3& w = cam.w;
  const double fx = intr[0], fy = intr[1], iz = 1 / p.z;
  // Conic (A, B, C) = (c, -b, a) / det: back to the covariance entries a, b, c.
  const double dA = d_conics[3 * i], dB = d_conics[3 * i + 1], dC = d_conics[3 * i + 2];
  const double a2 = p.a, b2 = p.b, c2 = p.c, id2 = 1 / (p.det * p.det);
  const double da = (-dA * c2 * c2 + dB * b2 * c2 - dC * b2 * b2) * id2;
  const double db = (2 * dA * b2 * c2 - dB * (p.det + 2 * b2 * b2) + 2 * dC * a2 * b2) * id2;
  const double dc = (-dA * b2 * b2 + dB * a2 * b2 - dC * a2 * a2) * id2;
  const double g00 = da, g01 = 0.5 * db, g11 = dc;
  const double j00 = fx * iz, j02 = -fx * p.x * iz * iz, j11 = fy * iz,
               j12 = -fy * p.y * iz * iz;
  const double J[2][3] = {{j00, 0, j02}, {0, j11, j12}};
  const double G[2][2] = {{g00, g01}, {g01, g11}};
  // dS = J^T G J; dJ = 2 G J S.
  M3 dS;
  for (int u = 0; u < 3; ++u)
    for (int v = 0; v < 3; ++v) {
      double s = 0;
      for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 2; ++c) s += J[r][u] * G[r][c] * J[c][v];
      dS.v[u][v] = s;
    }
  double GJ[2][3], dJ[2][3];
  for (int r = 0; r < 2; ++r)
    for (int v = 0; v < 3; ++v) {
      double s = 0;
      for (int c = 0; c < 2; ++c) s += G[r][c] * J[c][v];
      GJ[r][v] = s;
    }
  for (int r = 0; r < 2; ++r)
    for (int v = 0; v < 3; ++v) {
      double s = 0;
      for (int u = 0; u < 3; ++u) s += 2 * GJ[r][u] * p.cov.v[u][v];
      dJ[r][v] = s;
    }
  const double dmx = d_means2d[2 * i], dmy = d_means2d[2 * i + 1];
  const double dx = dJ[0][2] * (-fx * iz * iz) + dmx * fx * iz;
  const double dy = dJ[1][2] * (-fy * iz * iz) + dmy * fy * iz;
  const double dz = dJ[0][0] * (-fx * iz * iz) + dJ[0][2] * (2 * fx * p.x * iz * iz * iz) +
                    dJ[1][1] * (-fy * iz * iz) + dJ[1][2] * (2 * fy * p.y * iz * iz * iz) -
                    dmx * fx * p.x * iz * iz - dmy * fy * p.y * iz * iz + (double)d_depths[i];
  for (int j = 0; j < 3; ++j)
    d_means[3 * i + j] = T(w.v[0][j] * dx + w.v[1][j] * dy + w.v[2][j] * dz);
  // Sigma = M M^T seen as W Sigma W^T: dSigma = W^T dS W, dM = 2 dSigma M.
  const M3 dsigma = mul(transposed(w), mul(dS, w));
  const M3 dm = mul(dsigma, p.m);
  M3 dr;
  T ds[3] = {T(0), T(0), T(0)};  // summed in T, as the cpu sums into its output
  for (int u = 0; u < 3; ++u)
    for (int j = 0; j < 3; ++j) {
      dr.v[u][j] = 2 * dm.v[u][j] * scales[3 * i + j];
      ds[j] += T(2 * dm.v[u][j] * p.rot.v[u][j]);
    }
  for (int j = 0; j < 3; ++j) d_scales[3 * i + j] = ds[j];
  const double qw = p.qn[0], qx = p.qn[1], qy = p.qn[2], qz = p.qn[3];
  const double (&r)[3][3] = dr.v;
  const double dq[4] = {
      2 * (-qz * r[0][1] + qy * r[0][2] + qz * r[1][0] - qx * r[1][2] - qy * r[2][0] +
           qx * r[2][1]),
      2 * (qy * r[0][1] + qz * r[0][2] + qy * r[1][0] - 2 * qx * r[1][1] - qw * r[1][2] +
           qz * r[2][0] + qw * r[2][1] - 2 * qx * r[2][2]),
      2 * (-2 * qy * r[0][0] + qx * r[0][1] + qw * r[0][2] + qx * r[1][0] + qz * r[1][2] -
           qw * r[2][0] + qz * r[2][1] - 2 * qy * r[2][2]),
      2 * (-2 * qz * r[0][0] - qw * r[0][1] + qx * r[0][2] + qw * r[1][0] - 2 * qz * r[1][1] +
           qy * r[1][2] + qx * r[2][0] + qy * r[2][1])};
  // Through the normalisation q / |q|.
  const double dot = qw * dq[0] + qx * dq[1] + qy * dq[2] + qz * dq[3];
  for (int j = 0; j < 4; ++j) d_quats[4 * i + j] = T((dq[j] - p.qn[j] * dot) / p.qnorm);
}
)";

}  // namespace rlx::cuda::splat_text
