// Model builders for formats that carry weights only (a Hugging Face folder, a GGUF file): a
// normalised transformer config plus a source of weights becomes an rlx::Model. Importers map
// their own metadata keys and tensor names onto these; the builders know nothing of files.
//
// Weight names are the Hugging Face ones ("model.layers.0.self_attn.q_proj.weight"); the GGUF
// importer translates its names ("blk.0.attn_q.weight") before asking.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rlx/core/model.h"
#include "rlx/core/tensor.h"

namespace rlx::frontends {

struct TransformerConfig {
  std::string arch;  // "bert" | "qwen3" | "llama" | "gemma3"
  int64_t vocab = 0, hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0;
  int64_t intermediate = 0, max_positions = 0;
  double norm_eps = 1e-6;
  double rope_theta = 10000.0;
  bool tie_embeddings = false;
  std::string hidden_act = "silu";  // "silu" | "gelu" | "gelu_tanh"
  int64_t type_vocab = 0;           // bert: token_type embeddings
  // gemma3: sliding-window layers, local rope base, query scale.
  int64_t sliding_window = 0, sliding_window_pattern = 0;
  double rope_local_theta = 10000.0, query_pre_attn_scalar = 0.0;
  int64_t bos = -1, eos = -1;
  // Further ids that end generation (a config may list several eos ids); eos is not repeated.
  std::vector<int64_t> extra_eos;
  int64_t pad = -1;
  // gemma3: the attention of each layer, "sliding_attention" | "full_attention"; when empty,
  // every sliding_window_pattern-th layer is full and the others slide.
  std::vector<std::string> layer_types;
  // gemma3 norms scale by (1 + w) where Hugging Face stores w; GGUF files store 1 + w (false).
  bool norm_adds_one = true;
  // Where the weights came from, for error messages ("qwen3 folder /x/y").
  std::string source;
  // Ranks the heads and MLP columns are split over: > 1 when this config describes one rank's
  // shard (heads, kv_heads and intermediate already divided), whose row-parallel products end
  // in an AllReduce.
  int64_t tensor_parallel = 1;
  // This shard's rank, and whether the vocabulary is split too (decoders whose vocab divides by
  // the ranks): the shard then holds rows [rank * vocab / tensor_parallel, ...) of the embedding
  // table and the lm head (vocab stays the whole model's).
  int64_t tensor_parallel_rank = 0;
  bool vocab_parallel = false;
  // Pipeline stage `pipeline_stage` of `pipeline_stages` (> 1: one stage's layers, rlx/core/
  // model.h's PipelineParallel); the shard's tensor-parallel ranks are then one block
  // communicator of the job.
  int64_t pipeline_stages = 1, pipeline_stage = 0;
};

// A weight as stored. Either `dense` is set, or `qtype` names a block format (GGUF "q4_k", ...)
// and `raw` holds its rows as bytes ([rows, bytes_per_row], u8) for logical `shape`.
// A matrix quantized to int8 by `rlx quantize` has `dense` i8 [N, K] and `scale` f32 [N] (one
// per output channel); when it was calibrated (int8 static), `input_scale` (f32) and
// `input_zero` (u8) are the u8 parameters of the activations it multiplies, and `input_smooth`
// (f32 [K], optional) the per-input factor those activations take first (SmoothQuant).
struct Weight {
  Tensor dense;
  std::string qtype;
  Tensor raw;
  std::vector<int64_t> shape;
  Tensor scale, input_scale, input_zero, input_smooth;
};

class WeightSource {
 public:
  virtual ~WeightSource() = default;
  virtual bool has(const std::string& name) const = 0;
  // Throws a user error naming the tensor (and the file) when it is missing.
  virtual Weight get(const std::string& name) const = 0;
  // Every tensor the source holds, so that build_model can refuse the ones no graph reads.
  virtual std::vector<std::string> names() const = 0;
};

// Builds the model's graphs (see rlx/core/model.h for the graph names and docs/models.md for
// their inputs and outputs). Throws a user error naming the config field or the tensor when the
// config is incomplete or a weight is missing or has the wrong shape, and when the source holds
// weights no graph reads (a config that describes less than the checkpoint holds, such as fewer
// layers) other than the ones checkpoints carry for other uses (rotary inv_freq buffers,
// position_ids, a tied lm_head, BERT's pooler and pre-training heads).
// With tp.size > 1, rank tp.rank's shard of a decoder (docs/parallel.md, "Tensor parallelism"),
// recorded under kTensorParallelKey; a model that cannot be split so is a user error saying why.
// With pp.stages > 1, stage pp.stage's layers of a decoder (docs/parallel.md, "Pipeline
// parallelism"), recorded under kPipelineParallelKey.
Model build_model(const TransformerConfig& config, const WeightSource& weights,
                  const TensorParallel& tp = {}, const PipelineParallel& pp = {});

// Metadata keys build_model writes into Model::metadata, read by `rlx generate` and tests.
inline constexpr const char* kMetaEosIds = "eos_token_ids";  // "2" or "151645,151643"; "" none
inline constexpr const char* kMetaBosId = "bos_token_id";
inline constexpr const char* kMetaVocab = "vocab_size";
inline constexpr const char* kMetaMaxPositions = "max_position_embeddings";

}  // namespace rlx::frontends
