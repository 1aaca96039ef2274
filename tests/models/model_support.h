// Loading fixture models the way the CLI does (the registry picks the importer) and comparing
// their outputs with float64 references.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "rlx/core/model.h"
#include "rlx/core/safetensors.h"

namespace rlx::test {

// tests/data/fixtures/<name>, or nullopt when it is not there.
std::optional<std::filesystem::path> fixture(const std::string& name);
// The fixture's folder; the current test fails when it is absent (it is part of the repository).
#define RLX_FIXTURE(var, name)                                                          \
  auto var##_opt = ::rlx::test::fixture(name);                                          \
  ASSERT_TRUE(var##_opt) << "fixture " << name << " not found under " RLX_FIXTURES_DIR; \
  const std::filesystem::path var = *var##_opt

Model load_model(const std::filesystem::path& path, const ImportOptions& options = {});

// max |a - b| over all elements (a and b of equal element count).
double max_abs_diff(const Tensor& a, const Tensor& b);
double cosine(const Tensor& a, const Tensor& b, int64_t row, int64_t width);

// The logits of decode steps over the caches prefill makes of `prompts` (i64[B, S]), fed
// `tokens` (i64[B, steps]: teacher forcing, so two models see the same inputs), every step's
// [B, 1, V] in order. The caches have `capacity` slots in the dtype of the decode graph's past_*
// inputs, prefill's f32 keys and values rounded to it (as llm::Decoder builds them). Runs on the
// target named.
std::vector<double> teacher_forced_decode_logits(const Model& model, const Tensor& prompts,
                                                 const Tensor& tokens, int64_t capacity,
                                                 const std::string& target = "cpu");

}  // namespace rlx::test
