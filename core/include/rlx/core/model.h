// What an importer produces: one or more graphs plus what a user needs around them (metadata,
// a tokenizer description). Graph names follow a convention the CLI relies on:
//   "main"     the model as a whole (rlx run | explain | compile; rlx embed for encoders)
//   "prefill"  decoders: prompt in, logits and the KV cache out
//   "decode"   decoders: one token and the KV cache in, logits and the updated cache out
// docs/models.md states the input/output names of each.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rlx/core/graph.h"

namespace rlx {

// Tokenizer data as stored in the model file; core builds the tokenizer from it, so no
// tokenizer code runs inside a plugin.
struct TokenizerSpec {
  std::string kind;                 // "wordpiece" | "bpe" (byte-level) | "spm" (SentencePiece)
  std::vector<std::string> tokens;  // id -> token text
  std::vector<float> scores;        // spm: piece scores
  std::vector<int32_t> types;       // spm: 1 normal, 2 unknown, 3 control, 4 user, 6 byte
  std::vector<std::string> merges;  // bpe: "a b" merge rules, highest priority first
  std::string pre;                  // bpe pre-tokenizer name ("gpt2", "llama3", ...)
  int64_t bos = -1, eos = -1, unk = -1, pad = -1, sep = -1, cls = -1, mask = -1;
  bool add_bos = false, add_eos = false;
  bool lowercase = false;           // wordpiece: do_lower_case
  bool add_space_prefix = true;     // spm: a space before the text (llama yes, gemma no)
};

struct Model {
  std::string architecture;  // "bert", "qwen3", "llama", "gemma3", "ir", "onnx", ...
  std::map<std::string, Graph> graphs;
  std::map<std::string, std::string> metadata;
  std::optional<TokenizerSpec> tokenizer;

  // The graph named `name`; throws a user error listing the graphs the model has.
  const Graph& graph(const std::string& name = "main") const;
};

}  // namespace rlx
