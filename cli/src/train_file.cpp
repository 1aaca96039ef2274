// `rlx train --model FILE --data DATA`: a model file whose graph ends in its loss (IR text with
// its params' .safetensors beside it, ONNX, or what another importer reads), trained on batches
// cut from DATA, in one process or data-parallel over ranks; and the epoch loop both `rlx train`
// paths run.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "errors.h"
#include "model.h"
#include "numpy_files.h"
#include "ranks.h"
#include "rlx/core/error.h"
#include "rlx/core/host_memory.h"
#include "rlx/core/plot.h"
#include "rlx/core/png.h"
#include "rlx/core/progress.h"
#include "rlx/core/safetensors.h"
#include "stderr_status.h"
#include "train_options.h"

namespace rlx::cli {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

bool is_mlp_spec(const std::string& model) {
  return model.rfind("mlp:", 0) == 0;
}

EpochLog run_epochs(Trainer& trainer, const std::vector<NamedTensors>& batches, int64_t epochs,
                    int64_t batch, const char* samples) {
  EpochLog log;
  const auto steps = static_cast<int64_t>(batches.size());
  for (int64_t e = 0; e < epochs; ++e) {
    double sum = 0;
    Clock::time_point start{};
    progress::Task task(fmt::format("epoch {}/{}", e + 1, epochs), steps);
    for (int64_t s = 0; s < steps; ++s) {
      // The very first step compiles the program: the first epoch is timed from its second.
      if (s == (e == 0 && steps > 1 ? 1 : 0)) start = Clock::now();
      log.step_losses.push_back(trainer.step(batches[s]));
      sum += log.step_losses.back();
      task.advance();
    }
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    int64_t timed = e == 0 && steps > 1 ? steps - 1 : steps;
    log.last_rate = static_cast<double>(timed * batch) / seconds;
    double mean = sum / static_cast<double>(steps);
    if (!std::isfinite(mean))
      throw_user_error(fmt::format(
          "training diverged in epoch {} (loss {}); try a smaller learning rate", e + 1, mean));
    log.losses.push_back(jnumber(mean));
    log.rates.push_back(jnumber(std::round(log.last_rate)));
    note(fmt::format("epoch {}/{}: loss {:.4f}, {:.0f} {}/s", e + 1, epochs, mean, log.last_rate,
                     samples));
  }
  return log;
}

json::Object train_record(const Trainer& trainer, const std::string& target,
                          const OptimizerConfig& optimizer, int64_t arena_bytes,
                          const std::optional<fs::path>& plot) {
  return {{"steps", jint(trainer.steps())},
          {"target", jstring(target)},
          {"optimizer", jstring(optimizer_text(optimizer))},
          {"step_arena_bytes", jint(arena_bytes)},
          {"parameter_and_state_bytes", jint(trainer.kept_bytes())},
          {"plot", plot ? jstring(plot->string()) : jnull()}};
}

std::string train_text_tail(const Trainer& trainer, int64_t arena_bytes,
                            const std::optional<fs::path>& save,
                            const std::optional<fs::path>& plot) {
  std::string text =
      fmt::format("  step memory: {} KiB working arena, {} KiB parameters and state\n",
                  arena_bytes / 1024, trainer.kept_bytes() / 1024);
  if (save) text += fmt::format("  saved {}\n", save->string());
  if (plot) text += fmt::format("  loss plot {}\n", plot->string());
  return text;
}

TensorMap read_training_data(const std::string& path) {
  const fs::path p(path);
  if (p.extension() != ".safetensors" && p.extension() != ".npz")
    throw CliError(fmt::format("--data {}: not a .safetensors or .npz file", path),
                   "a model file trains on a .safetensors or .npz file with one tensor per input "
                   "(MNIST folders and synthetic:N are for --model mlp:...)");
  std::error_code ec;
  if (!fs::is_regular_file(p, ec))
    throw CliError(fmt::format("--data {}: no such file", path),
                   "give a .safetensors or .npz file with one tensor per input of the model");
  return p.extension() == ".npz" ? read_npz(path) : read_safetensors(p);
}

std::vector<NamedTensors> cut_batches(const Graph& g, const TensorMap& data, int64_t batch,
                                      const std::string& model, const std::string& data_path,
                                      const std::shared_ptr<Target>& target) {
  int64_t n = -1;
  std::string first;
  for (ValueId v : g.inputs) {
    const std::string& name = g.values[v].name;
    const TensorType& t = g.type(v);
    auto it = data.find(name);
    if (it == data.end())
      throw_user_error(fmt::format("--data {} has no tensor '{}', an input of {} ({})", data_path,
                                   name, model, t.str()));
    const Tensor& d = it->second;
    if (t.rank() == 0 || d.shape().size() != static_cast<size_t>(t.rank()) || d.dtype() != t.dtype)
      throw_user_error(fmt::format(
          "--data {}: '{}' is {}{} but the input is {}; it needs the input's dtype and rank, "
          "samples along the first dim",
          data_path, name, dtype_name(d.dtype()), d.shape_str(), t.str()));
    for (size_t k = 1; k < d.shape().size(); ++k)
      if (t.shape[k].is_static() && t.shape[k].value != d.shape()[k])
        throw_user_error(fmt::format("--data {}: '{}' is {}{} but the input is {}", data_path, name,
                                     dtype_name(d.dtype()), d.shape_str(), t.str()));
    if (t.shape[0].is_static() && t.shape[0].value != batch)
      throw_user_error(fmt::format(
          "--batch {}: input '{}' of {} takes batches of {} exactly ({}); give --batch {} or a "
          "model with a symbolic first dim",
          batch, name, model, t.shape[0].value, t.str(), t.shape[0].value));
    if (n >= 0 && d.shape()[0] != n)
      throw_user_error(fmt::format("--data {}: '{}' has {} samples but '{}' has {}", data_path,
                                   name, d.shape()[0], first, n));
    n = d.shape()[0], first = name;
  }
  for (const auto& [name, t] : data)
    if (!g.find_value(name) ||
        std::find(g.inputs.begin(), g.inputs.end(), *g.find_value(name)) == g.inputs.end())
      throw_user_error(fmt::format("--data {} has a tensor '{}' that is no input of {}", data_path,
                                   name, model));
  if (n < batch)
    throw_user_error(fmt::format("--batch {} is larger than the {} samples of {}", batch,
                                 std::max<int64_t>(n, 0), data_path));
  const int64_t steps = n / batch;
  if (steps * batch != n)
    note(fmt::format("the last {} samples of each epoch are left out (not a whole batch)",
                     n - steps * batch));
  std::vector<NamedTensors> batches(static_cast<size_t>(steps));
  for (int64_t s = 0; s < steps; ++s)
    for (ValueId v : g.inputs)
      batches[s][g.values[v].name] = rows(data.at(g.values[v].name), s * batch, batch, target);
  return batches;
}

int64_t rank_share(const TrainOptions& o, const JobRank& job) {
  if (o.batch % job.world)
    throw UsageError(fmt::format("--batch {} does not split into {} equal shares, one a rank",
                                 o.batch, job.world),
                     fmt::format("give a --batch that divides by {}", job.world));
  return o.batch / job.world;
}

std::vector<NamedTensors> rank_rows(const std::vector<NamedTensors>& batches, int64_t share,
                                    int32_t rank, const std::shared_ptr<Target>& target) {
  std::vector<NamedTensors> mine;
  for (const NamedTensors& batch : batches) {
    NamedTensors in;
    for (const auto& [name, tensor] : batch) in[name] = rows(tensor, rank * share, share, target);
    mine.push_back(std::move(in));
  }
  return mine;
}

namespace {

// Data parallelism over a model file: rank r takes rows [r * share, (r + 1) * share) of every
// batch, and the step averages the ranks' losses and gradients (OptimizerConfig::data_parallel).
// That is the whole batch's step only for a loss that is a mean over the samples, which is
// checked on the first batch with the initial parameters: the whole batch's loss must be the
// mean of its shares' losses.
std::vector<NamedTensors> rank_shares(const Graph& g, const std::shared_ptr<Target>& target,
                                      const std::vector<NamedTensors>& batches,
                                      const TrainOptions& o, const JobRank& job) {
  const int64_t share = rank_share(o, job);
  for (ValueId v : g.inputs)
    if (g.type(v).shape[0].is_static())
      throw UsageError(
          fmt::format("data-parallel training runs {} on shares of {} samples, and its input "
                      "'{}' is {}, with a fixed first dim",
                      o.model, o.batch / job.world, g.values[v].name, g.type(v).str()),
          "give the model's inputs a symbolic first dim (f32[B,...]), or train in one process");
  Session session(target);
  CompiledModel forward = session.compile(g);
  const std::string loss = g.values[g.outputs[0]].name;
  auto loss_of = [&](const NamedTensors& in) { return forward.run(in).at(loss).scalar_at(0); };
  const double whole = loss_of(batches[0]);
  double sum = 0;
  const std::vector<NamedTensors> first(batches.begin(), batches.begin() + 1);
  for (int32_t r = 0; r < job.world; ++r) sum += loss_of(rank_rows(first, share, r, nullptr)[0]);
  const double mean = sum / static_cast<double>(job.world);
  auto near = [&](double v) {
    return std::fabs(whole - v) <= 1e-4 * std::max(1.0, std::fabs(whole));
  };
  if (!near(mean))
    throw CliError(
        fmt::format("data-parallel training averages the ranks' losses and gradients, which is "
                    "the whole batch's step only for a loss that is a mean over the samples; the "
                    "loss of {} is {:.6g} on the first batch and {:.6g} on average over its {} "
                    "shares{}",
                    o.model, whole, mean, job.world,
                    near(sum) ? " (it sums over the samples)" : ""),
        "divide the loss by the batch size (dim_size of the first dim gives it), or train in "
        "one process");
  return rank_rows(batches, share, job.rank, target);
}

}  // namespace

int train_file_main(const TrainOptions& o, const GlobalOptions& global) {
  StderrStatus status(global.quiet);
  const JobRank job = job_rank();
  OptimizerConfig optimizer = parse_optimizer(o.optimizer);
  const std::optional<fs::path> save_path = writable_path(o.save, "--save");
  const std::optional<fs::path> plot_path = writable_path(o.plot, "--plot");
  const registry::Registry& reg = plugin_registry(global, /*build_legality=*/false);
  Model model = load_model(reg, o.model);
  const Graph& g = model.graph();
  if (g.outputs.empty() || g.type(g.outputs[0]).rank() != 0 ||
      !is_float(g.type(g.outputs[0]).dtype))
    throw CliError(
        fmt::format("--model {}: its first output {} is not a loss", o.model,
                    g.outputs.empty()
                        ? std::string("(none)")
                        : "%" + g.values[g.outputs[0]].name + " " + g.type(g.outputs[0]).str()),
        "rlx train takes a graph whose first output is its loss, a float scalar (reduce it to one "
        "with reduce_sum or a mean), or --model mlp:IN,HIDDEN...,OUT");
  if (g.params.empty())
    throw CliError(fmt::format("--model {} has no params, so nothing to train", o.model),
                   "declare what is trained as params (IR text: params(...), their values in the "
                   "model's .safetensors)");
  std::shared_ptr<Target> target = choose_target(reg, o.target);
  require_can_execute(*target, target->name(), o.model);
  const std::optional<PipelineTraining> pp = pipeline_training(o, job);
  const JobRank dp = data_parallel_ranks(o, job);
  std::vector<NamedTensors> batches = cut_batches(g, read_training_data(o.data), o.batch, o.model,
                                                  o.data, dp.world > 1 ? nullptr : target);
  std::shared_ptr<Channel> channel;
  if (dp.world > 1) {
    batches = rank_shares(g, target, batches, o, dp);
    if (!pp) optimizer.data_parallel = dp.world;  // pipeline stages average in their own step
  }
  if (job.world > 1) channel = join_ranks(*target, o.ranks);
  Trainer trainer = make_trainer(target, g, optimizer, pp, batches[0]);
  resume_training(trainer, o.resume);
  EpochLog log = run_epochs(trainer, batches, o.epochs, o.batch, "samples");
  trainer.gather_stages();  // pipeline stages: every parameter to rank 0
  // Rank 0 holds every parameter: it writes the files.
  if (save_path && job.rank == 0) trainer.save(*save_path);
  if (plot_path && job.rank == 0) write_png(*plot_path, loss_plot(log.step_losses));
  const int64_t arena = trainer.arena_bytes(batches[0]);
  if (o.json) {
    json::Object doc{{"samples_per_s", jnumber(std::round(log.last_rate))},
                     {"epoch_losses", json::Value{log.losses}},
                     {"epoch_samples_per_s", json::Value{log.rates}}};
    for (auto& field : train_record(trainer, target->name(), optimizer, arena, plot_path))
      doc.push_back(std::move(field));
    std::fputs((to_json_text(json::Value{std::move(doc)}) + "\n").c_str(), stdout);
    return 0;
  }
  std::string text = fmt::format("trained {} ({} params) for {} steps on {} ({}), {} samples/s\n",
                                 o.model, g.params.size(), trainer.steps(), target->name(),
                                 optimizer_text(optimizer), std::lround(log.last_rate));
  for (size_t e = 0; e < log.losses.size(); ++e)
    text += fmt::format("  epoch {}: loss {:.6g}\n", e + 1, log.losses[e].as_number()->value);
  text += train_text_tail(trainer, arena, save_path, plot_path);
  std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace rlx::cli
