// `rlx train`'s options and what its two model paths share: train.cpp trains the built-in MLP
// (`--model mlp:...` on images), train_file.cpp a model file whose graph ends in its loss.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "json_out.h"
#include "options.h"
#include "ranks.h"
#include "rlx/core/safetensors.h"
#include "rlx/core/tensor.h"
#include "rlx/core/trainer.h"
#include "tensor_rows.h"

namespace rlx::cli {

struct TrainOptions {
  std::string model, data, optimizer = "sgd:lr=0.02,momentum=0.9", target = "cpu";
  int64_t batch = 128, epochs = 1, seed = 0;
  std::optional<std::string> save, plot, task;
  std::optional<std::string> eval_data;  // --task sequence-classification: held-out sequences
  std::optional<std::string> resume;  // a --save'd training state to continue from
  bool json = false;
  RankOptions ranks;  // --nproc: data-parallel ranks; --pp: pipeline stages
  std::optional<int64_t> micro_batches;
};

// Whether --model names the built-in MLP ("mlp:IN,HIDDEN...,OUT") rather than a file.
bool is_mlp_spec(const std::string& model);

// What the epochs measured.
struct EpochLog {
  json::Array losses, rates;        // per epoch: the mean loss, samples/s
  std::vector<double> step_losses;  // every step's loss, for --plot
  double last_rate = 0;             // samples/s of the last epoch
};

// Runs `epochs` passes over `batches` (each `batch` samples) with a progress bar, timing each
// epoch (the first from its second step: the first step compiles) and noting its loss and rate
// on stderr; a user error when a mean loss is not finite.
EpochLog run_epochs(Trainer& trainer, const std::vector<NamedTensors>& batches, int64_t epochs,
                    int64_t batch, const char* samples);

// The fields of `rlx train --json` that both paths write (steps, target, optimizer, memory, plot);
// each path adds its rates and losses.
json::Object train_record(const Trainer& trainer, const std::string& target,
                          const OptimizerConfig& optimizer, int64_t arena_bytes,
                          const std::optional<std::filesystem::path>& plot);

// The closing lines both paths print: the step's memory and the files written.
std::string train_text_tail(const Trainer& trainer, int64_t arena_bytes,
                            const std::optional<std::filesystem::path>& save,
                            const std::optional<std::filesystem::path>& plot);

// The tensors of --data (.safetensors or .npz); a CLI error naming the file otherwise.
TensorMap read_training_data(const std::string& path);

// The batches of `data` for graph `g`'s inputs: every input present with its dtype and trailing
// dims, one sample count N along the first dims, a first dim that takes `batch` rows.
std::vector<NamedTensors> cut_batches(const Graph& g, const TensorMap& data, int64_t batch,
                                      const std::string& model, const std::string& data_path,
                                      const std::shared_ptr<Target>& target);

// --pp P and --micro-batches M (train_pipeline.cpp): this rank's stage and the micro-batches;
// nullopt when neither is given. A usage error when the job is not P ranks or M does not divide
// --batch.
std::optional<PipelineTraining> pipeline_training(const TrainOptions& o, const JobRank& job);
// The job as data parallelism sees it: every rank under --pp holds the whole batch.
JobRank data_parallel_ranks(const TrainOptions& o, const JobRank& job);
// The trainer of `model`: pipelined (its programs at one micro-batch of `first_batch`'s shapes)
// when `pp` is given.
Trainer make_trainer(const std::shared_ptr<Target>& target, const Graph& model,
                     const OptimizerConfig& optimizer, const std::optional<PipelineTraining>& pp,
                     const NamedTensors& first_batch);

// --resume FILE: the trainer continues from the parameters, optimizer state and step count that
// --save wrote (each pipeline stage its own); a usage error naming the file and, when it does
// not match the model, the tensor and what was expected.
void resume_training(Trainer& trainer, const std::optional<std::string>& resume);

// Data parallelism: the share of every batch each rank takes (--batch divided by the ranks; a
// usage error when it does not divide), and rank job.rank's rows [rank * share, ...) of each
// batch (in `target`'s fast host memory when given).
int64_t rank_share(const TrainOptions& o, const JobRank& job);
std::vector<NamedTensors> rank_rows(const std::vector<NamedTensors>& batches, int64_t share,
                                    int32_t rank, const std::shared_ptr<Target>& target);

// `rlx train --model FILE --data DATA`: the graph's first output is the loss, its params are
// trained, and DATA (.safetensors or .npz) holds one tensor per graph input, samples along the
// first dim.
int train_file_main(const TrainOptions& o, const GlobalOptions& global);

// `rlx train --model FOLDER --task causal-lm --data TOKENS` (train_task.cpp): a Hugging Face
// decoder's weights trained on next-token prediction; --save writes a loadable model folder.
int train_task_main(const TrainOptions& o, const GlobalOptions& global);

}  // namespace rlx::cli
