// `rlx train --model HF_FOLDER --task causal-lm|sequence-classification --data FILE`: a decoder's
// own weights trained on next-token prediction (the logits of every position but the last
// against the token after it), or an encoder with a classification head trained on labelled
// sequences (train_classify.h). The loss is built onto the model's forward graph, and --save
// writes a model folder that every rlx command loads like the original.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>

#include "errors.h"
#include "model.h"
#include "ranks.h"
#include "rlx/core/builder.h"
#include "rlx/core/error.h"
#include "rlx/core/fused_weights.h"
#include "rlx/core/json.h"
#include "rlx/core/losses.h"
#include "rlx/core/passes.h"
#include "rlx/core/plot.h"
#include "rlx/core/png.h"
#include "rlx/core/safetensors.h"
#include "stderr_status.h"
#include "train_classify.h"
#include "train_options.h"

namespace rlx::cli {

namespace fs = std::filesystem;

namespace {

constexpr const char* kTasks = "causal-lm, sequence-classification";

// The forward graph `main` (input_ids [B, S] -> logits [B, S, V]) at batch x seq, ending in the
// mean cross-entropy of logits[:, :-1] against input_ids[:, 1:].
Graph causal_lm_graph(const Graph& main, int64_t batch, int64_t seq, const std::string& model) {
  const std::optional<ValueId> ids_in = main.find_value("input_ids");
  if (!ids_in || main.inputs.size() != 1 || main.outputs.empty() ||
      main.type(main.outputs[0]).rank() != 3 || main.values[main.outputs[0]].name != "logits")
    throw CliError(
        fmt::format("--task causal-lm: {} has no graph from input_ids to logits [B, S, V]", model),
        "give a Hugging Face decoder folder (Llama, Qwen3, ...: `rlx info MODEL` lists its "
        "graphs)");
  const Shape& s = main.type(*ids_in).shape;
  Bindings bind;
  if (s.size() != 2)
    throw CliError(fmt::format("--task causal-lm: input_ids of {} is not [B, S]", model), "");
  for (size_t d = 0; d < 2; ++d) {
    const int64_t want = d == 0 ? batch : seq;
    if (!s[d].is_static())
      bind[s[d].sym] = want;
    else if (s[d].value != want)
      throw_user_error(
          fmt::format("--task causal-lm: input_ids of {} is {}, the data gives [{}, {}]", model,
                      main.type(*ids_in).str(), batch, seq));
  }
  Graph g = specialize(main, bind);
  GraphBuilder b(g);
  b.set_loc("causal-lm loss");
  const ValueId ids = *g.find_value("input_ids");
  const ValueId logits = g.outputs[0];
  const int64_t vocab = g.type(logits).shape[2].value;
  ValueId predicted = b.slice(logits, {0, 0, 0}, {batch, seq - 1, vocab});
  predicted = b.reshape(predicted, Shape{batch * (seq - 1), vocab});
  const ValueId next = b.reshape(b.slice(ids, {0, 1}, {batch, seq}), Shape{batch * (seq - 1)});
  const ValueId loss = softmax_cross_entropy(b, predicted, next);
  g.values[loss].name = "loss";
  g.outputs = {loss};
  return g;
}

// The files holding a Hugging Face folder's weights: the shards its index names, or
// model.safetensors.
std::set<std::string> weight_files(const fs::path& folder) {
  const fs::path index = folder / "model.safetensors.index.json";
  std::error_code ec;
  if (!fs::exists(index, ec)) return {"model.safetensors"};
  std::ifstream in(index);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::set<std::string> files;
  const json::Value doc = json::parse(text);
  if (const json::Value* map = doc.find("weight_map"); map && map->as_object())
    for (const auto& member : *map->as_object())
      if (member.second.as_string()) files.insert(*member.second.as_string());
  return files;
}

// The model folder with its weights replaced by `params`: every other file copied, the weights in
// one model.safetensors under the model's own names. `added` names params the task put beside
// the model's own (a classification head), written as they are.
void save_model_folder(const fs::path& from, const fs::path& to, const NamedTensors& params,
                       const TensorMap& added = {}) {
  std::error_code ec;
  fs::create_directories(to, ec);
  if (ec)
    throw_user_error(
        fmt::format("--save {}: cannot create the folder: {}", to.string(), ec.message()));
  const std::set<std::string> weights = weight_files(from);
  TensorMap source;
  for (const auto& entry : fs::directory_iterator(from)) {
    const fs::path& p = entry.path();
    const std::string name = p.filename().string();
    if (weights.count(name)) {
      for (auto& [k, t] : read_safetensors(p)) source.emplace(k, t);
      continue;
    }
    if (name == "model.safetensors.index.json" || !entry.is_regular_file()) continue;
    fs::copy_file(p, to / name, fs::copy_options::overwrite_existing, ec);
    if (ec)
      throw_user_error(
          fmt::format("--save {}: cannot copy {}: {}", to.string(), name, ec.message()));
  }
  TensorMap out;
  for (const auto& [name, t] : params) {
    if (added.count(name)) {
      out.emplace(name, t);
      continue;
    }
    auto refuse = [&] {
      throw_user_error(
          fmt::format("--save {}: parameter '{}' ({}{}) is not a tensor of {} with that dtype and "
                      "shape, so the "
                      "folder could not be loaded as the model; save a .safetensors file instead",
                      to.string(), name, dtype_name(t.dtype()), t.shape_str(), from.string()));
    };
    // A fused product's param (rlx/core/fused_weights.h) is its parts' rows in order: each goes
    // back under its own name.
    const std::vector<std::string> parts = fused_weight_parts(name);
    size_t at = 0;
    for (const std::string& part : parts) {
      auto it = source.find(part);
      if (it == source.end() || it->second.dtype() != t.dtype()) refuse();
      const Tensor& like = it->second;
      if (parts.size() == 1) {
        if (like.shape() != t.shape()) refuse();
        out.emplace(name, t);
        break;
      }
      if (like.rank() != t.rank() || like.rank() < 1 ||
          !std::equal(like.shape().begin() + 1, like.shape().end(), t.shape().begin() + 1) ||
          at + like.nbytes() > t.nbytes())
        refuse();
      Tensor rows(t.dtype(), like.shape());
      std::memcpy(rows.data(), static_cast<const char*>(t.data()) + at, like.nbytes());
      out.emplace(part, std::move(rows));
      at += like.nbytes();
    }
    if (parts.size() > 1 && at != t.nbytes()) refuse();
  }
  // Tensors the graph does not train (a tied head stored twice, buffers) keep their values.
  for (auto& [name, t] : source) out.emplace(name, t);
  write_safetensors(to / "model.safetensors", out, {{"format", "pt"}});
}

}  // namespace

int train_task_main(const TrainOptions& o, const GlobalOptions& global) {
  if (*o.task != "causal-lm" && *o.task != "sequence-classification")
    throw CliError(fmt::format("--task {}: unknown task", *o.task),
                   fmt::format("tasks: {}", kTasks));
  const bool classify = *o.task == "sequence-classification";
  if (o.eval_data && !classify)
    throw UsageError(
        fmt::format("--eval-data {}: only --task sequence-classification evaluates", *o.eval_data),
        "leave --eval-data out");
  // Its --save writes a model folder, not the training state --resume continues from.
  if (o.resume)
    throw UsageError(
        fmt::format("--resume {}: --task {} saves a model folder (weights only), not a training "
                    "state to resume",
                    *o.resume, *o.task),
        "continue fine-tuning from the saved folder with --model DIR (the optimizer starts "
        "afresh), or leave --resume out");
  StderrStatus status(global.quiet);
  const JobRank job = job_rank();
  OptimizerConfig optimizer = parse_optimizer(o.optimizer);
  // Data parallelism: each rank its share of every batch; the loss is the mean cross-entropy
  // over the batch's tokens, so the ranks' mean is the whole batch's.
  const std::optional<PipelineTraining> pp = pipeline_training(o, job);
  const JobRank dp = data_parallel_ranks(o, job);
  const int64_t share = rank_share(o, dp);
  optimizer.data_parallel = pp ? 1 : dp.world;  // pipeline stages average in their own step
  const std::optional<fs::path> plot_path = writable_path(o.plot, "--plot");
  std::error_code ec;
  if (!fs::is_directory(o.model, ec))
    throw CliError(
        fmt::format("--task {}: {} is not a folder", *o.task, o.model),
        fmt::format("give a Hugging Face {} folder (config.json and safetensors weights)",
                    classify ? "encoder" : "decoder"));
  const std::optional<fs::path> save_path =
      o.save ? std::optional<fs::path>(*o.save) : std::nullopt;
  if (save_path && fs::exists(*save_path, ec) && fs::equivalent(*save_path, o.model, ec))
    throw CliError(fmt::format("--save {} is the model's own folder", save_path->string()),
                   "save the trained model into a new folder");
  const registry::Registry& reg = plugin_registry(global, /*build_legality=*/false);
  Model model = load_model(reg, o.model);
  TensorMap data = read_training_data(o.data);
  std::optional<ClassifierHead> head;
  if (classify) head = classifier_head(model, o.model, data, o.data, static_cast<uint64_t>(o.seed));
  auto it = data.find("input_ids");
  if (it == data.end() || it->second.dtype() != DType::kI64 || it->second.shape().size() != 2)
    throw CliError(fmt::format("--data {}: no input_ids i64 [N, S] tensor", o.data),
                   "give the token ids of N sequences of S tokens as input_ids (i64) in a "
                   ".safetensors or .npz file");
  const int64_t seq = it->second.shape()[1];
  if (seq < 2 && !classify)
    throw_user_error(fmt::format(
        "--data {}: sequences of {} token(s) have no next token to predict", o.data, seq));
  auto task_graph = [&](int64_t batch) {
    return classify ? classification_graph(model.graph("main"), *head, batch, seq, o.model)
                    : causal_lm_graph(model.graph("main"), batch, seq, o.model);
  };
  // Under --pp the stages are compiled for one micro-batch.
  const Graph g = task_graph(pp ? share / pp->micro_batches : share);
  // A token id outside the vocabulary would be a wrong loss, not an error, inside the graph
  // (classifier_head checked the encoder's).
  const Graph& main = model.graph("main");
  const Tensor& ids = it->second;
  if (!classify) {
    const int64_t vocab = main.type(main.outputs[0]).shape[2].value;
    for (int64_t i = 0; i < ids.numel(); ++i)
      if (ids.as<int64_t>()[i] < 0 || ids.as<int64_t>()[i] >= vocab)
        throw_user_error(fmt::format(
            "--data {}: input_ids[{}, {}] = {} is not a token id of {} (vocabulary of {})", o.data,
            i / seq, i % seq, ids.as<int64_t>()[i], o.model, vocab));
  }
  std::shared_ptr<Target> target = choose_target(reg, o.target);
  require_can_execute(*target, target->name(), o.model);
  std::vector<NamedTensors> batches;
  std::shared_ptr<Channel> channel;
  if (dp.world > 1) {
    const Graph whole = task_graph(o.batch);
    batches = rank_rows(cut_batches(whole, data, o.batch, o.model, o.data, nullptr), share,
                        dp.rank, target);
  } else {
    const Graph whole = task_graph(o.batch);
    batches = cut_batches(whole, data, o.batch, o.model, o.data, target);
  }
  if (job.world > 1) channel = join_ranks(*target, o.ranks);
  Trainer trainer = pp ? Trainer(target, g, optimizer, *pp) : Trainer(target, g, optimizer);
  EpochLog log = run_epochs(trainer, batches, o.epochs, o.batch, "sequences");
  trainer.gather_stages();  // pipeline stages: every parameter to rank 0
  // Rank 0 holds every parameter: it writes the files.
  if (save_path && job.rank == 0) {
    save_model_folder(o.model, *save_path, trainer.parameters(),
                      head && !head->in_graph ? head->init : TensorMap{});
    if (classify) write_classifier_config(o.model, *save_path, head->labels);
  }
  if (plot_path && job.rank == 0) write_png(*plot_path, loss_plot(log.step_losses));
  std::optional<Evaluation> eval;
  if (o.eval_data && job.rank == 0)
    eval = evaluate_classifier(target, model, o.model, *head, trainer.parameters(), *o.eval_data,
                               o.batch);
  const int64_t arena = trainer.arena_bytes(batches[0]);
  if (o.json) {
    json::Object doc{{"task", jstring(*o.task)},
                     {"labels", classify ? jint(head->labels) : jnull()},
                     {"eval_accuracy", eval ? jnumber(eval->accuracy) : jnull()},
                     {"eval_loss", eval ? jnumber(eval->loss) : jnull()},
                     {"sequences_per_s", jnumber(std::round(log.last_rate))},
                     {"first_loss", jnumber(log.step_losses.front())},
                     {"last_loss", jnumber(log.step_losses.back())},
                     {"epoch_losses", json::Value{log.losses}},
                     {"epoch_sequences_per_s", json::Value{log.rates}}};
    for (auto& field : train_record(trainer, target->name(), optimizer, arena, plot_path))
      doc.push_back(std::move(field));
    std::fputs((to_json_text(json::Value{std::move(doc)}) + "\n").c_str(), stdout);
    return 0;
  }
  std::string text = fmt::format(
      "trained {} ({} tensors) on {} for {} steps on {} ({}), {} sequences/s\n"
      "  loss {:.6g} at the first step, {:.6g} at the last\n",
      o.model, g.params.size(),
      classify ? fmt::format("sequence classification ({} labels)", head->labels)
               : std::string("next-token prediction"),
      trainer.steps(), target->name(), optimizer_text(optimizer), std::lround(log.last_rate),
      log.step_losses.front(), log.step_losses.back());
  for (size_t e = 0; e < log.losses.size(); ++e)
    text += fmt::format("  epoch {}: loss {:.6g}\n", e + 1, log.losses[e].as_number()->value);
  if (eval)
    text += fmt::format("  {} held-out sequences: accuracy {:.4f}, loss {:.6g}\n", eval->sequences,
                        eval->accuracy, eval->loss);
  text += train_text_tail(trainer, arena, save_path, plot_path);
  if (save_path)
    text += classify
                ? fmt::format("  `rlx run {} --inputs IN.safetensors` gives its logits\n",
                              save_path->string())
                : fmt::format("  `rlx generate {}` runs the trained model\n", save_path->string());
  std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace rlx::cli
