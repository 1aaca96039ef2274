// What build_model.cpp dispatches to: one function per model family.
#pragma once
#include <string>

#include "rlx/core/builder.h"
#include "rlx/frontends/builders.h"

namespace rlx::frontends::detail {

// Encoders: "main" (input_ids, attention_mask, token_type_ids -> last_hidden_state,
// sentence_embedding).
Graph build_bert_main(const TransformerConfig& c, const WeightSource& w);

// Decoders (qwen3, llama, gemma3): which graph of the KV-cache design (docs/models.md).
enum class DecoderGraph { kMain, kPrefill, kDecode };
Graph build_decoder(const TransformerConfig& c, const WeightSource& w, DecoderGraph which);

// Marks v as a graph output under `name` (output names are value names).
void output(GraphBuilder& b, ValueId v, const std::string& name);

}  // namespace rlx::frontends::detail
