// The metal target as users meet it here: codegen-only with the reason, its refusals by name, and
// the MSL module `rlx compile --target metal` writes (its kernel interface as Metal binds it).
#include <gtest/gtest.h>

#include <filesystem>

#include "target_suite.h"
#include "rlx/core/error.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/runtime.h"
#include "rlx/registry/registry.h"
#include "test_support.h"

namespace rlx {
namespace {

namespace fs = std::filesystem;

std::shared_ptr<Target> metal() { return test::target_named("metal"); }

// Shared with the other GPU-like targets (sdk/testing): ComplexProgramsCompileOnTheirParts.
[[maybe_unused]] const bool kSharedTests =
    (test::register_codegen_only_tests({.name = "metal", .display = "Metal", .language = "MSL"}), true);

TEST(MetalTarget, IsCodegenOnlyAndSaysWhy) {
#ifdef __APPLE__
  GTEST_SKIP() << "Apple platforms build the Metal host (metal.MetalHost.* check it there)";
#endif
  registry::Options o;
  o.plugin_paths = {RLX_TEST_PLUGIN_DIR};
  o.build_legality = false;
  static const auto* reg = new registry::Registry(registry::Registry::discover(o));
  for (const auto& p : reg->plugins()) {
    if (p.name != "metal") continue;
    EXPECT_EQ(p.status, registry::PluginStatus::kCodegenOnly) << p.detail;
    EXPECT_NE(p.detail.find("Metal runs only on Apple platforms (macOS, iOS)"), std::string::npos) << p.detail;
    EXPECT_NE(p.detail.find("rlx compile --target metal -o DIR"), std::string::npos) << p.detail;
    return;
  }
  FAIL() << "the metal plugin was not found";
}

TEST(MetalTarget, RefusesF64WithTheReason) {
  std::string msg =
      test::compile_error("graph @t(%x: f64[4]) {\n  %y = exp(%x) : f64[4]\n  return %y\n}\n", metal());
  EXPECT_NE(msg.find("MSL has no 64-bit float, so metal cannot compute exp in f64; convert the model to f32 "
                     "first (rlx never narrows f64 silently)"),
            std::string::npos)
      << msg;
}

TEST(MetalTarget, RunningSaysWhereToRunIt) {
#ifdef __APPLE__
  GTEST_SKIP() << "Apple platforms build the Metal host (metal.MetalHost.* check it there)";
#endif
  Tensor i(DType::kI64, {2});
  static_cast<int64_t*>(i.data())[0] = static_cast<int64_t*>(i.data())[1] = 0;
  NamedTensors in{{"a", test::f32({2, 3}, {1, 2, 3, 4, 5, 6})}, {"b", test::f32({3, 2}, {1, 2, 3, 4, 5, 6})},
                  {"i", i}};
  try {
    test::run_text(test::kEmitProgram, in, metal());
    FAIL() << "metal ran without a Metal device";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("metal cannot run here: Metal runs only on Apple platforms (macOS, "
                                         "iOS). `rlx compile --target metal -o DIR` still writes the MSL"),
              std::string::npos)
        << e.what();
  }
}

// The module holds every kind of kernel the target writes (a product, gather, a loop kernel),
// each a `kernel void` whose buffers are `device` pointers bound by [[buffer(j)]] in order.
TEST(MetalTarget, EmitsAnMslModule) {
  Session s(metal());
  CompiledModel m = s.compile(parse_graph(test::kEmitProgram, "test.rlx"));
  test::TempDir dir;
  std::vector<Artifact> artifacts = metal()->emit(m.lir_for({}), dir.path());
  ASSERT_EQ(artifacts.size(), 1u);
  EXPECT_EQ(artifacts[0].kind, "msl");
  EXPECT_EQ(artifacts[0].path, "metal_kernels.metal");
  const std::string msl = test::read_file(dir.path() / "metal_kernels.metal");
  EXPECT_EQ(msl.rfind("#include <metal_stdlib>\nusing namespace metal;\n", 0), 0u) << msl;
  for (const char* part : {"kernel void ", "device const float* b", " [[buffer(0)]]", "[[buffer(1)]]",
                           "uint rlx_gid [[thread_position_in_grid]]", "precise::exp(", "_gather(",
                           "atomic_compare_exchange_weak_explicit"})
    EXPECT_NE(msl.find(part), std::string::npos) << part << "\n" << msl;
  EXPECT_EQ(msl.find("double"), std::string::npos) << msl;
  EXPECT_EQ(msl.find("__global"), std::string::npos) << msl;
}

}  // namespace
}  // namespace rlx
