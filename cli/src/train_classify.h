// `rlx train --model HF_ENCODER --task sequence-classification`: an encoder (BERT layout) with a
// classification head trained on labelled sequences. The head is Hugging Face's
// BertForSequenceClassification one: the first token's state through the pooler (tanh of a
// Linear), then a Linear to the labels, so a saved folder loads in transformers as that class
// and in rlx with a `logits` output (frontends/builders/src/bert.cpp).
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "rlx/core/graph.h"
#include "rlx/core/model.h"
#include "rlx/core/runtime.h"
#include "rlx/core/safetensors.h"
#include "rlx/core/target.h"

namespace rlx::cli {

struct ClassifierHead {
  int64_t labels = 0;
  bool in_graph = false;      // the folder already has a classifier: main's `logits` output is it
  std::string pooler_prefix;  // "" or "bert.", as the folder names its encoder
  // The head's initial values when the graph lacks it: the folder's pooler when it has one (a
  // BertModel checkpoint keeps it), else drawn from --seed; the classifier drawn from --seed.
  TensorMap init;
};

// Checks `data` (input_ids i64 [N, S], labels i64 [N] in [0, labels), optional attention_mask
// and token_type_ids, which default to all ones and all zeros and are added to `data`) and
// decides the head: the number of labels is the folder's classifier's, else the largest label
// plus one (at least 2).
ClassifierHead classifier_head(const Model& model, const std::filesystem::path& folder,
                               TensorMap& data, const std::string& data_path, uint64_t seed);

// main (input_ids, attention_mask, token_type_ids -> last_hidden_state [B, S, H], ...) at
// batch x seq with the head and the mean cross-entropy against `labels` [batch] as its one output,
// or with `logits` [batch, labels] as its one output and no labels input when !with_loss.
Graph classification_graph(const Graph& main, const ClassifierHead& head, int64_t batch,
                           int64_t seq, const std::string& model, bool with_loss = true);

// Held-out labelled sequences (checked and completed as classifier_head does, with labels below
// head.labels) classified with `params` (the trained ones, by name) in batches of `batch`.
struct Evaluation {
  double accuracy = 0, loss = 0;  // loss: the mean cross-entropy, in double from the logits
  int64_t sequences = 0;
};
Evaluation evaluate_classifier(std::shared_ptr<Target> target, const Model& model,
                               const std::filesystem::path& folder, const ClassifierHead& head,
                               const NamedTensors& params, const std::string& eval_path,
                               int64_t batch);

// The saved folder's config.json: the original's, naming BertForSequenceClassification and
// `labels` labels (id2label / label2id LABEL_0, ...), as transformers writes one.
void write_classifier_config(const std::filesystem::path& from, const std::filesystem::path& to,
                             int64_t labels);

}  // namespace rlx::cli
