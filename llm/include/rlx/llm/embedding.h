// Sentence embeddings from an encoder model: a bert whose main graph ends in a
// `sentence_embedding` output (mean pooling over the unmasked tokens, then L2 normalisation, as
// the safetensors importer builds it for sentence-transformers folders). `rlx embed` and
// examples/embed_sentences.cpp use this.
//
//   rlx::llm::SentenceEncoder encoder(model, registry.target("cpu"));
//   rlx::Tensor e = encoder.embed({"A cat sits.", "A dog runs."});  // f32[2, hidden]
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rlx/core/model.h"
#include "rlx/core/runtime.h"
#include "rlx/llm/tokenizer.h"

namespace rlx::llm {

// Empty when `model` can be embedded with; otherwise why not, in words that name what is
// missing (no main graph, or no sentence_embedding output).
std::string encoder_problem(const Model& model);

// The most tokens a row may have: the smaller of the model's max_position_embeddings and
// sentence-transformers' max_seq_length, when its metadata has them.
int64_t encoder_row_limit(const Model& model);

// The encoder's inputs for `sentences`: one row each of [CLS] sentence [SEP] (as `tokenizer`
// adds them), cut to `row_limit` keeping the final [SEP] (as sentence-transformers truncates),
// padded to the longest row with the pad id and masked out; token_type_ids all zero.
NamedTensors sentence_batch(const Tokenizer& tokenizer, const std::vector<std::string>& sentences,
                            int64_t row_limit);

// Completes an encoder's inputs as Hugging Face tokenizers produce them for unpadded single
// segments: attention_mask all ones and token_type_ids all zeros when absent. input_ids (and the
// others) may be i32 or i64 [batch, seq]; they are widened to i64. Throws a user error naming
// the tensor for another dtype or rank, or a shape that differs from input_ids'.
NamedTensors complete_encoder_inputs(NamedTensors inputs);

class SentenceEncoder {
 public:
  // Compiles the model's main graph for `target`. Throws a user error when encoder_problem()
  // says it is not an encoder.
  SentenceEncoder(const Model& model, std::shared_ptr<Target> target);

  // f32[n, hidden]: one unit-length row per sentence, tokenized with the model's tokenizer (a
  // user error when the model has none).
  Tensor embed(const std::vector<std::string>& sentences);
  // Every output of the encoder (sentence_embedding, last_hidden_state) for token ids, completed
  // by complete_encoder_inputs.
  NamedTensors run(const NamedTensors& inputs);

 private:
  std::optional<Tokenizer> tokenizer_;
  std::string tokenizer_problem_;
  int64_t row_limit_;
  CompiledModel compiled_;
};

// Cosine similarity of two rows of n floats, summed in double; 0 when either is all zeros.
double cosine_similarity(const float* a, const float* b, int64_t n);

}  // namespace rlx::llm
