// Loading fixture models the way the CLI does (the registry picks the importer) and comparing
// their outputs with float64 references.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include "rlx/core/model.h"
#include "rlx/core/safetensors.h"

namespace rlx::test {

// ../shared/fixtures/<name>, or nullopt when it is not there.
std::optional<std::filesystem::path> fixture(const std::string& name);
// Skips the current test with the reason when the fixture is absent.
#define RLX_FIXTURE_OR_SKIP(var, name)                                                          \
  auto var##_opt = ::rlx::test::fixture(name);                                                  \
  if (!var##_opt)                                                                               \
    GTEST_SKIP() << "fixture " << name << " not found under " << RLX_SHARED_DIR << "/fixtures"; \
  const std::filesystem::path var = *var##_opt

Model load_model(const std::filesystem::path& path);

// max |a - b| over all elements (a and b of equal element count).
double max_abs_diff(const Tensor& a, const Tensor& b);
double cosine(const Tensor& a, const Tensor& b, int64_t row, int64_t width);

}  // namespace rlx::test
