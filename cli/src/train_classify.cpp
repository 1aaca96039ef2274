#include "train_classify.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <random>

#include "errors.h"
#include "json_out.h"
#include "rlx/core/builder.h"
#include "rlx/core/error.h"
#include "rlx/core/half.h"
#include "rlx/core/json.h"
#include "rlx/core/losses.h"
#include "rlx/core/passes.h"
#include "rlx/core/runtime.h"
#include "rlx/core/trainer.h"
#include "tensor_rows.h"
#include "train_options.h"

namespace rlx::cli {

namespace fs = std::filesystem;

namespace {

constexpr const char* kEncoderHint =
    "give a Hugging Face encoder folder (BERT layout: `rlx info MODEL` shows a main graph from "
    "input_ids to last_hidden_state)";

// A tensor of a checkpoint as f32 (16-bit checkpoints widen exactly).
Tensor as_f32(const Tensor& t, const std::string& name) {
  if (t.dtype() == DType::kF32) return t;
  Tensor out(DType::kF32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) {
    const uint16_t v = t.as<uint16_t>()[i];
    if (t.dtype() == DType::kF16)
      out.as<float>()[i] = f16_to_f32(v);
    else if (t.dtype() == DType::kBF16)
      out.as<float>()[i] = bf16_to_f32(v);
    else
      throw_user_error(fmt::format("{} is {}, not a float tensor", name, dtype_name(t.dtype())));
  }
  return out;
}

// Values drawn as transformers initialises a Linear of a BERT head: zero mean, standard deviation
// `std` (uniform here, so no tail draws), biases zero.
Tensor drawn(std::vector<int64_t> shape, double std, std::mt19937_64& rng) {
  Tensor t(DType::kF32, std::move(shape));
  const double half_width = std * std::sqrt(3.0);
  std::uniform_real_distribution<double> u(-half_width, half_width);
  for (int64_t i = 0; i < t.numel(); ++i) t.as<float>()[i] = static_cast<float>(u(rng));
  return t;
}

Tensor zeros(int64_t n) {
  Tensor t(DType::kF32, {n});
  std::fill(t.as<float>(), t.as<float>() + n, 0.0f);
  return t;
}

// The folder's own tensors named `names` (empty when any is missing), read from its weights.
TensorMap folder_tensors(const fs::path& folder, const std::vector<std::string>& names) {
  TensorMap out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    if (entry.path().extension() != ".safetensors") continue;
    for (auto& [k, t] : read_safetensors(entry.path()))
      if (std::find(names.begin(), names.end(), k) != names.end()) out.emplace(k, as_f32(t, k));
  }
  return out.size() == names.size() ? out : TensorMap{};
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Checks labelled sequences for the encoder (see classifier_head) and adds the default
// attention_mask and token_type_ids.
void check_labelled(const Model& model, const fs::path& folder, TensorMap& data,
                    const std::string& data_path) {
  const Graph& main = model.graph("main");
  const std::optional<ValueId> hidden = main.find_value("last_hidden_state");
  if (!main.find_value("input_ids") || !hidden || main.type(*hidden).rank() != 3 ||
      !main.type(*hidden).shape[2].is_static())
    throw CliError(fmt::format("--task sequence-classification: {} has no graph from input_ids "
                               "to last_hidden_state [B, S, H]",
                               folder.string()),
                   kEncoderHint);
  auto ids = data.find("input_ids");
  if (ids == data.end() || ids->second.dtype() != DType::kI64 || ids->second.rank() != 2)
    throw CliError(fmt::format("--data {}: no input_ids i64 [N, S] tensor", data_path),
                   "give the token ids of N sequences of S tokens as input_ids (i64) and their "
                   "classes as labels (i64 [N]) in a .safetensors or .npz file");
  const int64_t rows = ids->second.shape()[0], seq = ids->second.shape()[1];
  auto labels = data.find("labels");
  if (labels == data.end() || labels->second.dtype() != DType::kI64 ||
      labels->second.shape() != std::vector<int64_t>{rows})
    throw CliError(fmt::format("--data {}: no labels i64 [{}] tensor (one class per sequence)",
                               data_path, rows),
                   "add each sequence's class, 0 to C - 1, as labels (i64 [N])");
  for (const char* name : {"attention_mask", "token_type_ids"}) {
    auto it = data.find(name);
    if (it != data.end()) {
      if (it->second.dtype() != DType::kI64 || it->second.shape() != ids->second.shape())
        throw_user_error(fmt::format("--data {}: {} is {}{}, input_ids is i64{}", data_path, name,
                                     dtype_name(it->second.dtype()), it->second.shape_str(),
                                     ids->second.shape_str()));
      continue;
    }
    Tensor t(DType::kI64, ids->second.shape());
    std::fill(t.as<int64_t>(), t.as<int64_t>() + t.numel(), std::string(name) == "attention_mask");
    data.emplace(name, std::move(t));
  }
  // A token id outside the embedding table would be a wrong row, not an error, inside the graph.
  if (auto vocab = model.metadata.find("vocab_size"); vocab != model.metadata.end()) {
    const int64_t v = std::stoll(vocab->second);
    const int64_t* x = ids->second.as<int64_t>();
    for (int64_t i = 0; i < ids->second.numel(); ++i)
      if (x[i] < 0 || x[i] >= v)
        throw_user_error(fmt::format(
            "--data {}: input_ids[{}, {}] = {} is not a token id of {} (vocabulary of {})",
            data_path, i / seq, i % seq, x[i], folder.string(), v));
  }
}

void check_labels(const Tensor& labels, int64_t classes, const fs::path& folder,
                  const std::string& data_path) {
  const int64_t* y = labels.as<int64_t>();
  for (int64_t i = 0; i < labels.numel(); ++i)
    if (y[i] < 0 || y[i] >= classes)
      throw_user_error(
          fmt::format("--data {}: labels[{}] = {} is not a class of {} ({} labels: 0 to {})",
                      data_path, i, y[i], folder.string(), classes, classes - 1));
}

}  // namespace

ClassifierHead classifier_head(const Model& model, const fs::path& folder, TensorMap& data,
                               const std::string& data_path, uint64_t seed) {
  check_labelled(model, folder, data, data_path);
  const Graph& main = model.graph("main");
  const Tensor& labels = data.at("labels");
  const int64_t rows = labels.numel();
  ClassifierHead head;
  const int64_t H = main.type(*main.find_value("last_hidden_state")).shape[2].value;
  if (const auto logits = main.find_value("logits")) {
    head.in_graph = true;
    head.labels = main.type(*logits).shape.at(1).value;
  } else {
    const int64_t* y = labels.as<int64_t>();
    head.labels = std::max<int64_t>(2, *std::max_element(y, y + rows) + 1);
  }
  check_labels(labels, head.labels, folder, data_path);
  if (head.in_graph) return head;

  // A BertModel checkpoint keeps its pre-trained pooler ("bert."-prefixed when it came from a
  // task model): fine-tuning starts from it, as transformers does.
  std::mt19937_64 rng(seed);
  for (const char* prefix : {"", "bert."}) {
    const std::string w = std::string(prefix) + "pooler.dense.weight",
                      b = std::string(prefix) + "pooler.dense.bias";
    TensorMap found = folder_tensors(folder, {w, b});
    if (!found.empty() && found.at(w).shape() == std::vector<int64_t>{H, H} &&
        found.at(b).shape() == std::vector<int64_t>{H}) {
      head.pooler_prefix = prefix;
      head.init = std::move(found);
      break;
    }
  }
  if (head.init.empty()) {
    head.init.emplace("pooler.dense.weight", drawn({H, H}, 0.02, rng));
    head.init.emplace("pooler.dense.bias", zeros(H));
  }
  head.init.emplace("classifier.weight", drawn({head.labels, H}, 0.02, rng));
  head.init.emplace("classifier.bias", zeros(head.labels));
  return head;
}

Graph classification_graph(const Graph& main, const ClassifierHead& head, int64_t batch,
                           int64_t seq, const std::string& model, bool with_loss) {
  Bindings bind;
  const ValueId ids = *main.find_value("input_ids");
  const Shape& s = main.type(ids).shape;
  for (size_t d = 0; d < 2 && d < s.size(); ++d) {
    const int64_t want = d == 0 ? batch : seq;
    if (!s[d].is_static())
      bind[s[d].sym] = want;
    else if (s[d].value != want)
      throw_user_error(
          fmt::format("--task sequence-classification: input_ids of {} is {}, the data "
                      "gives [{}, {}]",
                      model, main.type(ids).str(), batch, seq));
  }
  Graph g = specialize(main, bind);
  GraphBuilder b(g);
  b.set_loc("classification head");
  ValueId logits;
  if (head.in_graph) {
    logits = *g.find_value("logits");
  } else {
    const ValueId h = *g.find_value("last_hidden_state");
    const std::string p = head.pooler_prefix;
    Tensor zero(DType::kI64, {});
    zero.as<int64_t>()[0] = 0;
    ValueId first = b.op("gather", {h, b.constant(zero)}, {{"axis", int64_t{1}}});  // [batch, H]
    ValueId pooled = b.unary(
        "tanh",
        b.op("Linear",
             {first, b.param(p + "pooler.dense.weight", head.init.at(p + "pooler.dense.weight")),
              b.param(p + "pooler.dense.bias", head.init.at(p + "pooler.dense.bias"))}));
    logits =
        b.op("Linear", {pooled, b.param("classifier.weight", head.init.at("classifier.weight")),
                        b.param("classifier.bias", head.init.at("classifier.bias"))});
  }
  if (!with_loss) {
    g.values[logits].name = "logits";
    g.outputs = {logits};
    return g;
  }
  const ValueId labels = b.input("labels", {DType::kI64, Shape{batch}});
  const ValueId loss = softmax_cross_entropy(b, logits, labels);
  g.values[loss].name = "loss";
  g.outputs = {loss};
  return g;
}

Evaluation evaluate_classifier(std::shared_ptr<Target> target, const Model& model,
                               const fs::path& folder, const ClassifierHead& head,
                               const NamedTensors& params, const std::string& eval_path,
                               int64_t batch) {
  TensorMap data = read_training_data(eval_path);
  check_labelled(model, folder, data, eval_path);
  const Tensor &ids = data.at("input_ids"), &labels = data.at("labels");
  check_labels(labels, head.labels, folder, eval_path);
  const int64_t n = ids.shape()[0], seq = ids.shape()[1];
  Session session(std::move(target));
  std::map<int64_t, CompiledModel> compiled;  // by rows: the batch, and a last partial one
  Evaluation ev;
  ev.sequences = n;
  int64_t right = 0;
  for (int64_t at = 0; at < n; at += batch) {
    const int64_t count = std::min(batch, n - at);
    auto it = compiled.find(count);
    if (it == compiled.end())
      it = compiled
               .emplace(count, session.compile(params_as_inputs(classification_graph(
                                   model.graph("main"), head, count, seq, folder.string(), false))))
               .first;
    NamedTensors in = params;
    for (const char* name : {"input_ids", "attention_mask", "token_type_ids"})
      in[name] = rows(data.at(name), at, count);
    const Tensor logits = it->second.run(in).at("logits");
    const int64_t c = logits.shape()[1];
    for (int64_t i = 0; i < count; ++i) {
      const float* z = logits.as<float>() + i * c;
      const int64_t want = labels.as<int64_t>()[at + i];
      right += std::max_element(z, z + c) - z == want;
      const double top = *std::max_element(z, z + c);
      double sum = 0;
      for (int64_t k = 0; k < c; ++k) sum += std::exp(static_cast<double>(z[k]) - top);
      ev.loss += top + std::log(sum) - z[want];
    }
  }
  if (n > 0) {
    ev.accuracy = static_cast<double>(right) / static_cast<double>(n);
    ev.loss /= static_cast<double>(n);
  }
  return ev;
}

void write_classifier_config(const fs::path& from, const fs::path& to, int64_t labels) {
  const json::Value config = json::parse(read_text(from / "config.json"));
  const json::Object* members = config.as_object();
  if (!members) throw_user_error(fmt::format("{}: config.json is not an object", from.string()));
  json::Object id2label, label2id;
  for (int64_t i = 0; i < labels; ++i) {
    id2label.emplace_back(std::to_string(i), jstring(fmt::format("LABEL_{}", i)));
    label2id.emplace_back(fmt::format("LABEL_{}", i), jint(i));
  }
  json::Object out;
  for (const json::Member& m : *members)
    if (m.first != "architectures" && m.first != "id2label" && m.first != "label2id" &&
        m.first != "num_labels")
      out.push_back(m);
  out.emplace_back("architectures",
                   json::Value{json::Array{jstring("BertForSequenceClassification")}});
  out.emplace_back("id2label", json::Value{std::move(id2label)});
  out.emplace_back("label2id", json::Value{std::move(label2id)});
  std::ofstream(to / "config.json", std::ios::binary | std::ios::trunc)
      << to_json_text(json::Value{std::move(out)}) << "\n";
}

}  // namespace rlx::cli
