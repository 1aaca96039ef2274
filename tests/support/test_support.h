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
// Any in-tree target by name, the same way (throws the registry's error when it cannot run).
std::shared_ptr<Target> target_named(const std::string& name);
// The target the suites run on: the one RLX_TEST_TARGET names, cpu when unset. Lets one suite
// of primitive tests check every target (tests/targets/gpu runs the cpu suites on gpu).
std::shared_ptr<Target> target_under_test();
// Parses IR text, compiles it for `target` and runs it.
NamedTensors run_text(const std::string& ir, const NamedTensors& inputs,
                      std::shared_ptr<Target> target = target_under_test());
std::vector<double> values(const Tensor& t);
Tensor f32(std::vector<int64_t> shape, std::vector<float> v);

}  // namespace rlx::test
