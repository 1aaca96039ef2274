// The sampling flags `rlx generate` and `rlx chat` share (--temperature, --top-k, --top-p,
// --seed, --repetition-penalty): one declaration, one check, one JSON description.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "rlx/core/json.h"
#include "rlx/llm/sampling.h"

namespace CLI {
class App;
}

namespace rlx::cli {

struct SamplingFlags {
  std::optional<double> temperature, top_p, repetition_penalty;
  std::optional<int64_t> top_k, seed;
};

void add_sampling_flags(CLI::App& app, SamplingFlags& into);

// The options the flags give; a sampling-only flag without --temperature > 0 is a usage error.
llm::SamplingOptions sampling_options(const SamplingFlags& flags);

// {"method": "greedy", "repetition_penalty"} or {"method": "sample", temperature, top_k, ...}.
json::Value sampling_json(const llm::SamplingOptions& options);

}  // namespace rlx::cli
