// The precision policies on the model fixtures, for the target named (see precision_fixtures.cpp).
#pragma once
#include <string>
#include <vector>

namespace rlx::test {

// minilm-l2-f16 under each of `modes` (--precision spellings) against its float64 reference.
void minilm_precisions(const std::string& target, const std::vector<const char*>& modes);
// qwen3-tiny's greedy tokens under each of `modes` (AMP ones) against the f32 model's.
void qwen3_tiny_amp_tokens(const std::string& target, const std::vector<const char*>& modes);

}  // namespace rlx::test
