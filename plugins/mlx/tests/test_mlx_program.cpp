// `rlx compile --target mlx -o DIR` writes a standalone C++ program against MLX's API: built here
// as a user builds it (its CMakeLists.txt, the MLX the plugin links) and run on safetensors files,
// its outputs must agree with the cpu target's (an independent implementation) for the builder's
// MLP, a program of mixed primitives and HIR ops, and the minilm-l2-f16 fixture; it must report a
// bad index or input as rlx does, and what it cannot express must be refused by name.
#include <gtest/gtest.h>

#include <random>

#include "model_support.h"
#include "program_runner.h"
#include "rlx/core/error.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/mlp.h"
#include "rlx/core/safetensors.h"
#include "test_support.h"

namespace rlx::mlx_target::test {
namespace {

namespace fs = std::filesystem;
using rlx::test::cpu_target;
using rlx::test::expect_all_close;
using rlx::test::target_named;
using rlx::test::uniform_f32;

#define RLX_NEEDS_BUILD_TOOLS()                                        \
  do {                                                                 \
    static const std::string missing = build_tools_missing();          \
    if (!missing.empty()) GTEST_SKIP() << "cannot build: " << missing; \
  } while (0)

// Each symbolic dim of the graph's inputs bound to the given input's extent there.
Bindings bindings_for(const Graph& g, const NamedTensors& inputs) {
  Bindings b;
  for (ValueId v : g.inputs) {
    const Shape& shape = g.type(v).shape;
    for (size_t d = 0; d < shape.size(); ++d)
      if (!shape[d].is_static()) b[shape[d].sym] = inputs.at(g.values[v].name).shape().at(d);
  }
  return b;
}

// The graph as the mlx target specialises it for these inputs: what `rlx compile --bind` emits.
Graph mlx_mir(const Graph& g, const NamedTensors& inputs) {
  return Session(target_named("mlx")).compile(g).mir_for(bindings_for(g, inputs));
}

NamedTensors on_cpu(const Graph& g, const NamedTensors& inputs) {
  return Session(cpu_target()).compile(g).run(inputs);
}

// Builds the program for `g`, runs it on `inputs` and compares with the cpu target; returns the
// program's model.cpp.
std::string expect_program_agrees_with_cpu(const Graph& g, const NamedTensors& inputs,
                                           double rel_tol) {
  BuiltProgram program(mlx_mir(g, inputs));
  NamedTensors got;
  cli::test::ProcessResult r = program.run(inputs, got);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  if (r.exit_code == 0) expect_all_close(on_cpu(g, inputs), got, rel_tol, g.name);
  return rlx::test::read_file(program.source_dir() / "model.cpp");
}

Tensor i64s(std::vector<int64_t> shape, std::vector<int64_t> v) {
  return Tensor::from(DType::kI64, std::move(shape), v);
}
Tensor i32s(std::vector<int64_t> shape, std::vector<int32_t> v) {
  return Tensor::from(DType::kI32, std::move(shape), v);
}

// The training MLP of `rlx train --model mlp:...` (Linear and Relu from the graph builder),
// with its weights in weights.safetensors under their names.
TEST(MlxProgram, BuilderMlpAgreesWithCpu) {
  RLX_NEEDS_BUILD_TOOLS();
  Graph g = mlp_classifier({6, 16, 3}, 7, false);
  std::mt19937 rng(3);
  g.weights["fc0.bias"] = uniform_f32(rng, {16}, 0.5f);
  g.weights["fc1.bias"] = uniform_f32(rng, {3}, 0.5f);
  const NamedTensors inputs = {{"x", uniform_f32(rng, {5, 6}, 2.0f)}};
  BuiltProgram program(mlx_mir(g, inputs));

  std::vector<std::string> files;
  for (const Artifact& a : program.artifacts()) files.push_back(a.path);
  EXPECT_EQ(files, (std::vector<std::string>{"model.cpp", "weights.safetensors", "CMakeLists.txt",
                                             "model.mir"}));
  const TensorMap weights = read_safetensors(program.source_dir() / "weights.safetensors");
  for (const char* name : {"fc0.weight", "fc0.bias", "fc1.weight", "fc1.bias"}) {
    ASSERT_TRUE(weights.count(name)) << name;
    EXPECT_EQ(rlx::test::values(weights.at(name)), rlx::test::values(g.weights.at(name))) << name;
  }
  const std::string source = rlx::test::read_file(program.source_dir() / "model.cpp");
  EXPECT_NE(source.find("#include <mlx/mlx.h>"), std::string::npos);
  EXPECT_NE(source.find("weights.at(\"fc0.weight\")"), std::string::npos);

  NamedTensors got;
  cli::test::ProcessResult r = program.run(inputs, got);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  expect_all_close(on_cpu(g, inputs), got, 1e-5, "mlp");
}

// Every kind of mapping graph_builder.cpp has: elementwise ops with rlx's semantics where MLX's
// differ (float remainder's sign, truncating integer division by zero, float -> integer
// conversion),
// a batched and an integer dot_general, broadcast with moved dims, strided slice, concat,
// padding, iota, gather and scatter-add with negative indices, reductions, and the HIR
// ops MLX's fast kernels run (LayerNorm, RMSNorm, causal and padding Attention).
TEST(MlxProgram, MixedPrimitivesAgreeWithCpu) {
  RLX_NEEDS_BUILD_TOOLS();
  const char* ir =
      R"(graph @mixed(%x: f32[2, 3, 4], %y: f32[2, 3, 4], %w: f32[2, 4, 5], %a: i32[6], %b: i32[6], %ids: i64[3], %s: f32[4], %bias: f32[4], %q: f32[1, 2, 6, 8], %k: f32[1, 2, 6, 8], %v: f32[1, 2, 6, 8], %keep: i64[1, 6], %ia: i32[2, 3], %ib: i32[3, 2]) {
  %r = rem(%x, %y) : f32[2, 3, 4]
  %n = neg(%x) : f32[2, 3, 4]
  %e = erf(%x) : f32[2, 3, 4]
  %c = lt(%x, %y) : bool[2, 3, 4]
  %sel = select(%c, %x, %y) : f32[2, 3, 4]
  %d = dot_general(%x, %w) {lhs_batch = [0], rhs_batch = [0], lhs_contract = [2], rhs_contract = [1]} : f32[2, 3, 5]
  %t = transpose(%d) {perm = [0, 2, 1]} : f32[2, 5, 3]
  %bc = broadcast_in_dim(%t) {dims = [0, 1, 3], shape = [2, 5, 4, 3]} : f32[2, 5, 4, 3]
  %sl = slice(%bc) {start = [0, 1, 1, 0], limit = [2, 4, 4, 3], strides = [1, 2, 2, 1]} : f32[2, 2, 2, 3]
  %cc = concat(%sl, %sl) {axis = 3} : f32[2, 2, 2, 6]
  %z = constant() {value = dense<f32[]: [0.5]>} : f32[]
  %p = pad(%cc, %z) {low = [0, 0, 1, 0], high = [1, 0, 0, 2]} : f32[3, 2, 3, 8]
  %qd = div(%a, %b) : i32[6]
  %qr = rem(%a, %b) : i32[6]
  %ax = abs(%x) : f32[2, 3, 4]
  %cu = convert(%ax) {dtype = u8} : u8[2, 3, 4]
  %ci = convert(%x) {dtype = i32} : i32[2, 3, 4]
  %ch = convert(%x) {dtype = f16} : f16[2, 3, 4]
  %io = iota() {dim = 1, dtype = i32, shape = [2, 3]} : i32[2, 3]
  %g = gather(%x, %ids) {axis = 2} : f32[2, 3, 3]
  %sc = scatter(%y, %ids, %g) {axis = 2, reduce = "add"} : f32[2, 3, 4]
  %sum = reduce_sum(%x) {axes = [1]} : f32[2, 4]
  %big = reduce_max(%x) {axes = [0, 2]} : f32[3]
  %id = dot_general(%ia, %ib) {lhs_batch = [], rhs_batch = [], lhs_contract = [1], rhs_contract = [0]} : i32[2, 2]
  %ln = LayerNorm(%x, %s, %bias) {epsilon = 1e-5} : f32[2, 3, 4]
  %rn = RMSNorm(%x, %s) {epsilon = 1e-6} : f32[2, 3, 4]
  %oc = Attention(%q, %k, %v) {mask = "causal"} : f32[1, 2, 6, 8]
  %op = Attention(%q, %k, %v, %keep) {mask = "padding"} : f32[1, 2, 6, 8]
  return %r, %n, %e, %c, %sel, %p, %qd, %qr, %cu, %ci, %ch, %io, %g, %sc, %sum, %big, %id, %ln, %rn, %oc, %op
}
)";
  std::mt19937 rng(11);
  Tensor x = uniform_f32(rng, {2, 3, 4}, 3.0f);
  x.as<float>()[0] = 0.0f;  // neg(0) is -0
  const NamedTensors inputs = {{"x", x},
                               {"y", uniform_f32(rng, {2, 3, 4}, 2.0f)},
                               {"w", uniform_f32(rng, {2, 4, 5}, 1.0f)},
                               {"a", i32s({6}, {-7, 7, 7, 5, -9, 0})},
                               {"b", i32s({6}, {2, -2, 0, 5, 4, 3})},
                               {"ids", i64s({3}, {3, -1, -4})},
                               {"s", uniform_f32(rng, {4}, 1.0f)},
                               {"bias", uniform_f32(rng, {4}, 1.0f)},
                               {"q", uniform_f32(rng, {1, 2, 6, 8}, 1.0f)},
                               {"k", uniform_f32(rng, {1, 2, 6, 8}, 1.0f)},
                               {"v", uniform_f32(rng, {1, 2, 6, 8}, 1.0f)},
                               {"keep", i64s({1, 6}, {1, 1, 0, 1, 0, 1})},
                               {"ia", i32s({2, 3}, {1, -2, 3, 4, 5, -6})},
                               {"ib", i32s({3, 2}, {7, 8, -9, 10, 11, 12})}};
  const std::string source =
      expect_program_agrees_with_cpu(parse_graph(ir, "mixed.rlx"), inputs, 1e-5);
  for (const char* call : {"mx::fast::layer_norm(", "mx::fast::rms_norm(",
                           "mx::fast::scaled_dot_product_attention(", "mx::scatter_add("})
    EXPECT_NE(source.find(call), std::string::npos) << call;
}

// A real encoder (minilm-l2-f16: embeddings gathered by token id, f16 weights, LayerNorm,
// padding Attention, mean pooling), bound to the fixture's inputs.
TEST(MlxProgram, MiniLmFixtureAgreesWithCpu) {
  RLX_NEEDS_BUILD_TOOLS();
  RLX_FIXTURE(dir, "minilm-l2-f16");
  const TensorMap ref = read_safetensors(dir / "reference.safetensors");
  const Model model = rlx::test::load_model(dir);
  const NamedTensors inputs = {{"input_ids", ref.at("input_ids")},
                               {"attention_mask", ref.at("attention_mask")},
                               {"token_type_ids", ref.at("token_type_ids")}};
  const std::string source = expect_program_agrees_with_cpu(model.graph("main"), inputs, 1e-4);
  EXPECT_NE(source.find("mx::fast::scaled_dot_product_attention("), std::string::npos);
}

// An index out of range stops the program with rlx's message (MLX itself does not check), and
// an input of the wrong shape or a missing one is named.
TEST(MlxProgram, ReportsBadIndicesAndInputsAsRlxDoes) {
  RLX_NEEDS_BUILD_TOOLS();
  const Graph g = parse_graph(R"(graph @t(%x: f32[3], %i: i64[2]) {
  %g = gather(%x, %i) {axis = 0} : f32[2]
  return %g
}
)");
  BuiltProgram program(mlx_mir(g, {}));
  NamedTensors got;
  const Tensor x = rlx::test::f32({3}, {1, 2, 3});
  cli::test::ProcessResult ok = program.run({{"x", x}, {"i", i64s({2}, {-1, 0})}}, got);
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(rlx::test::values(got.at("g")), (std::vector<double>{3, 1}));

  cli::test::ProcessResult bad = program.run({{"x", x}, {"i", i64s({2}, {-1, 3})}}, got);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("gather: index 3 (at position 1 of the indices) is out of range for an "
                         "axis of size 3"),
            std::string::npos)
      << bad.err;

  cli::test::ProcessResult shape =
      program.run({{"x", rlx::test::f32({4}, {1, 2, 3, 4})}, {"i", i64s({2}, {0, 0})}}, got);
  EXPECT_EQ(shape.exit_code, 1);
  EXPECT_NE(shape.err.find("'x' is float32[4]; the graph takes float32[3]"), std::string::npos)
      << shape.err;

  cli::test::ProcessResult missing = program.run({{"x", x}}, got);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("has no tensor 'i'"), std::string::npos) << missing.err;
}

// A loop runs on the host in the mlx target; the program has no form for it and says so, naming
// the node, rather than writing something that computes otherwise. Nothing is built.
TEST(MlxProgram, WhileLoopIsRefusedNamingTheNode) {
  const Graph g = parse_graph(rlx::test::kWhileSumsOneToTen);
  rlx::test::TempDir dir;
  try {
    target_named("mlx")->emit_mir(mlx_mir(g, {}), dir.path());
    FAIL() << "the program writer has no form for a loop";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("cannot express %i (while)"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(dir.path() / "model.cpp"));
}

}  // namespace
}  // namespace rlx::mlx_target::test
