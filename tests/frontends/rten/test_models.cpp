// Small rten models built in code, run end to end against hand-computed results: V1 and V2
// files, rten's int32 world meeting ONNX's bool and int64 (Shape, Equal, Where, Gather), input
// dtype inference, If with captures, Loop, and loading through the plugin as `rlx run` does.
#include <gtest/gtest.h>

#include <fstream>

#include "rlx/core/runtime.h"
#include "rlx/registry/registry.h"
#include "rlx/rten/import.h"
#include "rten_maker.h"
#include "test_support.h"

namespace rlx {
namespace {

namespace fs = std::filesystem;
using namespace rten::test;
using OT = fbt::OperatorType;

int32_t i(uint32_t v) {
  return static_cast<int32_t>(v);
}

// y = relu(x + w), x: f32[2,3].
fbt::ModelT add_relu() {
  GraphMaker g;
  uint32_t x = g.value("x", {"2", "3"}, fbt::DataType::Float);
  uint32_t w = g.constant_f32("w", {2, 3}, {1, -2, 3, -4, 5, -6});
  uint32_t s = g.value("s");
  uint32_t y = g.value("y");
  g.op("add", OT::Add, {i(x), i(w)}, {i(s)});
  g.op("relu", OT::Relu, {i(s)}, {i(y)});
  g.inputs({x});
  g.outputs({y});
  return model_of(g);
}

NamedTensors run(const Model& m, const NamedTensors& in) {
  Session s(test::cpu_target());
  return s.compile(m.graph()).run(in);
}

Tensor i32(std::vector<int64_t> shape, std::vector<int32_t> v) {
  return Tensor::from<int32_t>(DType::kI32, std::move(shape), v);
}

TEST(RtenModels, AddReluFromV1AndV2Files) {
  Tensor x = test::f32({2, 3}, {0.5f, 0.5f, 0.5f, 10, 10, 10});
  std::vector<double> want = {1.5, 0, 3.5, 6, 15, 4};
  for (const std::string& bytes : {write_v1(add_relu()), write_v2(add_relu())}) {
    Model m = rten::import_bytes(bytes, "add_relu.rten");
    EXPECT_EQ(m.architecture, "rten");
    NamedTensors out = run(m, {{"x", x}});
    EXPECT_EQ(test::values(out.at("y")), want);
  }
}

TEST(RtenModels, IntegersStayInt32LikeRten) {
  GraphMaker g;
  uint32_t ids = g.value("ids", {"3"});  // no dtype: inferred from its use as Gather indices
  uint32_t x = g.value("x", {"n", "2"}, fbt::DataType::Float);
  uint32_t table = g.constant_f32("table", {4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  uint32_t two = g.constant_i32("two", {}, {2});
  uint32_t zero = g.constant_i32("zero", {}, {0});
  uint32_t rows = g.value("rows"), shape = g.value("shape"), is_two = g.value("is_two"),
           picked = g.value("picked");
  fbt::OperatorAttrsUnion gather;
  gather.Set(fbt::GatherAttrsT{});
  g.op("gather", OT::Gather, {i(table), i(ids)}, {i(rows)}, std::move(gather));
  g.op("shape_of", OT::Shape, {i(x)}, {i(shape)});
  g.op("eq", OT::Equal, {i(ids), i(two)}, {i(is_two)});
  g.op("where", OT::Where, {i(is_two), i(ids), i(zero)}, {i(picked)});
  g.inputs({ids, x});
  g.outputs({rows, shape, is_two, picked});
  Model m = rten::import_bytes(write_v2(model_of(g)), "ints.rten");
  const Graph& graph = m.graph();
  EXPECT_EQ(graph.type(graph.inputs[0]).str(), "i32[3]");
  EXPECT_NE(m.metadata.at("rten.inferred_input_dtypes")
                .find("ids: i32 (integer operand 1 of "
                      "node 'gather' (Gather))"),
            std::string::npos);
  NamedTensors out =
      run(m, {{"ids", i32({3}, {2, 0, 3})}, {"x", test::f32({5, 2}, std::vector<float>(10, 1))}});
  EXPECT_EQ(test::values(out.at("rows")), (std::vector<double>{20, 21, 0, 1, 30, 31}));
  // Shape, Equal and Where give int32 in rten, where ONNX has int64 and bool.
  EXPECT_EQ(out.at("shape").dtype(), DType::kI32);
  EXPECT_EQ(test::values(out.at("shape")), (std::vector<double>{5, 2}));
  EXPECT_EQ(out.at("is_two").dtype(), DType::kI32);
  EXPECT_EQ(test::values(out.at("is_two")), (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(test::values(out.at("picked")), (std::vector<double>{2, 0, 0}));
}

TEST(RtenModels, IfBranchesCaptureOuterValues) {
  GraphMaker then_g;  // x * two, both captured
  uint32_t tx = then_g.value("x"), ttwo = then_g.value("two"), ty = then_g.value("ty");
  then_g.op("double", OT::Mul, {i(tx), i(ttwo)}, {i(ty)});
  then_g.captures({tx, ttwo});
  then_g.outputs({ty});
  GraphMaker else_g;  // -x
  uint32_t ex = else_g.value("x"), ey = else_g.value("ey");
  else_g.op("negate", OT::Neg, {i(ex)}, {i(ey)});
  else_g.captures({ex});
  else_g.outputs({ey});
  GraphMaker g;
  uint32_t x = g.value("x", {"3"}, fbt::DataType::Float);
  uint32_t flag = g.value("flag", {}, fbt::DataType::Int32);
  g.constant_f32("two", {}, {2});
  uint32_t y = g.value("y");
  fbt::IfAttrsT attrs;
  attrs.then_branch = then_g.take();
  attrs.else_branch = else_g.take();
  fbt::OperatorAttrsUnion u;
  u.Set(std::move(attrs));
  g.op("branch", OT::If, {i(flag)}, {i(y)}, std::move(u));
  g.inputs({x, flag});
  g.outputs({y});
  Model m = rten::import_bytes(write_v1(model_of(g)), "if.rten");
  Session s(test::cpu_target());
  CompiledModel cm = s.compile(m.graph());
  Tensor xv = test::f32({3}, {1, -2, 3});
  EXPECT_EQ(test::values(cm.run({{"x", xv}, {"flag", i32({}, {1})}}).at("y")),
            (std::vector<double>{2, -4, 6}));
  EXPECT_EQ(test::values(cm.run({{"x", xv}, {"flag", i32({}, {0})}}).at("y")),
            (std::vector<double>{-1, 2, -3}));
}

TEST(RtenModels, LoopWithInt32Counter) {
  // acc_{k+1} = acc_k + x * k for k = 0, 1, 2: the body uses the int32 iteration number.
  GraphMaker body;
  uint32_t iter = body.value("iter"), cond = body.value("cond"), acc = body.value("acc");
  uint32_t bx = body.value("x");
  uint32_t kf = body.value("kf"), step = body.value("step"), acc2 = body.value("acc2");
  fbt::CastAttrsT to_float;
  to_float.to = fbt::DataType::Float;
  fbt::OperatorAttrsUnion cast;
  cast.Set(std::move(to_float));
  body.op("to_float", OT::Cast, {i(iter)}, {i(kf)}, std::move(cast));
  body.op("scale", OT::Mul, {i(bx), i(kf)}, {i(step)});
  body.op("accumulate", OT::Add, {i(acc), i(step)}, {i(acc2)});
  body.inputs({iter, cond, acc});
  body.captures({bx});
  body.outputs({cond, acc2});
  GraphMaker g;
  uint32_t x = g.value("x", {"2"}, fbt::DataType::Float);
  uint32_t acc0 = g.value("acc0", {"2"}, fbt::DataType::Float);
  uint32_t trips = g.constant_i32("trips", {}, {3});
  uint32_t yes = g.constant_i32("yes", {}, {1});
  uint32_t out = g.value("out");
  fbt::LoopAttrsT attrs;
  attrs.body = body.take();
  fbt::OperatorAttrsUnion u;
  u.Set(std::move(attrs));
  g.op("loop", OT::Loop, {i(trips), i(yes), i(acc0)}, {i(out)}, std::move(u));
  g.inputs({x, acc0});
  g.outputs({out});
  Model m = rten::import_bytes(write_v2(model_of(g)), "loop.rten");
  NamedTensors r = run(m, {{"x", test::f32({2}, {1, 10})}, {"acc0", test::f32({2}, {5, 5})}});
  EXPECT_EQ(test::values(r.at("out")), (std::vector<double>{8, 35}));
}

TEST(RtenModels, PluginPicksRtenByExtensionAndByMagic) {
  registry::Options o;
  o.plugin_paths = {RLX_TEST_PLUGIN_DIR};
  o.build_legality = false;
  // Never destroyed, like the CLI's registry (no plugin unload while oneTBB workers run).
  static const registry::Registry* reg = new registry::Registry(registry::Registry::discover(o));
  fs::path dir = fs::temp_directory_path() / ("rlx_rten_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const char* name : {"add_relu.rten", "add_relu.bin"}) {
    fs::path p = dir / name;
    std::ofstream(p, std::ios::binary) << write_v2(add_relu());
    auto importer = reg->importer_for(p);
    ASSERT_TRUE(importer) << name;
    EXPECT_EQ(importer->name(), "rten");
    Model m = importer->load(p);
    NamedTensors out = run(m, {{"x", test::f32({2, 3}, {0, 0, 0, 0, 0, 0})}});
    EXPECT_EQ(test::values(out.at("y")), (std::vector<double>{1, 0, 3, 0, 5, 0}));
  }
  fs::remove_all(dir);
}

// The fuzz target's seeds (tests/fuzz/corpus/rten) are these models; they must stay valid.
// RLX_RTEN_WRITE_SEEDS=<folder> writes them there.
TEST(RtenModels, FuzzSeedsAreValidModels) {
  std::map<std::string, std::string> seeds = {{"add_relu_v1.rten", write_v1(add_relu())},
                                              {"add_relu_v2.rten", write_v2(add_relu())}};
  if (const char* out = std::getenv("RLX_RTEN_WRITE_SEEDS"))
    for (const auto& [name, bytes] : seeds)
      std::ofstream(fs::path(out) / name, std::ios::binary) << bytes;
  fs::path corpus = fs::path(RLX_RTEN_FUZZ_CORPUS);
  for (const auto& [name, bytes] : seeds) {
    std::ifstream in(corpus / name, std::ios::binary);
    ASSERT_TRUE(in) << (corpus / name) << " is missing (RLX_RTEN_WRITE_SEEDS writes it)";
    std::string stored((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(stored, bytes) << name << " differs from what the maker writes now";
    EXPECT_NO_THROW(rten::import_bytes(stored, name));
  }
}

}  // namespace
}  // namespace rlx
