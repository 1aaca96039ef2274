// Loading fixture models the way the CLI does (the registry picks the importer) and comparing
// their outputs with float64 references.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

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

Model load_model(const std::filesystem::path& path);

// max |a - b| over all elements (a and b of equal element count).
double max_abs_diff(const Tensor& a, const Tensor& b);
double cosine(const Tensor& a, const Tensor& b, int64_t row, int64_t width);

}  // namespace rlx::test
