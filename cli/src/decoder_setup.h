// What `rlx generate` and `rlx chat` both do around llm::Decoder: the warning for a model that does not state its context, and the JSON word for why a
// reply ended.
#pragma once
#include <cstdint>
#include <set>

#include "rlx/core/model.h"
#include "rlx/llm/decoding.h"

namespace rlx::cli {

// Positions past a model's trained context give degraded text without any error. A model that
// states its context (max_position_embeddings) is refused past it by the decoder; one that does
// not gets this warning on stderr, since nothing else would say so.
void warn_if_context_unknown(const llm::Decoder& decoder);

// "eos" (an end-of-sequence or end-of-turn token), "stop_string" (a stop string was found in
// the text) or "length" (the token limit).
const char* finish_reason(llm::StopReason reason);

}  // namespace rlx::cli
