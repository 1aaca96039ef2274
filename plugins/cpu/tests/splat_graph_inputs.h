// A test scene (splat_reference.h) as the splatting ops' inputs: the tensors to feed and the
// graph inputs that take them, one set of names for every test that renders through rlx (the
// cpu's test_splat.cpp, cuda's test_cuda_splat.cpp and test_splat_kernels.cpp).
#pragma once
#include <vector>

#include "rlx/core/builder.h"
#include "rlx/core/runtime.h"
#include "rlx/core/splat.h"
#include "splat_reference.h"

namespace rlx::splat_test {

inline Tensor tensor(DType dt, std::vector<int64_t> shape, const std::vector<double>& v) {
  if (dt == DType::kF64) return Tensor::from<double>(dt, std::move(shape), v);
  return Tensor::from<float>(dt, std::move(shape), std::vector<float>(v.begin(), v.end()));
}

inline NamedTensors scene_inputs(const Scene& s, DType dt) {
  const int64_t n = s.n;
  return {{"means", tensor(dt, {n, 3}, s.means)},   {"scales", tensor(dt, {n, 3}, s.scales)},
          {"quats", tensor(dt, {n, 4}, s.quats)},   {"opacities", tensor(dt, {n}, s.opacities)},
          {"colors", tensor(dt, {n, 3}, s.colors)}, {"background", tensor(dt, {3}, s.background)},
          {"viewmat", tensor(dt, {4, 4}, s.view)},  {"intrinsics", tensor(dt, {4}, s.intrinsics)}};
}

// Graph inputs for `n` Gaussians, in scene_inputs' names.
inline SplatValues splat_inputs(GraphBuilder& b, int64_t n, DType dt) {
  SplatValues v;
  v.means = b.input("means", {dt, {n, 3}});
  v.scales = b.input("scales", {dt, {n, 3}});
  v.quats = b.input("quats", {dt, {n, 4}});
  v.opacities = b.input("opacities", {dt, {n}});
  v.colors = b.input("colors", {dt, {n, 3}});
  v.background = b.input("background", {dt, {3}});
  v.viewmat = b.input("viewmat", {dt, {4, 4}});
  v.intrinsics = b.input("intrinsics", {dt, {4}});
  return v;
}

}  // namespace rlx::splat_test
