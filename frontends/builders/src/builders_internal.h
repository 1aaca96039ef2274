// What build_model.cpp dispatches to: one function per model family.
#pragma once
#include <functional>
#include <set>
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

// A source that remembers which weights were read (has() only asks), so that build_model can
// refuse weights no graph reads.
class UsedWeights final : public WeightSource {
 public:
  explicit UsedWeights(const WeightSource& source) : source_(source) {}
  bool has(const std::string& name) const override { return source_.has(name); }
  Weight get(const std::string& name) const override;
  std::vector<std::string> names() const override { return source_.names(); }
  // Throws a user error listing the weights never read, except those known_unused (see .cpp)
  // and those `elsewhere` says another rank reads (a pipeline stage's neighbours' layers).
  void check_all_used(const TransformerConfig& c,
                      const std::function<bool(const std::string&)>& elsewhere = {}) const;

 private:
  const WeightSource& source_;
  mutable std::set<std::string> used_;
};

// Marks v as a graph output under `name` (output names are value names).
void output(GraphBuilder& b, ValueId v, const std::string& name);

}  // namespace rlx::frontends::detail
