#include "rlx/llm/sampling.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "rlx/core/error.h"

namespace rlx::llm {
namespace {

void require(bool ok, const char* field, double value, const char* rule) {
  if (!ok) throw_user_error(fmt::format("sampling: {} {} is not {}", field, value, rule));
}

// Rank order of the warpers: higher logit first, the lower id on ties (so top_k 1 is argmax).
bool ranks_before(std::span<const float> logits, int64_t a, int64_t b) {
  return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
}

}  // namespace

void check_sampling_options(const SamplingOptions& o) {
  require(std::isfinite(o.temperature) && o.temperature >= 0, "temperature", o.temperature,
          "a number >= 0");
  require(o.top_k >= 0, "top_k", static_cast<double>(o.top_k), "an integer >= 0");
  require(std::isfinite(o.top_p) && o.top_p > 0 && o.top_p <= 1, "top_p", o.top_p,
          "a number in (0, 1]");
  require(std::isfinite(o.repetition_penalty) && o.repetition_penalty > 0, "repetition_penalty",
          o.repetition_penalty, "a number > 0");
}

void apply_repetition_penalty(std::span<float> logits, std::span<const int64_t> seen,
                              double penalty) {
  if (penalty == 1) return;
  // Each id once, however often it was seen: the rule penalises presence, not count.
  for (int64_t id : std::set<int64_t>(seen.begin(), seen.end())) {
    if (id < 0 || id >= static_cast<int64_t>(logits.size())) continue;
    float& l = logits[id];
    l = static_cast<float>(l > 0 ? l / penalty : l * penalty);
  }
}

int64_t argmax(std::span<const float> logits) {
  int64_t best = 0;
  for (int64_t i = 0; i < static_cast<int64_t>(logits.size()); ++i) {
    // NaN compares false with everything: the loop would quietly pick token 0.
    if (std::isnan(logits[i]))
      throw_user_error(fmt::format(
          "the model's logits are NaN (vocabulary entry {}): the weights or the config produce "
          "NaN (check epsilons and rope bases); no token is chosen from them",
          i));
    if (logits[i] > logits[best]) best = i;
  }
  return best;
}

std::vector<Candidate> sampling_candidates(std::span<const float> logits,
                                           const SamplingOptions& options) {
  const auto vocab = static_cast<int64_t>(logits.size());
  if (vocab == 0) throw_user_error("sampling: the logits are empty");
  if (!(options.temperature > 0))
    throw_user_error("sampling: candidates need a temperature > 0 (0 is greedy: argmax)");
  const int64_t best = argmax(logits);  // also refuses NaN
  if (!std::isfinite(logits[best]))
    throw_user_error(
        fmt::format("sampling: the largest logit is {}, so no token has a finite "
                    "probability",
                    logits[best]));
  const int64_t kept = options.top_k > 0 ? std::min(options.top_k, vocab) : vocab;
  std::vector<int64_t> order(static_cast<size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + kept, order.end(),
                    [&](int64_t a, int64_t b) { return ranks_before(logits, a, b); });
  order.resize(static_cast<size_t>(kept));

  // Softmax of logits / temperature over the top_k, in double, shifted by the largest.
  std::vector<Candidate> out;
  out.reserve(order.size());
  double total = 0;
  for (int64_t id : order) {
    double p = std::exp((static_cast<double>(logits[id]) - logits[best]) / options.temperature);
    out.push_back({id, p});
    total += p;
  }
  // Nucleus: add tokens while the mass before them is short of top_p (the first always).
  double mass = 0;
  size_t n = 0;
  while (n < out.size() && (n == 0 || mass < options.top_p)) mass += out[n++].probability / total;
  out.resize(n);
  double kept_total = 0;
  for (const Candidate& c : out) kept_total += c.probability;
  for (Candidate& c : out) c.probability /= kept_total;
  return out;
}

int64_t draw_candidate(const std::vector<Candidate>& candidates, double u) {
  double cumulative = 0;
  for (const Candidate& c : candidates) {
    cumulative += c.probability;
    if (u < cumulative) return c.id;
  }
  return candidates.back().id;
}

Sampler::Sampler(const SamplingOptions& options) : options_(options), engine_(options.seed) {
  check_sampling_options(options_);
}

double Sampler::uniform() {
  return static_cast<double>(engine_() >> 11) * 0x1.0p-53;
}

int64_t Sampler::choose(std::span<const float> logits, std::span<const int64_t> seen) {
  std::span<const float> warped = logits;
  if (options_.repetition_penalty != 1) {
    scratch_.assign(logits.begin(), logits.end());
    apply_repetition_penalty(scratch_, seen, options_.repetition_penalty);
    warped = scratch_;
  }
  if (greedy()) return argmax(warped);
  return draw_candidate(sampling_candidates(warped, options_), uniform());
}

}  // namespace rlx::llm
