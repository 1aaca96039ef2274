// The precision policies on the cpu target (the other targets run the same checks in their
// fixture suites, tests/models/target_fixtures.cpp).
#include <gtest/gtest.h>

#include "precision_fixtures.h"

namespace rlx::test {
namespace {

TEST(CpuPrecision, MiniLmPoliciesStayNearFloat64Reference) {
  minilm_precisions("cpu", {"amp-f16", "f16", "amp-bf16", "bf16"});
}
TEST(CpuPrecision, Qwen3TinyAmpGreedyTokensAgreeWithReference) {
  qwen3_tiny_amp_tokens("cpu", {"amp-f16", "amp-bf16"});
}

}  // namespace
}  // namespace rlx::test
