// What the native-backward-op tests (test_norm_gradients.cpp, test_attention_gradients.cpp)
// share: the cpu with its backward kernels refused, random inputs, and how an op was lowered.
#pragma once
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "rlx/core/dispatch.h"
#include "rlx/core/runtime.h"
#include "test_support.h"

namespace rlx::test {

// The cpu with every native *Backward kernel refused: the backward ops take their decompositions.
inline std::shared_ptr<Target> cpu_decomposing() {
  return cpu_refusing([](const NodeSignature& s, bool native) -> std::optional<std::string> {
    if (native && s.op.ends_with("Backward")) return "forced through the decomposition by the test";
    return std::nullopt;
  });
}

// f32 or f64 values uniform in [lo, hi).
inline Tensor random_tensor(DType d, const std::vector<int64_t>& shape, double lo, double hi,
                            std::mt19937& rng) {
  Tensor t(d, shape);
  std::uniform_real_distribution<double> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (d == DType::kF64)
      t.as<double>()[i] = u(rng);
    else
      t.as<float>()[i] = static_cast<float>(u(rng));
  }
  return t;
}

// How each node of `op` was lowered on the target that compiled `model`.
inline std::vector<LoweringPath> paths_of(const CompiledModel& model, const std::string& op) {
  std::vector<LoweringPath> paths;
  for (const DispatchEntry& e : model.report().entries)
    if (e.op == op) paths.push_back(e.path);
  return paths;
}

}  // namespace rlx::test
