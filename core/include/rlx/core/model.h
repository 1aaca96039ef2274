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
#include "rlx/core/tensor.h"

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

// What a caller may tell an importer besides the path. It crosses the plugin boundary (ABI 1.1);
// an importer takes what its format needs and ignores the rest, so one set of options serves
// every format (the model builders keep their dims symbolic and bind sizes at compile time).
// Tensor parallelism (`--tp N`): the importer builds rank `rank`'s shard of the model, Megatron
// style (attention heads and MLP columns split over `size` ranks, an AllReduce after each
// row-parallel product), and says so under kTensorParallelKey. size 1: the whole model.
struct TensorParallel {
  int32_t rank = 0, size = 1;
};

// Pipeline parallelism (`--pp P`): the importer builds stage `stage` of `stages`, a consecutive
// range of the layers; stage 0 embeds the tokens, each stage sends its hidden state to the next
// (Send/Recv) and the last stage's logits are broadcast to every rank, so every rank of the job
// returns the same outputs. With tensor parallelism as well, the job's ranks are stage-major:
// world rank = stage * tp.size + tp.rank, each stage's tp.size ranks one "block" communicator.
struct PipelineParallel {
  int32_t stage = 0, stages = 1;
};

struct ImportOptions {
  // Values of graph inputs the caller will run with, offered for the ones an op needs at compile
  // time (a Reshape's shape, a Slice's starts, a TopK's k...): rlx compiles per shape, so an
  // output shape may not depend on the value of a run-time input. An importer freezes only those
  // it needs (a constant everywhere, no longer an input of the graph) and lists them in
  // metadata[kFrozenInputsKey] (rlx/core/frozen_inputs.h); the others stay inputs.
  std::map<std::string, Tensor> input_values;
  // Symbolic dims fixed at import (symbol name, as the model spells it, -> size): `rlx compile
  // --bind`. Shape arithmetic rlx cannot keep symbolic (a reflect Pad or a strided Conv on a
  // dynamic axis gives `seq + 128`, `seq / 64 - 1`) needs them.
  std::map<std::string, int64_t> dim_values;
  // Shapes of the tensors the caller will run with, by graph input name (`rlx run --inputs`):
  // an importer that cannot keep a dim symbolic takes its size from here.
  std::map<std::string, std::vector<int64_t>> input_shapes;
  // ABI 2.2: the shard to build; an importer that cannot shard leaves kTensorParallelKey unset.
  TensorParallel tensor_parallel;
  // ABI 2.3: the pipeline stage to build; an importer that cannot split layers leaves
  // kPipelineParallelKey unset.
  PipelineParallel pipeline_parallel;

  bool empty() const {
    return input_values.empty() && dim_values.empty() && input_shapes.empty() &&
           tensor_parallel.size == 1 && pipeline_parallel.stages == 1;
  }
};

// Model::metadata key under which an importer that built a tensor-parallel shard says which
// ("1/2": rank 1 of 2), so the caller knows the request was honoured.
inline constexpr const char* kTensorParallelKey = "tensor_parallel";
// The same for a pipeline stage ("0/2": stage 0 of 2).
inline constexpr const char* kPipelineParallelKey = "pipeline_parallel";

// Model::metadata key under which an importer lists the symbolic dims it fixed from
// ImportOptions ("sequence=512,batch=1"), so a caller can tell a fixed dim from an unknown name.
inline constexpr const char* kFixedDimsKey = "fixed_dims";

// Model::metadata key under which an importer says why a model whose files include a tokenizer
// has no Model::tokenizer (its kind is not one rlx reads), so a caller that needs one can say
// that rather than "there is none".
inline constexpr const char* kTokenizerProblemKey = "tokenizer_problem";

}  // namespace rlx
