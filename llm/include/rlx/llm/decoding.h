// Decoding with the KV-cache graphs of a decoder model ("prefill" and "decode", see
// docs/models.md): greedy unless the options ask for sampling. `rlx generate` and the tests drive
// this same loop.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <span>
#include <vector>

#include "rlx/core/model.h"
#include "rlx/core/runtime.h"
#include "rlx/llm/sampling.h"

namespace rlx::llm {

struct DecodeOptions {
  int64_t max_new_tokens = 16;
  std::set<int64_t> stop_ids;  // a row stops after producing one of these (it is kept)
  SamplingOptions sampling;    // greedy unless it says otherwise
  // Called with each token of a prompt row as soon as it is chosen, before the next decode step
  // runs, so a caller can show text while the rest is computed.
  std::function<void(int64_t row, int64_t token)> on_token;
  // Asked after on_token: true ends the row after that token (a stop string in the row's text,
  // which the caller follows with a TextStream, rlx/llm/text_stream.h).
  std::function<bool(int64_t row)> stop_requested;
};

// Why a row ended: max_new_tokens reached, one of stop_ids produced, or stop_requested.
enum class StopReason { kLength, kStopId, kRequested };

struct DecodeResult {
  std::vector<std::vector<int64_t>> tokens;  // per prompt row: the generated ids
  std::vector<StopReason> stop_reasons;      // per prompt row
  // prefill_seconds includes specialising the prefill graph to the prompt's length on its first
  // run (generating and compiling kernels unless the kernel cache has them). So does the first
  // decode step for the cache capacity: it is timed apart (first_step_seconds), and
  // decode_seconds / decode_steps cover the steps after it, the steady state.
  double compile_seconds = 0, prefill_seconds = 0, first_step_seconds = 0, decode_seconds = 0;
  int64_t decode_steps = 0;
  // T of the decode graph: prompt length + max_new_tokens, rounded up to kCapacityStep.
  int64_t cache_capacity = 0;
  // How the KV cache is kept (the decode graph's past_* inputs, set_kv_cache_dtype) and its
  // size: every past_* tensor at cache_capacity, summed.
  DType cache_dtype = DType::kF32;
  int64_t cache_bytes = 0;
};

inline constexpr int64_t kCapacityStep = 64;

// Keeps the KV cache of a decode graph in `dtype` (a float: f32, f16 or bf16): its past_*
// inputs, the scatters that write a step's keys and values into them (the new rows rounded to
// `dtype` as they are stored) and what those return (the present_* outputs). Attention reads the
// cache as it is stored (the HIR op converts k and v to q's dtype); any other reader gets a
// conversion back to the dtype it read before. Returns how many past_* inputs the graph has (0:
// the graph has no KV cache and is unchanged); a non-float dtype is a user error. The caller
// reports the choice: it changes the results (f16 keeps about 3 decimal digits).
int set_kv_cache_dtype(Graph& graph, DType dtype);

class Decoder {
 public:
  // Throws a user error when the model lacks the prefill/decode graphs.
  Decoder(const Model& model, std::shared_ptr<Target> target);
  // prompt: i64[B, S], rows of equal length (no padding). A prompt plus max_new_tokens longer
  // than context() is a user error, and so are sampling options outside their ranges. The rows
  // share one random engine, drawn from in row order.
  DecodeResult run(const Tensor& prompt, const DecodeOptions& options);
  // Positions the model takes (its max_position_embeddings, from its input limit on
  // `position`); 0 when the model does not say.
  int64_t context() const { return context_; }

 private:
  CompiledModel prefill_, decode_;
  std::vector<std::string> cache_names_;  // past_* inputs of decode, in input order
  std::vector<DType> cache_dtypes_;       // and their dtypes
  double compile_seconds_ = 0;
  int64_t context_ = 0;
  std::string context_reason_;
};

// The ids that end a text for `model`: its metadata's eos_token_ids (the importers write the
// config's and generation config's end-of-sequence ids there, "2" or "151645,151643"). Empty
// when the model names none; a malformed entry is a user error.
std::set<int64_t> end_of_text_ids(const Model& model);

// Row `row` of the last position of logits f32[B, S, V]; other dtypes or ranks are a user error.
std::span<const float> last_row(const Tensor& logits, int64_t row);

// Index of the largest value in row `row` of the last position of logits [B, S, V] (the first
// one on ties, like torch.argmax).
int64_t argmax_last(const Tensor& logits, int64_t row);

}  // namespace rlx::llm
