// The bundled tiny-gpt model against its float64 NumPy reference (tools/make_tiny_gpt.py).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "rlx/core/ir_text.h"
#include "rlx/core/safetensors.h"
#include "test_support.h"

namespace rlx {
namespace {

const std::string kDir = std::string(RLX_MODELS_DIR) + "/tiny-gpt";

double max_abs_diff(const Tensor& a, const Tensor& ref, int64_t rows, int64_t cols) {
  double worst = 0;
  for (int64_t i = 0; i < rows * cols; ++i) worst = std::max(worst, std::fabs(a.scalar_at(i) - ref.scalar_at(i)));
  return worst;
}

TEST(BundledModel, TinyGptLogitsMatchTheFloat64Reference) {
  Graph g = load_graph_file(kDir + "/model.rlx");
  TensorMap inputs = read_safetensors(kDir + "/inputs.safetensors");
  Tensor ref = read_safetensors(kDir + "/reference.safetensors").at("logits");
  Session s(test::cpu_target());
  CompiledModel m = s.compile(g);
  Tensor logits = m.run({inputs.begin(), inputs.end()}).at("logits");
  ASSERT_EQ(logits.shape(), ref.shape());
  EXPECT_LE(max_abs_diff(logits, ref, 6, 64), 1e-4);
}

TEST(BundledModel, ShorterPromptGivesTheReferencePrefixBecauseAttentionIsCausal) {
  Graph g = load_graph_file(kDir + "/model.rlx");
  TensorMap inputs = read_safetensors(kDir + "/inputs.safetensors");
  Tensor ref = read_safetensors(kDir + "/reference.safetensors").at("logits");
  Session s(test::cpu_target());
  CompiledModel m = s.compile(g);
  auto prefix = [](const Tensor& t, int64_t n) {
    Tensor p(t.dtype(), {n});
    std::memcpy(p.data(), t.data(), n * dtype_size(t.dtype()));
    return p;
  };
  Tensor logits = m.run({{"ids", prefix(inputs.at("ids"), 3)}, {"positions", prefix(inputs.at("positions"), 3)}}).at("logits");
  ASSERT_EQ(logits.shape(), (std::vector<int64_t>{3, 64}));
  EXPECT_LE(max_abs_diff(logits, ref, 3, 64), 1e-4);
}

}  // namespace
}  // namespace rlx
