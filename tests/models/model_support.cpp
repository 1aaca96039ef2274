#include "model_support.h"

#include <gtest/gtest.h>

#include <cmath>

#include "rlx/registry/registry.h"

namespace rlx::test {

std::optional<std::filesystem::path> fixture(const std::string& name) {
  std::filesystem::path p = std::filesystem::path(RLX_FIXTURES_DIR) / name;
  std::error_code ec;
  if (!std::filesystem::is_directory(p, ec)) return std::nullopt;
  return p;
}

Model load_model(const std::filesystem::path& path) {
  // Kept for the life of the process: imported graphs and targets live in its libraries.
  static const registry::Registry* reg = [] {
    registry::Options o;
    o.plugin_paths = {RLX_TEST_PLUGIN_DIR};
    o.build_legality = false;
    return new registry::Registry(registry::Registry::discover(o));
  }();
  std::shared_ptr<registry::Importer> importer = reg->importer_for(path);
  if (!importer) throw std::runtime_error("no importer claims " + path.string());
  return importer->load(path);
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.numel(), b.numel());
  double m = 0;
  for (int64_t i = 0; i < std::min(a.numel(), b.numel()); ++i)
    m = std::max(m, std::abs(a.scalar_at(i) - b.scalar_at(i)));
  return m;
}

double cosine(const Tensor& a, const Tensor& b, int64_t row, int64_t width) {
  double dot = 0, na = 0, nb = 0;
  for (int64_t i = row * width; i < (row + 1) * width; ++i) {
    double x = a.scalar_at(i), y = b.scalar_at(i);
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return dot / std::sqrt(na * nb);
}

}  // namespace rlx::test
