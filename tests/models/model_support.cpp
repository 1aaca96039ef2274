#include "model_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "rlx/core/half.h"
#include "rlx/core/runtime.h"
#include "rlx/registry/registry.h"
#include "test_support.h"

namespace rlx::test {

std::optional<std::filesystem::path> fixture(const std::string& name) {
  std::filesystem::path p = std::filesystem::path(RLX_FIXTURES_DIR) / name;
  std::error_code ec;
  if (!std::filesystem::is_directory(p, ec)) return std::nullopt;
  return p;
}

Model load_model(const std::filesystem::path& path, const ImportOptions& options) {
  // Kept for the life of the process: imported graphs and targets live in its libraries.
  static const registry::Registry* reg = [] {
    registry::Options o;
    o.plugin_paths = {RLX_TEST_PLUGIN_DIR};
    o.build_legality = false;
    return new registry::Registry(registry::Registry::discover(o));
  }();
  std::shared_ptr<registry::Importer> importer = reg->importer_for(path);
  if (!importer) throw std::runtime_error("no importer claims " + path.string());
  return importer->load(path, options);
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

std::vector<double> teacher_forced_decode_logits(const Model& model, const Tensor& prompts,
                                                 const Tensor& tokens, int64_t capacity,
                                                 const std::string& target) {
  const int64_t batch = prompts.shape()[0], len = prompts.shape()[1], steps = tokens.shape()[1];
  EXPECT_LE(len + steps, capacity);
  Session session(target_named(target));
  NamedTensors prefill = session.compile(model, "prefill").run({{"input_ids", prompts}});
  const Graph& graph = model.graph("decode");
  CompiledModel decode = session.compile(model, "decode");
  NamedTensors in;
  for (ValueId v : graph.inputs) {
    const std::string& name = graph.values[v].name;
    if (name.rfind("past_", 0) != 0) continue;
    const DType dtype = graph.type(v).dtype;
    const Tensor& present = prefill.at("present_" + name.substr(5));
    const auto& s = present.shape();  // [B, H, S, D] f32 -> [B, H, capacity, D] in dtype
    Tensor cache(dtype, {s[0], s[1], capacity, s[3]});
    std::memset(cache.data(), 0, cache.nbytes());
    for (int64_t bh = 0; bh < s[0] * s[1]; ++bh)
      for (int64_t i = 0; i < s[2] * s[3]; ++i) {
        const float x = present.as<float>()[bh * s[2] * s[3] + i];
        const int64_t at = bh * capacity * s[3] + i;
        if (dtype == DType::kF32)
          cache.as<float>()[at] = x;
        else if (dtype == DType::kF16)
          cache.as<uint16_t>()[at] = f32_to_f16(x);
        else
          cache.as<uint16_t>()[at] = f32_to_bf16(x);
      }
    in[name] = cache;
  }
  std::vector<double> all;
  for (int64_t t = 0; t < steps; ++t) {
    Tensor ids(DType::kI64, {batch, 1});
    for (int64_t b = 0; b < batch; ++b) ids.as<int64_t>()[b] = tokens.as<int64_t>()[b * steps + t];
    in["input_ids"] = ids;
    in["position"] = Tensor::from<int64_t>(DType::kI64, {1}, {len + t});
    NamedTensors out = decode.run(in);
    for (auto& [name, value] : out)
      if (name.rfind("present_", 0) == 0) {
        EXPECT_EQ(value.dtype(), in.at("past_" + name.substr(8)).dtype()) << name;
        in["past_" + name.substr(8)] = value;
      }
    const std::vector<double> v = values(out.at("logits"));
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

}  // namespace rlx::test
