// Cutting a training model into pipeline stages (rlx/core/pipeline_training.h): where the cuts
// fall, what crosses between stages and what each stage recomputes instead. The stages running
// on ranks are tested end to end in tests/cli/test_train_cli.cpp (TrainCliTest.Pipeline*).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "rlx/core/builder.h"
#include "rlx/core/error.h"
#include "rlx/core/losses.h"
#include "rlx/core/mlp.h"
#include "rlx/core/passes.h"
#include "rlx/core/pipeline_training.h"

namespace rlx {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Graph mlp_at(const std::vector<int64_t>& sizes, int64_t batch) {
  return specialize(mlp_classifier(sizes, 7, true), {{"batch", batch}});
}

std::vector<std::string> names_of(const Graph& g, const std::vector<ValueId>& ids) {
  std::vector<std::string> out;
  for (ValueId v : ids) out.push_back(g.values[v].name);
  return out;
}

std::vector<std::string> ops_of(const Graph& g) {
  std::vector<std::string> out;
  for (const Node& n : g.nodes) out.push_back(n.op);
  return out;
}

// 784-64-32-10: fc0 holds 50k of the 53k weights, so two stages cut after its ReLU; three
// stages give each Linear its own.
TEST(PipelineSplit, MlpStagesEachHoldTheirLayers) {
  std::vector<StageGraph> two = split_for_pipeline(mlp_at({784, 64, 32, 10}, 32), 2);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_THAT(names_of(two[0].graph, two[0].graph.params), ElementsAre("fc0.weight", "fc0.bias"));
  EXPECT_THAT(names_of(two[0].graph, two[0].graph.inputs), ElementsAre("x"));
  EXPECT_THAT(ops_of(two[0].graph), ElementsAre("Linear", "Relu"));
  EXPECT_FALSE(two[0].has_loss);
  EXPECT_TRUE(two[0].received.empty());
  ASSERT_EQ(two[0].sent.size(), 1u);
  const std::string hidden = two[0].sent[0].name;
  EXPECT_EQ(two[0].sent[0].peer, 1);
  EXPECT_TRUE(two[0].sent[0].cotangent);
  EXPECT_EQ(two[0].graph.type(two[0].graph.outputs[0]).str(), "f32[32,64]");

  EXPECT_THAT(names_of(two[1].graph, two[1].graph.params),
              ElementsAre("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"));
  EXPECT_THAT(names_of(two[1].graph, two[1].graph.inputs), ElementsAre("labels", hidden));
  EXPECT_TRUE(two[1].has_loss);
  EXPECT_EQ(two[1].graph.values[two[1].graph.outputs[0]].name, "loss");
  ASSERT_EQ(two[1].received.size(), 1u);
  EXPECT_EQ(two[1].received[0].name, hidden);
  EXPECT_EQ(two[1].received[0].peer, 0);
  EXPECT_TRUE(two[1].sent.empty());

  std::vector<StageGraph> three = split_for_pipeline(mlp_at({784, 64, 32, 10}, 32), 3);
  for (int s = 0; s < 3; ++s)
    EXPECT_THAT(names_of(three[s].graph, three[s].graph.params),
                ElementsAre(fmt::format("fc{}.weight", s), fmt::format("fc{}.bias", s)));
  EXPECT_EQ(three[1].received.at(0).peer, 0);
  EXPECT_EQ(three[1].sent.at(0).peer, 2);
}

// A mask computed from the input alone is used by both stages: each computes it, nothing but
// the parameter-dependent activation crosses.
TEST(PipelineSplit, ParameterFreeValuesAreRecomputedNotSent) {
  Graph g;
  GraphBuilder b(g);
  ValueId x = b.input("x", {DType::kF32, {4, 8}});
  ValueId mask = b.convert(b.binary("gt", x, b.full_like(x, 0.0)), DType::kF32);
  g.values[mask].name = "mask";
  ValueId w0 = b.param("w0", Tensor(DType::kF32, {8, 8}));
  ValueId w1 = b.param("w1", Tensor(DType::kF32, {8, 8}));
  ValueId h = b.mul(b.op("MatMul", {x, w0}), mask);
  ValueId y = b.mul(b.op("MatMul", {h, w1}), mask);
  ValueId loss = b.reduce(b.mul(y, y), {0, 1}, ReduceKind::kSum);
  b.output(loss);
  std::vector<StageGraph> st = split_for_pipeline(g, 2);
  ASSERT_EQ(st[1].received.size(), 1u);
  EXPECT_NE(st[1].received[0].name, "mask");
  EXPECT_THAT(names_of(st[1].graph, st[1].graph.inputs), ElementsAre("x", st[1].received[0].name));
  EXPECT_TRUE(st[1].graph.find_value("mask").has_value()) << "stage 1 computes the mask itself";
}

// A parameter read by two stages (a tied embedding and head) belongs to the first; the later
// stage receives it each micro-batch and sends its cotangent back.
TEST(PipelineSplit, ATiedParameterIsSentToTheStageThatAlsoReadsIt) {
  Graph g;
  GraphBuilder b(g);
  ValueId x = b.input("x", {DType::kF32, {4, 8}});
  ValueId tied = b.param("tied", Tensor(DType::kF32, {8, 8}));
  ValueId w = b.param("w", Tensor(DType::kF32, {8, 8}));
  ValueId h = b.op("MatMul", {b.op("MatMul", {x, tied}), w});
  ValueId y = b.op("MatMul", {h, tied});
  b.output(b.reduce(b.mul(y, y), {0, 1}, ReduceKind::kSum));
  std::vector<StageGraph> st = split_for_pipeline(g, 2);
  EXPECT_THAT(names_of(st[0].graph, st[0].graph.params), ElementsAre("tied"));
  EXPECT_THAT(names_of(st[1].graph, st[1].graph.params), ElementsAre("w"));
  std::vector<std::string> sent, received;
  for (const StageCrossing& c : st[0].sent) sent.push_back(c.name);
  for (const StageCrossing& c : st[1].received) received.push_back(c.name);
  EXPECT_THAT(sent, ::testing::Contains("tied"));
  EXPECT_EQ(sent, received);
  for (const StageCrossing& c : st[1].received) EXPECT_TRUE(c.cotangent) << c.name;
}

TEST(PipelineSplit, ModelsThatCannotBeCutAreRefusedByName) {
  try {
    split_for_pipeline(mlp_at({784, 10}, 8), 2);
    FAIL() << "one Linear cannot make two stages";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot be cut into 2 stages"));
    EXPECT_THAT(e.what(), HasSubstr("use --pp 1 or fewer"));
  }
  try {
    split_for_pipeline(mlp_classifier({784, 16, 10}, 7, true), 2);
    FAIL() << "a symbolic batch must be bound first";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("bind every dim"));
  }
}

}  // namespace
}  // namespace rlx
