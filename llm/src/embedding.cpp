#include "rlx/llm/embedding.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>

#include "rlx/core/error.h"

namespace rlx::llm {
namespace {

constexpr const char* kEncoderInputs[] = {"input_ids", "attention_mask", "token_type_ids"};

// Token ids may come as i32 (what many tokenizers emit); the graph takes i64.
Tensor widened_ids(const Tensor& t, const std::string& name) {
  if (t.dtype() == DType::kI64) return t;
  if (t.dtype() != DType::kI32)
    throw Error(ErrorKind::kUser, fmt::format("'{}' is {}{}, expected i64 (or i32) [batch, seq]",
                                              name, dtype_name(t.dtype()), t.shape_str()));
  Tensor out(DType::kI64, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) out.as<int64_t>()[i] = t.as<int32_t>()[i];
  return out;
}

// The encoder is compiled before the first call, so a model the target refuses fails where the
// encoder is made.
CompiledModel compile_encoder(const Model& model, std::shared_ptr<Target> target) {
  if (std::string problem = encoder_problem(model); !problem.empty())
    throw Error(ErrorKind::kUser, problem);
  Session session(std::move(target));
  return session.compile(model, "main");
}

}  // namespace

std::string encoder_problem(const Model& model) {
  auto it = model.graphs.find("main");
  if (it == model.graphs.end())
    return fmt::format("the {} model has no main graph: embedding needs an encoder (bert)",
                       model.architecture);
  for (ValueId v : it->second.outputs)
    if (it->second.values[v].name == "sentence_embedding") return {};
  return fmt::format(
      "the {} model has no sentence_embedding output: embedding needs an encoder (bert)",
      model.architecture);
}

int64_t encoder_row_limit(const Model& model) {
  int64_t limit = INT64_MAX;
  for (const char* key : {"max_position_embeddings", "max_seq_length"})
    if (auto it = model.metadata.find(key); it != model.metadata.end())
      limit = std::min<int64_t>(limit, std::stoll(it->second));
  return limit;
}

NamedTensors sentence_batch(const Tokenizer& tokenizer, const std::vector<std::string>& sentences,
                            int64_t row_limit) {
  if (sentences.empty()) throw Error(ErrorKind::kUser, "no sentences to embed");
  std::vector<std::vector<int64_t>> rows;
  size_t width = 1;
  for (const std::string& s : sentences) {
    std::vector<int64_t> ids = tokenizer.encode(s, /*add_special=*/true);
    if (static_cast<int64_t>(ids.size()) > row_limit && row_limit > 0) {
      int64_t last = ids.back();
      ids.resize(static_cast<size_t>(row_limit));
      ids.back() = last;
    }
    width = std::max(width, ids.size());
    rows.push_back(std::move(ids));
  }
  const auto b = static_cast<int64_t>(rows.size()), w = static_cast<int64_t>(width);
  const int64_t pad = std::max<int64_t>(tokenizer.spec().pad, 0);
  Tensor ids(DType::kI64, {b, w}), mask(DType::kI64, {b, w}), types(DType::kI64, {b, w});
  for (int64_t r = 0; r < b; ++r)
    for (int64_t i = 0; i < w; ++i) {
      bool real = i < static_cast<int64_t>(rows[r].size());
      ids.as<int64_t>()[r * w + i] = real ? rows[r][i] : pad;
      mask.as<int64_t>()[r * w + i] = real;
    }
  return {{"input_ids", ids}, {"attention_mask", mask}, {"token_type_ids", types}};
}

NamedTensors complete_encoder_inputs(NamedTensors inputs) {
  auto ids = inputs.find("input_ids");
  if (ids == inputs.end())
    throw Error(ErrorKind::kUser, "the encoder's inputs have no 'input_ids' (i64 [batch, seq])");
  ids->second = widened_ids(ids->second, "input_ids");
  if (ids->second.rank() != 2)
    throw Error(ErrorKind::kUser,
                fmt::format("'input_ids' is {}, expected [batch, seq]", ids->second.shape_str()));
  const std::vector<int64_t> shape = ids->second.shape();
  for (const char* name : {"attention_mask", "token_type_ids"}) {
    auto it = inputs.find(name);
    if (it == inputs.end()) {
      Tensor fill(DType::kI64, shape);
      const int64_t value = std::string_view(name) == "attention_mask" ? 1 : 0;
      for (int64_t i = 0; i < fill.numel(); ++i) fill.as<int64_t>()[i] = value;
      inputs.emplace(name, std::move(fill));
      continue;
    }
    it->second = widened_ids(it->second, name);
    if (it->second.shape() != shape)
      throw Error(ErrorKind::kUser,
                  fmt::format("'{}' is {} but input_ids is {}", name, it->second.shape_str(),
                              inputs.at("input_ids").shape_str()));
  }
  for (const auto& [name, t] : inputs)
    if (std::find(std::begin(kEncoderInputs), std::end(kEncoderInputs), name) ==
        std::end(kEncoderInputs))
      throw Error(ErrorKind::kUser,
                  fmt::format("the encoder takes input_ids, attention_mask and token_type_ids, "
                              "not '{}'",
                              name));
  return inputs;
}

SentenceEncoder::SentenceEncoder(const Model& model, std::shared_ptr<Target> target)
    : row_limit_(encoder_row_limit(model)), compiled_(compile_encoder(model, std::move(target))) {
  if (model.tokenizer) {
    tokenizer_.emplace(*model.tokenizer);
  } else if (auto it = model.metadata.find(kTokenizerProblemKey); it != model.metadata.end()) {
    tokenizer_problem_ = fmt::format("the {} model's tokenizer is not supported: {}",
                                     model.architecture, it->second);
  } else {
    tokenizer_problem_ = fmt::format(
        "the {} model has no tokenizer (no tokenizer.json or vocab.txt beside its weights); "
        "give token ids to run() instead",
        model.architecture);
  }
}

Tensor SentenceEncoder::embed(const std::vector<std::string>& sentences) {
  if (!tokenizer_) throw Error(ErrorKind::kUser, tokenizer_problem_);
  return compiled_.run(sentence_batch(*tokenizer_, sentences, row_limit_)).at("sentence_embedding");
}

NamedTensors SentenceEncoder::run(const NamedTensors& inputs) {
  return compiled_.run(complete_encoder_inputs(inputs));
}

double cosine_similarity(const float* a, const float* b, int64_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < n; ++i)
    ab += double{a[i]} * b[i], aa += double{a[i]} * a[i], bb += double{b[i]} * b[i];
  return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0;
}

}  // namespace rlx::llm
