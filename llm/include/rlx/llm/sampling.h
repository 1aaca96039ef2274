// How the decoding loop picks the next token from a row of logits: greedy (the default), or a
// seeded draw after the Hugging Face warpers (repetition penalty, temperature, top-k, top-p, in
// that order). The draw is rlx's own inverse-CDF walk over a std::mt19937_64, whose sequence the
// standard fixes, so a seed gives the same tokens with every standard library.
#pragma once
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace rlx::llm {

struct SamplingOptions {
  double temperature = 0;         // 0: greedy (top_k, top_p and seed are then unused)
  int64_t top_k = 0;              // keep the k most likely tokens; 0: all
  double top_p = 1;               // keep the smallest most-likely set with this much mass
  double repetition_penalty = 1;  // CTRL's rule for tokens already in the prompt or generated
  uint64_t seed = 0;
};

// A token with its probability after the warpers.
struct Candidate {
  int64_t id = 0;
  double probability = 0;
};

// Throws a user error naming the field when an option is outside its range (temperature >= 0,
// top_k >= 0, top_p in (0, 1], repetition_penalty > 0, all finite).
void check_sampling_options(const SamplingOptions& options);

// CTRL (Keskar et al. 2019) as transformers applies it: each distinct id in `seen` has its logit
// divided by `penalty` when positive and multiplied by it otherwise.
void apply_repetition_penalty(std::span<float> logits, std::span<const int64_t> seen,
                              double penalty);

// The tokens a draw can pick, most likely first (ties: lower id first), probabilities summing to
// 1: softmax(logits / temperature) cut to the top_k, renormalised, then cut to the smallest
// prefix whose mass reaches top_p (at least one token), renormalised. temperature must be > 0.
std::vector<Candidate> sampling_candidates(std::span<const float> logits,
                                           const SamplingOptions& options);

// Inverse CDF: the first candidate whose cumulative probability exceeds `u` in [0, 1) (the last
// one when rounding leaves the sum short of u).
int64_t draw_candidate(const std::vector<Candidate>& candidates, double u);

// Index of the largest logit, the first on ties (torch.argmax); a NaN logit is a user error.
int64_t argmax(std::span<const float> logits);

class Sampler {
 public:
  // Checks the options (check_sampling_options).
  explicit Sampler(const SamplingOptions& options);
  // The next token of a sequence whose ids so far (prompt and generated) are `seen`.
  int64_t choose(std::span<const float> logits, std::span<const int64_t> seen);
  bool greedy() const { return options_.temperature == 0; }

 private:
  // A double in [0, 1) from the engine's top 53 bits.
  double uniform();

  SamplingOptions options_;
  std::mt19937_64 engine_;
  std::vector<float> scratch_;  // the penalised logits
};

}  // namespace rlx::llm
