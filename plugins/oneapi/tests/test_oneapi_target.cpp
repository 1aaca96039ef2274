// The oneapi target has no Level Zero device here, so it is proven in three parts: its status
// and refusals say why; every module it emits is valid SPIR-V (spirv-val) that Intel's offline
// compiler builds for an Xe-LP GPU (ocloc -device tgllp); and the OpenCL C those modules come
// from is byte for byte the gpu target's, which runs it here on PoCL against the cpu target.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "target_suite.h"
#include "model_support.h"
#include "rlx/core/error.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/runtime.h"
#include "rlx/registry/registry.h"
#include "test_support.h"

namespace rlx {
namespace {

namespace fs = std::filesystem;

using test::read_file;
using test::TempDir;

std::shared_ptr<Target> oneapi() { return test::target_named("oneapi"); }

// A program on PATH, or "" when absent.
std::string tool(const char* name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin");
  for (std::string d; std::getline(dirs, d, ':');)
    if (!d.empty() && access((fs::path(d) / name).c_str(), X_OK) == 0) return (fs::path(d) / name).string();
  return "";
}

// Runs a shell command; returns its exit status, with its output in *out.
int shell(const std::string& cmd, std::string* out) {
  fs::path log = fs::temp_directory_path() / fmt::format("rlx-oneapi-{}.log", getpid());
  int rc = std::system((cmd + " > '" + log.string() + "' 2>&1").c_str());
  *out = read_file(log);
  fs::remove(log);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// Emits `program` for oneapi into `dir`, then checks the SPIR-V with spirv-val and ocloc.
void expect_valid_module(const lir::Program& program, const fs::path& dir, const std::string& what) {
  auto artifacts = oneapi()->emit(program, dir);
  ASSERT_EQ(artifacts.size(), 2u) << what;
  EXPECT_EQ(artifacts[1].kind, "spirv");
  const fs::path spv = dir / "oneapi_kernels.spv";
  std::string bytes = read_file(spv);
  ASSERT_GE(bytes.size(), 20u) << what;
  EXPECT_EQ(static_cast<uint8_t>(bytes[0]), 0x03) << "SPIR-V magic 0x07230203, little-endian";
  EXPECT_EQ(static_cast<uint8_t>(bytes[3]), 0x07);
  std::string out;
  if (std::string v = tool("spirv-val"); !v.empty())
    EXPECT_EQ(shell(fmt::format("'{}' '{}'", v, spv.string()), &out), 0) << what << ": spirv-val:\n" << out;
  else
    std::printf("spirv-val not installed (spirv-tools): %s not validated\n", what.c_str());
  if (std::string oc = tool("ocloc"); !oc.empty())
    EXPECT_EQ(shell(fmt::format("'{}' compile -q -spirv_input -file '{}' -device tgllp -out_dir '{}'", oc,
                                spv.string(), (dir / "ocloc").string()),
                    &out),
              0)
        << what << ": ocloc:\n" << out;
  else
    std::printf("ocloc not installed (intel-opencl-icd): %s not compiled offline\n", what.c_str());
}

// Shared with the other GPU-like targets (sdk/testing): ComplexProgramsCompileOnTheirParts.
[[maybe_unused]] const bool kSharedTests =
    (test::register_codegen_only_tests({.name = "oneapi", .display = "OneApi", .language = "OpenCL C"}), true);

TEST(OneApiTarget, IsCodegenOnlyAndSaysWhy) {
  registry::Options o;
  o.plugin_paths = {RLX_TEST_PLUGIN_DIR};
  o.build_legality = false;
  static const auto* reg = new registry::Registry(registry::Registry::discover(o));
  for (const auto& p : reg->plugins()) {
    if (p.name != "oneapi") continue;
    EXPECT_EQ(p.status, registry::PluginStatus::kCodegenOnly) << p.detail;
    EXPECT_NE(p.detail.find("Level Zero"), std::string::npos) << p.detail;
    EXPECT_NE(p.detail.find("rlx compile --target oneapi"), std::string::npos) << p.detail;
    return;
  }
  FAIL() << "the oneapi plugin was not found";
}

TEST(OneApiTarget, RefusesF64WithTheReason) {
  std::string msg = test::compile_error("graph @t(%x: f64[4]) {\n  %y = exp(%x) : f64[4]\n  return %y\n}\n", oneapi());
  EXPECT_NE(msg.find("oneapi targets Intel GPUs without fp64 (Xe-LP, Xe-HPG), so it cannot compute exp "
                     "in f64; convert the model to f32 first (rlx never narrows f64 silently)"),
            std::string::npos)
      << msg;
}

// Programs covering every kind of kernel the module holds.
const char* const kPrograms[] = {
    R"(graph @t(%x: f32[6], %y: f32[6]) {
  %a = add(%x, %y) : f32[6]
  %e = exp(%a) : f32[6]
  %m = max(%e, %y) : f32[6]
  %p = lt(%x, %y) : bool[6]
  %s = select(%p, %m, %x) : f32[6]
  return %s
}
)",
    test::kMixedProgram,
    R"(graph @t(%a: f32[2,3,4], %b: f32[2,4,5]) {
  %d = dot_general(%a, %b) {lhs_batch = [0], lhs_contract = [2], rhs_batch = [0], rhs_contract = [1]} : f32[2,3,5]
  %tr = transpose(%d) {perm = [2, 0, 1]} : f32[5,2,3]
  %sl = slice(%tr) {limit = [5, 2, 3], start = [1, 0, 0], strides = [2, 1, 2]} : f32[2,2,2]
  return %sl
}
)",
    R"(graph @t(%n: i64[]) {
  %zero = constant() {value = dense<i64[]: [0]>} : i64[]
  %i, %acc = while(%zero, %zero) : i64[], i64[] [
    graph @cond(%ci: i64[], %ca: i64[]) {
      %lim = constant() {value = dense<i64[]: [10]>} : i64[]
      %go = lt(%ci, %lim) : bool[]
      return %go
    },
    graph @body(%bi: i64[], %ba: i64[]) {
      %one = constant() {value = dense<i64[]: [1]>} : i64[]
      %next = add(%bi, %one) : i64[]
      %sum = add(%ba, %next) : i64[]
      return %next, %sum
    }
  ]
  %y = add(%acc, %n) : i64[]
  return %i, %y
}
)"};

TEST(OneApiTarget, EmittedModulesAreValidSpirv) {
  for (const char* ir : kPrograms) {
    Session s(oneapi());
    CompiledModel m = s.compile(parse_graph(ir, "test.rlx"));
    TempDir dir;
    expect_valid_module(m.lir_for({}), dir.path(), fmt::format("program {}", &ir - kPrograms));
  }
}

// The same OpenCL C, run: the gpu target renders the identical module and executes it.
TEST(OneApiTarget, ItsOpenClCRunsOnTheGpuTargetLikeCpu) {
  std::shared_ptr<Target> gpu;
  try {
    gpu = test::target_named("gpu");
  } catch (const Error& e) {
    GTEST_SKIP() << "no gpu target to run the OpenCL C: " << e.what();
  }
  if (Verdict v = gpu->can_execute(); !v.ok) GTEST_SKIP() << "gpu cannot run here: " << v.reason;
  const char* ir = test::kMixedProgram;
  EXPECT_EQ(test::Emitted(ir, oneapi()).text("oneapi_kernels.cl"), test::Emitted(ir, gpu).text("gpu_kernels.cl"));

  std::vector<float> av(24), bv(40);
  for (int i = 0; i < 24; ++i) av[i] = std::sin(0.7f * i);
  for (int i = 0; i < 40; ++i) bv[i] = std::cos(0.3f * i);
  Tensor h(DType::kF16, {2, 3});
  for (int i = 0; i < 6; ++i) h.as<uint16_t>()[i] = static_cast<uint16_t>(0x3C00 + 0x100 * i);  // 1, 1.25, ...
  NamedTensors in = {{"a", test::f32({2, 3, 4}, av)}, {"b", test::f32({2, 4, 5}, bv)},
                     {"ids", Tensor::from<int64_t>(DType::kI64, {3}, {5, -6, 5})}, {"h", h}};
  test::expect_all_close(test::run_text(ir, in, test::cpu_target()), test::run_text(ir, in, gpu), 1e-6);
}

// Symbols of a graph's inputs bound from tensors of those inputs.
Bindings bindings_for(const Graph& g, const NamedTensors& inputs) {
  Bindings b;
  for (ValueId v : g.inputs) {
    const TensorType& t = g.type(v);
    const Tensor& x = inputs.at(g.values[v].name);
    for (int64_t d = 0; d < t.rank(); ++d)
      if (!t.shape[d].is_static()) b[t.shape[d].sym] = x.shape()[d];
  }
  return b;
}

TEST(OneApiTarget, FixtureModelsEmitValidSpirv) {
  struct Case {
    const char* fixture;
    const char* file;
  };
  int done = 0;
  for (Case c : {Case{"minilm-l2-f16", ""}, Case{"bert-tiny-onnx", "model.onnx"}, Case{"qwen3-tiny", ""}}) {
    auto dir = test::fixture(c.fixture);
    if (!dir) continue;
    TensorMap ref = read_safetensors(*dir / "reference.safetensors");
    Model model = test::load_model(*c.file ? *dir / c.file : *dir);
    const Graph& g = model.graph("main");
    NamedTensors in;
    for (ValueId v : g.inputs) {
      std::string n = g.values[v].name;
      in[n] = ref.count(n) ? ref.at(n) : ref.at("prompts");
    }
    Session s(oneapi());
    TempDir out;
    expect_valid_module(s.compile(g).lir_for(bindings_for(g, in)), out.path(), c.fixture);
    ++done;
  }
  if (!done) GTEST_SKIP() << "no fixture under " << RLX_FIXTURES_DIR;
}

}  // namespace
}  // namespace rlx
