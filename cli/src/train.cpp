// `rlx train --model mlp:784,128,10 --data DIR|synthetic:N --optimizer sgd:lr=0.02,momentum=0.9`:
// trains a model with one compiled step (forward, loss, backward, update) per batch. A model file
// whose graph ends in its loss takes train_file.cpp's path.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "commands.h"
#include "errors.h"
#include "image_data.h"
#include "json_out.h"
#include "model.h"
#include "options.h"
#include "rlx/core/error.h"
#include "rlx/core/mlp.h"
#include "rlx/core/plot.h"
#include "rlx/core/png.h"
#include "rlx/core/trainer.h"
#include "stderr_status.h"
#include "train_options.h"

namespace rlx::cli {
namespace {

namespace fs = std::filesystem;

void declare_train_options(CLI::App& app, TrainOptions& o) {
  add_value(app, "--model", "SPEC|FILE", o.model,
            "the model: mlp:IN,HIDDEN...,OUT (e.g. mlp:784,128,10), a model file (IR text with "
            "its params' .safetensors, ONNX, ...) whose graph's first output is the loss, or with "
            "--task a Hugging Face model folder",
            Presence::kRequired);
  add_value(
      app, "--task", "TASK", o.task,
      "causal-lm: --model is a Hugging Face decoder folder whose own weights are trained on "
      "next-token prediction (the mean cross-entropy of each position's logits against the "
      "token after it); --data holds input_ids (i64 [N, S]). sequence-classification: "
      "--model is an encoder folder (BERT layout) trained with BertForSequenceClassification's "
      "head (pooler, then a Linear to the labels; kept from the folder when it has one, else "
      "added) on the cross-entropy of each sequence's class; --data holds input_ids, labels "
      "(i64 [N], 0 to C - 1) and optionally attention_mask and token_type_ids. --save writes "
      "a model folder");
  add_value(app, "--data", "DIR|synthetic:N|FILE", o.data,
            "for mlp: a folder of MNIST IDX files (gzip or plain), or synthetic:N images from a "
            "fixed seed; for a model file: a .safetensors or .npz file with one tensor per graph "
            "input, samples along the first dim",
            Presence::kRequired);
  add_value(
      app, "--optimizer", "OPT", o.optimizer,
      "sgd|adam|adamw[:key=value,...] (default sgd:lr=0.02,momentum=0.9); keys: lr, momentum, "
      "nesterov, weight_decay, beta1, beta2, eps, clip, schedule=constant|cosine, warmup, total, "
      "min_lr");
  add_integer(app, "--batch", "N", 1, o.batch, "images per step (default 128)");
  add_integer(app, "--epochs", "N", 1, o.epochs, "passes over the training images (default 1)");
  add_integer(app, "--seed", "N", 0, o.seed, "seed of the initial weights (default 0)");
  add_target_option(app, o.target, "train on");
  add_value(
      app, "--eval-data", "FILE", o.eval_data,
      "with --task sequence-classification: labelled sequences (input_ids, labels, as --data) "
      "the trained model classifies afterwards; reports their accuracy and mean loss "
      "(eval_accuracy, eval_loss in --json)");
  add_value(app, "--save", "OUT.safetensors|DIR", o.save,
            "write the trained parameters, optimizer state and step count there (with --task: a "
            "model folder, the original's files with the trained weights)");
  add_value(app, "--resume", "RUN.safetensors", o.resume,
            "continue the run --save wrote there: its parameters, optimizer state and step count "
            "(the learning-rate schedule goes on from that step) replace the initial ones; with "
            "--pp each stage takes its own");
  add_value(app, "--plot", "LOSS.png", o.plot,
            "draw the loss of every step into a PNG (log scale, a grid line per decade)");
  add_flag(app, "--json", o.json,
           "print {\"images_per_s\", \"epoch_losses\": [...], \"accuracy\", ...} on stdout");
  add_rank_options(app, o.ranks, /*tensor_parallel=*/false);  // data-parallel: --nproc
  add_integer(app, "--pp", "P", 1, o.ranks.pp,
              "pipeline parallelism: cut the model into P stages, one a rank (--nproc defaults to "
              "P; --nproc P x D gives each stage D data-parallel ranks), each batch into "
              "--micro-batches that flow through them on the 1F1B schedule");
  add_integer(app, "--micro-batches", "M", 1, o.micro_batches,
              "cut each batch into M equal micro-batches whose gradients add up before one update "
              "(default 2 x --pp; without --pp: gradient accumulation, on each rank with --nproc)");
}

// Accuracy of the current parameters on a labelled set, in batches of the training batch size.
double accuracy(std::shared_ptr<Target> target, const std::vector<int64_t>& sizes,
                const Trainer& trainer, const ImageSet& set, int64_t batch) {
  Session session(std::move(target));
  CompiledModel eval = session.compile(params_as_inputs(mlp_classifier(sizes, 0, false)));
  Tensor x = scaled_inputs(set.images);
  int64_t n = x.shape()[0], right = 0;
  NamedTensors in = trainer.parameters();
  for (int64_t at = 0; at < n; at += batch) {
    int64_t count = std::min(batch, n - at);
    in["x"] = rows(x, at, count);
    Tensor logits = eval.run(in).at("logits");
    int64_t c = logits.shape()[1];
    for (int64_t i = 0; i < count; ++i) {
      const float* row = logits.as<float>() + i * c;
      right += std::max_element(row, row + c) - row == set.labels.as<int32_t>()[at + i];
    }
  }
  return n ? static_cast<double>(right) / static_cast<double>(n) : 0.0;
}

int train_main(const TrainOptions& o, const GlobalOptions& global) {
  if (std::optional<int> code = launch_ranks(o.ranks)) return *code;
  const JobRank job = job_rank();
  if (o.eval_data && !o.task)
    throw UsageError(fmt::format("--eval-data {}: only --task sequence-classification evaluates "
                                 "held-out data (an MLP reports accuracy on the t10k files beside "
                                 "its training files)",
                                 *o.eval_data),
                     "leave --eval-data out");
  if (o.task) return train_task_main(o, global);
  if (!is_mlp_spec(o.model)) return train_file_main(o, global);
  StderrStatus status(global.quiet);
  const std::vector<int64_t> sizes = parse_mlp_spec(o.model);
  OptimizerConfig optimizer = parse_optimizer(o.optimizer);
  // Data parallelism: each rank takes an equal share of every batch, and the step averages the
  // gradients over the ranks (OptimizerConfig::data_parallel). Pipeline stages each see it all.
  const std::optional<PipelineTraining> pp = pipeline_training(o, job);
  const JobRank dp = data_parallel_ranks(o, job);
  const int64_t share = rank_share(o, dp);
  optimizer.data_parallel = pp ? 1 : dp.world;  // pipeline stages average in their own step
  const std::optional<fs::path> save_path = writable_path(o.save, "--save");
  const std::optional<fs::path> plot_path = writable_path(o.plot, "--plot");
  ImageData data = read_image_data(o.data);
  const int64_t pixels = data.train.images.numel() / data.train.images.shape()[0];
  if (sizes.front() != pixels)
    throw_user_error(
        fmt::format("--model {}: the input size is {} but the images of {} have {} pixels", o.model,
                    sizes.front(), data.source, pixels));
  if (data.train.classes > sizes.back())
    throw_user_error(fmt::format("--model {}: {} outputs, but the labels of {} go up to {}",
                                 o.model, sizes.back(), data.source, data.train.classes - 1));
  const int64_t n = data.train.images.shape()[0];
  const int64_t steps_per_epoch = n / o.batch;
  if (steps_per_epoch == 0)
    throw_user_error(fmt::format("--batch {} is larger than the {} training images", o.batch, n));
  if (steps_per_epoch * o.batch != n)
    note(fmt::format("the last {} images of each epoch are left out (not a whole batch)",
                     n - steps_per_epoch * o.batch));

  const registry::Registry& reg = plugin_registry(global, /*build_legality=*/false);
  std::shared_ptr<Target> target = choose_target(reg, o.target);
  require_can_execute(*target, target->name(), o.model);
  const std::shared_ptr<Channel> channel = join_ranks(*target, o.ranks);
  // The batches are cut once: a step then only passes references.
  Tensor x = scaled_inputs(data.train.images);
  std::vector<NamedTensors> batches;
  for (int64_t s = 0; s < steps_per_epoch; ++s)
    batches.push_back(
        {{"x", rows(x, s * o.batch + dp.rank * share, share, target)},
         {"labels", rows(data.train.labels, s * o.batch + dp.rank * share, share, target)}});
  Trainer trainer = make_trainer(
      target, mlp_classifier(sizes, static_cast<uint64_t>(o.seed), true), optimizer, pp, batches[0]);
  resume_training(trainer, o.resume);

  EpochLog log = run_epochs(trainer, batches, o.epochs, o.batch, "images");
  trainer.gather_stages();  // pipeline stages: every parameter to rank 0
  const json::Array& epoch_losses = log.losses;
  const double last_rate = log.last_rate;
  std::optional<double> acc;
  if (data.test && job.rank == 0) acc = accuracy(target, sizes, trainer, *data.test, o.batch);
  // Rank 0 holds every parameter: it writes the files.
  if (save_path && job.rank == 0) trainer.save(*save_path);
  if (plot_path && job.rank == 0) write_png(*plot_path, loss_plot(log.step_losses));
  const int64_t arena = trainer.arena_bytes(batches[0]);
  if (o.json) {
    json::Object doc{{"images_per_s", jnumber(std::round(last_rate))},
                     {"epoch_losses", json::Value{epoch_losses}},
                     {"accuracy", acc ? jnumber(*acc) : jnull()},
                     {"epoch_images_per_s", json::Value{log.rates}}};
    for (auto& field : train_record(trainer, target->name(), optimizer, arena, plot_path))
      doc.push_back(std::move(field));
    std::fputs((to_json_text(json::Value{std::move(doc)}) + "\n").c_str(), stdout);
    return 0;
  }
  std::string text =
      fmt::format("trained {} for {} steps on {} ({}), {} images/s\n", o.model, trainer.steps(),
                  target->name(), optimizer_text(optimizer), std::lround(last_rate));
  for (size_t e = 0; e < epoch_losses.size(); ++e)
    text += fmt::format("  epoch {}: loss {:.4f}\n", e + 1, epoch_losses[e].as_number()->value);
  if (acc)
    text +=
        fmt::format("  test accuracy {:.4f} on {} images\n", *acc, data.test->images.shape()[0]);
  text += train_text_tail(trainer, arena, save_path, plot_path);
  std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace

Command train_command() {
  return make_command<TrainOptions>(
      {"train", "train a model: one compiled step of forward, loss, backward and update per batch",
       "--model mlp:784,128,10 --data DIR|synthetic:N [--optimizer OPT] [--batch N] [--epochs N]\n"
       "       [--target T] [--save OUT.safetensors] [--resume RUN.safetensors] [--plot LOSS.png]\n"
       "       [--json]\n"
       "       rlx train --model MODEL_FILE --data DATA.safetensors|DATA.npz [options as above]\n"
       "       rlx train --model HF_FOLDER --task causal-lm --data TOKENS.safetensors|.npz [--save "
       "DIR] [...]\n"
       "       rlx train --model HF_ENCODER --task sequence-classification --data "
       "LABELLED.safetensors|.npz\n"
       "       [--save DIR] [...]",
       "Trains an MLP classifier (ReLU between Linear layers, softmax cross-entropy) on MNIST's "
       "IDX\n"
       "files in DIR (train-images-idx3-ubyte and train-labels-idx1-ubyte, gzip or plain; with\n"
       "t10k-* beside them the test accuracy is reported) or on synthetic:N images from a fixed\n"
       "seed (10 learnable classes, and a held-out set of N/6). Pixels are scaled to [-1, 1];\n"
       "weights start uniform(-1, 1) * sqrt(2 / fan_in) from --seed, biases at zero; batches are\n"
       "taken in order (no shuffling), and a last partial batch is left out.\n"
       "Each step is one program compiled for the target: the forward pass, the loss, the\n"
       "backward pass and the optimizer's update, the parameters and optimizer state going in and\n"
       "coming out without copies. Progress and each epoch's mean loss and images/s (timed from\n"
       "its second step in the first epoch, which compiles) go to stderr. --save writes the "
       "parameters\n"
       "(fc<i>.weight, fc<i>.bias), optimizer state and step count as safetensors.\n"
       "With a model file (IR text with its params' .safetensors beside it, ONNX, or any model an\n"
       "importer reads), the graph's first output is the loss (a float scalar) and its params are\n"
       "what is trained; DATA holds one tensor per graph input under the input's name, samples\n"
       "along the first dim, cut into batches of --batch in order. --save writes the params under\n"
       "their names.\n"
       "--nproc N trains data-parallel (each rank a share of every batch); --pp P cuts the model\n"
       "into P stages on P ranks instead, each batch into --micro-batches on the 1F1B schedule\n"
       "(docs/training.md); --pp P --nproc P x D runs each stage on D data-parallel ranks\n"
       "(stage-major: rank = stage x D + replica), which share every batch and average their\n"
       "gradients. --resume RUN.safetensors continues a run from what its --save wrote."},
      &declare_train_options, &train_main);
}

}  // namespace rlx::cli
