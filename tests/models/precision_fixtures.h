// The precision policies on the model fixtures, for the target named (see precision_fixtures.cpp).
#pragma once
#include <string>

namespace rlx::test {

// minilm-l2-f16 under amp-f16, f16, amp-bf16 and bf16 against its float64 reference.
void minilm_precisions(const std::string& target);
// qwen3-tiny's greedy tokens under amp-f16 and amp-bf16 against the reference's.
void qwen3_tiny_amp_tokens(const std::string& target);

}  // namespace rlx::test
