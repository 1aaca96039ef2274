#include "sampling_flags.h"

#include <fmt/format.h>

#include <utility>

#include "errors.h"
#include "json_out.h"
#include "options.h"

namespace rlx::cli {

void add_sampling_flags(CLI::App& app, SamplingFlags& o) {
  add_number(
      app, "--temperature", "T", [](double v) { return v >= 0; }, ">= 0", o.temperature,
      "sample from softmax(logits / T); 0 (the default) takes the most likely token");
  add_integer(app, "--top-k", "K", 1, o.top_k,
              "sample from the K most likely tokens only (with --temperature)");
  add_number(
      app, "--top-p", "P", [](double v) { return v > 0 && v <= 1; }, "in (0, 1]", o.top_p,
      "sample from the smallest set of most likely tokens whose probability reaches P "
      "(with --temperature)");
  add_integer(app, "--seed", "S", 0, o.seed,
              "seed of the sampler (with --temperature; default 0): the same seed, the same "
              "tokens");
  add_number(
      app, "--repetition-penalty", "R", [](double v) { return v > 0; }, "> 0", o.repetition_penalty,
      "divide positive logits (multiply negative ones) of tokens already in the prompt "
      "or the output by R (default 1: none)");
}

llm::SamplingOptions sampling_options(const SamplingFlags& o) {
  if (o.temperature.value_or(0) == 0)
    for (auto [option, given] :
         {std::pair{"--top-k", o.top_k.has_value()}, std::pair{"--top-p", o.top_p.has_value()},
          std::pair{"--seed", o.seed.has_value()}})
      if (given)
        throw UsageError(fmt::format("{} applies to sampling, and without --temperature (or "
                                     "with 0) generation is greedy",
                                     option),
                         "give --temperature T > 0 to sample (0.7 is a common choice)");
  llm::SamplingOptions s;
  s.temperature = o.temperature.value_or(s.temperature);
  s.top_k = o.top_k.value_or(s.top_k);
  s.top_p = o.top_p.value_or(s.top_p);
  s.repetition_penalty = o.repetition_penalty.value_or(s.repetition_penalty);
  s.seed = static_cast<uint64_t>(o.seed.value_or(0));
  return s;
}

json::Value sampling_json(const llm::SamplingOptions& s) {
  if (s.temperature == 0)
    return json::Value{json::Object{{"method", jstring("greedy")},
                                    {"repetition_penalty", jnumber(s.repetition_penalty)}}};
  return json::Value{json::Object{{"method", jstring("sample")},
                                  {"temperature", jnumber(s.temperature)},
                                  {"top_k", jint(s.top_k)},
                                  {"top_p", jnumber(s.top_p)},
                                  {"seed", jint(static_cast<int64_t>(s.seed))},
                                  {"repetition_penalty", jnumber(s.repetition_penalty)}}};
}

}  // namespace rlx::cli
