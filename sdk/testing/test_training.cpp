// Training on the target (core/include/rlx/core/trainer.h): a whole step (forward pass, softmax
// cross-entropy, backward pass, Adam's update) is one program like any other, so every target
// that runs the shared suite trains too. Losses and parameters after a few steps agree with the
// cpu's, whose steps tests/unit/autodiff checks against NumPy.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "rlx/core/mlp.h"
#include "rlx/core/optimizers.h"
#include "rlx/core/trainer.h"
#include "target_suite.h"
#include "test_support.h"

namespace rlx::test {
namespace {

struct Run {
  std::vector<double> losses;
  NamedTensors params;
};

Run train(std::shared_ptr<Target> target) {
  // Sizes no tile divides; three steps so that Adam's moments and bias correction matter.
  const Graph model = mlp_classifier({13, 17, 5}, /*seed=*/3, /*with_loss=*/true);
  Trainer trainer(std::move(target), model, parse_optimizer("adam:lr=0.05"));
  // The same batch each step, so the loss must fall: a target that ignored the updated
  // parameters would repeat the first loss.
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(9 * 13);
  for (float& v : x) v = u(rng);
  std::vector<int32_t> labels(9);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>((i * 7) % 5);
  const NamedTensors batch = {{"x", f32({9, 13}, x)},
                              {"labels", Tensor::from<int32_t>(DType::kI32, {9}, labels)}};
  Run run;
  for (int s = 0; s < 3; ++s) run.losses.push_back(trainer.step(batch));
  run.params = trainer.parameters();
  return run;
}

void training_steps_agree_with_cpu(const SuiteTarget& t) {
  const Run want = train(cpu_target());
  const Run got = train(target_named(t.name));
  ASSERT_EQ(got.losses.size(), want.losses.size());
  for (size_t s = 0; s < want.losses.size(); ++s)
    EXPECT_NEAR(got.losses[s], want.losses[s], 1e-4 * std::fabs(want.losses[s])) << "step " << s;
  EXPECT_LT(want.losses.back(), want.losses.front());
  expect_all_close(want.params, got.params, 1e-4, "parameters after three steps");
}

void register_training_tests(const SuiteTarget& t) {
  register_function_test(t, t.display + "Target", "TrainingStepsAgreeWithCpu",
                         [t] { training_steps_agree_with_cpu(t); });
}

const bool kRegistered = add_suite_extension(&register_training_tests);

}  // namespace
}  // namespace rlx::test
