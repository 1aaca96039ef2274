// bert-tiny exported by torch (opset 17, dynamic batch and seq) against ONNX Runtime's output,
// loaded through the registry exactly as `rlx run model.onnx` loads it.
#include <gtest/gtest.h>

#include <cmath>

#include "rlx/core/runtime.h"
#include "rlx/core/safetensors.h"
#include "rlx/registry/registry.h"
#include "test_support.h"

namespace rlx {
namespace {

namespace fs = std::filesystem;

std::shared_ptr<registry::Importer> onnx_importer(const fs::path& model) {
  registry::Options o;
  o.plugin_paths = {RLX_TEST_PLUGIN_DIR};
  o.build_legality = false;
  // Never destroyed, like the CLI's registry: unloading the cpu plugin at exit while oneTBB's
  // worker threads still run would crash the process after the test has passed.
  static const registry::Registry* reg = new registry::Registry(registry::Registry::discover(o));
  return reg->importer_for(model);
}

TEST(OnnxBertParity, LastHiddenStateMatchesOnnxRuntime) {
  fs::path dir = RLX_BERT_TINY_DIR;  // tests/data/fixtures/bert-tiny-onnx
  auto importer = onnx_importer(dir / "model.onnx");
  ASSERT_TRUE(importer) << "the onnx importer plugin did not load";
  Model model = importer->load(dir / "model.onnx");
  const Graph& g = model.graph();
  // Dynamic axes stay symbolic: one compiled model serves every batch and sequence length.
  ASSERT_EQ(g.inputs.size(), 3u);
  EXPECT_EQ(g.type(g.inputs[0]).str(), "i64[batch,seq]");
  TensorMap ref = read_safetensors(dir / "reference.safetensors");
  Session s(test::cpu_target());
  CompiledModel m = s.compile(g);
  NamedTensors out = m.run({{"input_ids", ref.at("input_ids")},
                            {"attention_mask", ref.at("attention_mask")},
                            {"token_type_ids", ref.at("token_type_ids")}});
  const Tensor& got = out.at("last_hidden_state");
  const Tensor& want = ref.at("last_hidden_state_ort");
  ASSERT_EQ(got.shape(), want.shape());
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i)
    worst = std::max(worst, std::fabs(got.scalar_at(i) - want.scalar_at(i)));
  // Measured 1.4e-6 on cpu (2026-12); the bound is about 10x that.
  constexpr double kBound = 2e-5;
  std::printf("bert-tiny last_hidden_state max abs error vs ONNX Runtime: %.3g (limit %g)\n", worst,
              kBound);
  EXPECT_LE(worst, kBound);
}

}  // namespace
}  // namespace rlx
