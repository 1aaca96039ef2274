// The sampler against probabilities computed by hand. For logits {1, 2, 3, 0}:
// e^1 = 2.718281828, e^2 = 7.389056099, e^3 = 20.085536923, e^0 = 1, sum 31.192874850, so
// softmax = {0.087144319, 0.236882818, 0.643914260, 0.032058603}.
#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <string>
#include <vector>

#include "rlx/core/error.h"
#include "rlx/llm/sampling.h"

namespace rlx::llm {
namespace {

const std::vector<float> kLogits = {1, 2, 3, 0};
const std::vector<double> kSoftmax = {0.087144319, 0.236882818, 0.643914260, 0.032058603};

SamplingOptions sampled(double temperature) {
  SamplingOptions o;
  o.temperature = temperature;
  return o;
}

void expect_candidates(const std::vector<Candidate>& got,
                       const std::vector<std::pair<int64_t, double>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].id, want[i].first) << "candidate " << i;
    EXPECT_NEAR(got[i].probability, want[i].second, 1e-8) << "candidate " << i;
  }
}

TEST(Sampling, TemperatureOneIsTheSoftmaxMostLikelyFirst) {
  expect_candidates(sampling_candidates(kLogits, sampled(1)),
                    {{2, kSoftmax[2]}, {1, kSoftmax[1]}, {0, kSoftmax[0]}, {3, kSoftmax[3]}});
}

// Logits / 2 = {0.5, 1, 1.5, 0}: e^x = {1.648721271, 2.718281828, 4.481689070, 1}, sum
// 9.848692169.
TEST(Sampling, TemperatureDividesTheLogits) {
  expect_candidates(sampling_candidates(kLogits, sampled(2)),
                    {{2, 0.455054234}, {1, 0.276004345}, {0, 0.167405097}, {3, 0.101536324}});
}

// The two largest, renormalised: e^3 / (e^3 + e^2) = 0.731058579.
TEST(Sampling, TopKKeepsTheKMostLikelyRenormalised) {
  SamplingOptions o = sampled(1);
  o.top_k = 2;
  expect_candidates(sampling_candidates(kLogits, o), {{2, 0.731058579}, {1, 0.268941421}});
  o.top_k = 10;  // more than the vocabulary: all of it
  EXPECT_EQ(sampling_candidates(kLogits, o).size(), 4u);
}

// Mass before each token, most likely first: 0, 0.644, 0.881, 0.968. top_p 0.7 keeps the two
// whose preceding mass is below 0.7; 0.6 keeps the first alone; 0.9 keeps three.
TEST(Sampling, TopPKeepsTheSmallestSetReachingP) {
  SamplingOptions o = sampled(1);
  o.top_p = 0.7;
  expect_candidates(sampling_candidates(kLogits, o), {{2, 0.731058579}, {1, 0.268941421}});
  o.top_p = 0.6;
  expect_candidates(sampling_candidates(kLogits, o), {{2, 1.0}});
  o.top_p = 0.9;
  const double three = kSoftmax[2] + kSoftmax[1] + kSoftmax[0];
  expect_candidates(sampling_candidates(kLogits, o),
                    {{2, kSoftmax[2] / three}, {1, kSoftmax[1] / three}, {0, kSoftmax[0] / three}});
}

// top_p applies to what top_k left: of {0.731, 0.269}, 0.7 keeps the first alone.
TEST(Sampling, TopPFollowsTopK) {
  SamplingOptions o = sampled(1);
  o.top_k = 2;
  o.top_p = 0.7;
  expect_candidates(sampling_candidates(kLogits, o), {{2, 1.0}});
}

// Seen ids 0 and 1 (1 twice: presence counts, not repeats): 1 / 2 = 0.5 and -2 * 2 = -4; the
// others keep theirs.
TEST(Sampling, RepetitionPenaltyDividesPositiveAndMultipliesNegativeLogits) {
  std::vector<float> logits = {1, -2, 3, 0.5f};
  const std::vector<int64_t> seen = {0, 1, 1};
  apply_repetition_penalty(logits, seen, 2.0);
  EXPECT_EQ(logits, (std::vector<float>{0.5f, -4, 3, 0.5f}));
}

// With penalty 4, token 2's logit 3 becomes 0.75 and token 1's 2 wins the greedy choice.
TEST(Sampling, RepetitionPenaltyChangesTheGreedyChoice) {
  SamplingOptions o;
  o.repetition_penalty = 4;
  Sampler sampler(o);
  const std::vector<int64_t> seen = {2};
  EXPECT_EQ(sampler.choose(kLogits, seen), 1);
}

TEST(Sampling, InverseCdfWalksTheCumulativeProbabilities) {
  const std::vector<Candidate> c = {{7, 0.5}, {3, 0.3}, {9, 0.2}};
  EXPECT_EQ(draw_candidate(c, 0.0), 7);
  EXPECT_EQ(draw_candidate(c, 0.49), 7);
  EXPECT_EQ(draw_candidate(c, 0.5), 3);
  EXPECT_EQ(draw_candidate(c, 0.79), 3);
  EXPECT_EQ(draw_candidate(c, 0.81), 9);
  EXPECT_EQ(draw_candidate(c, 0.9999999999), 9);
}

// 200000 draws: a frequency's standard deviation is at most 0.0012, so 0.006 is five of them.
TEST(Sampling, SeededDrawsFollowTheSoftmax) {
  Sampler sampler(sampled(1));
  constexpr int kDraws = 200000;
  std::map<int64_t, int> counts;
  for (int i = 0; i < kDraws; ++i) ++counts[sampler.choose(kLogits, {})];
  for (int64_t id = 0; id < 4; ++id)
    EXPECT_NEAR(static_cast<double>(counts[id]) / kDraws, kSoftmax[id], 0.006) << "token " << id;
}

TEST(Sampling, TheSameSeedGivesTheSameTokens) {
  SamplingOptions o = sampled(1.5);
  o.seed = 1234;
  Sampler a(o), b(o);
  o.seed = 1235;
  Sampler c(o);
  int differ = 0;
  for (int i = 0; i < 100; ++i) {
    int64_t x = a.choose(kLogits, {});
    EXPECT_EQ(x, b.choose(kLogits, {}));
    differ += x != c.choose(kLogits, {});
  }
  EXPECT_GT(differ, 0);
}

TEST(Sampling, TemperatureZeroAndTopKOneAreArgmax) {
  const std::vector<float> tied = {1, 4, 2, 4};  // the first of equal maxima, as torch.argmax
  Sampler greedy(SamplingOptions{});
  EXPECT_TRUE(greedy.greedy());
  EXPECT_EQ(greedy.choose(kLogits, {}), 2);
  EXPECT_EQ(greedy.choose(tied, {}), 1);
  SamplingOptions o = sampled(3);
  o.top_k = 1;
  Sampler top1(o);
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(top1.choose(kLogits, {}), 2);
    EXPECT_EQ(top1.choose(tied, {}), 1);
  }
}

TEST(Sampling, OptionsOutsideTheirRangesAreUserErrors) {
  auto refused = [](SamplingOptions o, const std::string& field) {
    try {
      Sampler s(o);
      ADD_FAILURE() << field << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUser);
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  SamplingOptions o;
  o.temperature = -1;
  refused(o, "temperature");
  o = {};
  o.top_p = 0;
  refused(o, "top_p");
  o.top_p = 1.5;
  refused(o, "top_p");
  o = {};
  o.top_k = -1;
  refused(o, "top_k");
  o = {};
  o.repetition_penalty = 0;
  refused(o, "repetition_penalty");
}

TEST(Sampling, NanLogitsAreAUserError) {
  const std::vector<float> nan = {1, std::numeric_limits<float>::quiet_NaN()};
  EXPECT_THROW(argmax(nan), Error);
  EXPECT_THROW(sampling_candidates(nan, sampled(1)), Error);
}

}  // namespace
}  // namespace rlx::llm
