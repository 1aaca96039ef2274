// Shared test helpers.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "rlx/core/runtime.h"
#include "rlx/core/target.h"
#include "rlx/core/tensor.h"

namespace rlx::test {

// The in-tree cpu target, loaded through the registry exactly as the CLI loads it.
std::shared_ptr<Target> cpu_target();
// Parses IR text, compiles it for `target` and runs it.
NamedTensors run_text(const std::string& ir, const NamedTensors& inputs,
                      std::shared_ptr<Target> target = cpu_target());
std::vector<double> values(const Tensor& t);
Tensor f32(std::vector<int64_t> shape, std::vector<float> v);

}  // namespace rlx::test
