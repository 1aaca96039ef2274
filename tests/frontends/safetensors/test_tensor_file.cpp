// A lone .safetensors file imports as tensors: "main" has no inputs and returns each tensor.
#include <gtest/gtest.h>

#include "hf_folder.h"
#include "model_support.h"
#include "rlx/core/runtime.h"
#include "test_support.h"

namespace rlx::test {
namespace {

TEST(TensorFile, MainReturnsEveryTensorByName) {
  std::filesystem::path dir = fresh_dir("tensors");
  TensorMap tensors{{"a", random_tensor(DType::kF32, {2, 3}, 1.0, 7)},
                    {"b.c", random_tensor(DType::kF16, {5}, 1.0, 8)}};
  write_safetensors(dir / "x.safetensors", tensors);
  Model m = load_model(dir / "x.safetensors");
  EXPECT_EQ(m.architecture, "safetensors");
  const Graph& g = m.graph("main");
  EXPECT_TRUE(g.inputs.empty());
  ASSERT_EQ(g.outputs.size(), 2u);
  NamedTensors out = Session(cpu_target()).compile(g).run({});
  for (auto& [name, t] : tensors) {
    ASSERT_TRUE(out.count(name)) << name;
    EXPECT_EQ(out.at(name).dtype(), t.dtype());
    EXPECT_EQ(out.at(name).shape(), t.shape());
    EXPECT_EQ(max_abs_diff(out.at(name), t), 0.0) << name;
  }
}

}  // namespace
}  // namespace rlx::test
