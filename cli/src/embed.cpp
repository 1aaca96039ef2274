// `rlx embed MODEL --target T --inputs IN.safetensors --output OUT.safetensors`: an encoder's
// sentence embeddings and token states. Missing attention_mask and token_type_ids default to
// all ones and all zeros, as Hugging Face tokenizers produce them for unpadded single segments.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "commands.h"
#include "errors.h"
#include "json_out.h"
#include "model.h"
#include "options.h"
#include "rlx/core/runtime.h"
#include "rlx/core/safetensors.h"
#include "text_input.h"

namespace rlx::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kInputs[] = {"input_ids", "attention_mask", "token_type_ids"};

// Token ids may come as i32 (what many tokenizers emit); the graph takes i64.
Tensor as_i64(const Tensor& t, const std::string& name, const std::string& path) {
  if (t.dtype() == DType::kI64) return t;
  if (t.dtype() != DType::kI32)
    throw CliError(fmt::format("{}: '{}' is {}{}, expected i64 (or i32) [batch, seq]", path, name,
                               dtype_name(t.dtype()), t.shape_str()));
  Tensor out(DType::kI64, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) out.as<int64_t>()[i] = t.as<int32_t>()[i];
  return out;
}

NamedTensors read_encoder_inputs(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw CliError(fmt::format("inputs file '{}' does not exist", path),
                   "give a safetensors file holding input_ids (and optionally attention_mask, "
                   "token_type_ids)");
  TensorMap file = read_safetensors(path);
  for (const auto& [name, t] : file)
    if (std::find(std::begin(kInputs), std::end(kInputs), name) == std::end(kInputs))
      throw CliError(fmt::format("{} holds tensor '{}'; rlx embed reads input_ids, "
                                 "attention_mask and token_type_ids",
                                 path, name),
                     "remove it from the --inputs file");
  auto ids = file.find("input_ids");
  if (ids == file.end())
    throw CliError(fmt::format("{} has no 'input_ids' tensor", path),
                   "write the token ids as input_ids, i64 [batch, seq]");
  NamedTensors in;
  in["input_ids"] = as_i64(ids->second, "input_ids", path);
  if (in["input_ids"].rank() != 2)
    throw CliError(fmt::format("{}: 'input_ids' is {}, expected [batch, seq]", path,
                               in["input_ids"].shape_str()));
  const auto& shape = in["input_ids"].shape();
  for (const char* name : {"attention_mask", "token_type_ids"}) {
    auto it = file.find(name);
    if (it == file.end()) {
      Tensor fill(DType::kI64, shape);
      if (std::string(name) == "attention_mask")
        for (int64_t i = 0; i < fill.numel(); ++i) fill.as<int64_t>()[i] = 1;
      in[name] = fill;
      continue;
    }
    in[name] = as_i64(it->second, name, path);
    if (in[name].shape() != shape)
      throw CliError(fmt::format("{}: '{}' is {} but input_ids is {}", path, name,
                                 in[name].shape_str(), in["input_ids"].shape_str()));
  }
  return in;
}

std::vector<std::string> read_lines(const std::string& path) {
  constexpr const char* kHint = "give a text file holding one sentence per line";
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw CliError(fmt::format("--text-file {} does not exist", path), kHint);
  if (fs::is_directory(path, ec))
    throw CliError(fmt::format("--text-file {} is a folder, not a file", path), kHint);
  errno = 0;
  std::ifstream f(path);
  if (!f)
    throw CliError(fmt::format("cannot read --text-file {}: {}", path,
                               errno ? std::strerror(errno) : "it cannot be opened"),
                   kHint);
  std::vector<std::string> lines;
  for (std::string line; std::getline(f, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(line);
  }
  if (lines.empty())
    throw CliError(fmt::format("--text-file {} has no non-empty line", path), kHint);
  return lines;
}

// [CLS] sentence [SEP] per row, padded to the longest row with the pad id and masked out, cut to
// the model's position limit or sentence-transformers' max_seq_length when the folder has one
// (keeping the final [SEP]) as sentence-transformers truncates.
NamedTensors tokenize_batch(const Model& model, const std::vector<std::string>& sentences) {
  Tokenizer tok = model_tokenizer(model, "text", "--inputs IN.safetensors");
  int64_t limit = INT64_MAX;
  for (const char* key : {"max_position_embeddings", "max_seq_length"})
    if (auto it = model.metadata.find(key); it != model.metadata.end())
      limit = std::min<int64_t>(limit, std::stoll(it->second));
  std::vector<std::vector<int64_t>> rows;
  size_t width = 1;
  for (const std::string& s : sentences) {
    std::vector<int64_t> ids = tok.encode(s, /*add_special=*/true);
    if (static_cast<int64_t>(ids.size()) > limit) {
      int64_t last = ids.back();
      ids.resize(static_cast<size_t>(limit));
      ids.back() = last;
    }
    width = std::max(width, ids.size());
    rows.push_back(std::move(ids));
  }
  const auto b = static_cast<int64_t>(rows.size()), w = static_cast<int64_t>(width);
  const int64_t pad = std::max<int64_t>(tok.spec().pad, 0);
  Tensor ids(DType::kI64, {b, w}), mask(DType::kI64, {b, w}), types(DType::kI64, {b, w});
  for (int64_t r = 0; r < b; ++r)
    for (int64_t i = 0; i < w; ++i) {
      bool real = i < static_cast<int64_t>(rows[r].size());
      ids.as<int64_t>()[r * w + i] = real ? rows[r][i] : pad;
      mask.as<int64_t>()[r * w + i] = real;
    }
  return {{"input_ids", ids}, {"attention_mask", mask}, {"token_type_ids", types}};
}

void check_encoder(const Model& model, const std::string& path) {
  auto it = model.graphs.find("main");
  bool ok = it != model.graphs.end();
  if (ok) {
    bool has_embedding = false;
    for (ValueId v : it->second.outputs)
      has_embedding = has_embedding || it->second.values[v].name == "sentence_embedding";
    ok = has_embedding;
  }
  if (!ok)
    throw CliError(fmt::format("{} is a {} model without a sentence_embedding output: rlx embed "
                               "needs an encoder (bert)",
                               path, model.architecture),
                   "use `rlx generate` for decoders, `rlx run` for other models");
}

json::Value jfloat(float x) {
  return json::Value{json::Number{x, fmt::format("{}", x)}};
}

struct EmbedOptions {
  std::string model, target;
  std::optional<std::string> inputs, output, text_file;
  std::vector<std::string> text;
  bool json = false;
};

void declare_embed_options(CLI::App& app, EmbedOptions& o) {
  add_model_argument(app, o.model);
  add_target_option(app, o.target, "run on");
  add_value(app, "-i,--inputs", "IN.safetensors", o.inputs,
            "input_ids [, attention_mask, token_type_ids]");
  add_value(app, "-o,--output", "OUT.safetensors", o.output,
            "where to write sentence_embedding and last_hidden_state (without it and --json: the "
            "pairwise cosine similarities are printed)");
  add_repeatable(app, "--text", "TEXT", o.text, "a sentence to embed instead of --inputs");
  add_value(app, "--text-file", "FILE", o.text_file, "sentences to embed, one per line");
  add_flag(app, "--json", o.json,
           "print {\"sentence_embedding\": [[...], ...], \"output\": PATH | null}");
}

// Pairs of sentences at most this many are listed with their cosine similarity; more is a job for
// --output.
constexpr int64_t kMaxListed = 16;

double cosine(const float* a, const float* b, int64_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < n; ++i)
    ab += double{a[i]} * b[i], aa += double{a[i]} * a[i], bb += double{b[i]} * b[i];
  return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0;
}

// What `rlx embed` prints without --output or --json: the embeddings' count and width, and the
// cosine similarity of every pair (of the texts when they came from --text).
std::string similarity_text(const Tensor& emb, const std::vector<std::string>& texts) {
  const int64_t rows = emb.shape()[0], width = emb.shape()[1];
  std::string out =
      fmt::format("{} embedding{} of {} dimensions\n", rows, rows == 1 ? "" : "s", width);
  if (rows < 2) return out;
  if (rows > kMaxListed)
    return out + fmt::format(
                     "(cosine similarities are listed for up to {} texts; write them all "
                     "with --output OUT.safetensors or --json)\n",
                     kMaxListed);
  auto label = [&](int64_t r) {
    return r < static_cast<int64_t>(texts.size()) ? json::json_quote(texts[static_cast<size_t>(r)])
                                                  : fmt::format("[{}]", r);
  };
  out += "cosine similarity:\n";
  const float* e = emb.as<float>();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = i + 1; j < rows; ++j)
      out += fmt::format("  {:7.4f}  {} ~ {}\n", cosine(e + i * width, e + j * width, width),
                         label(i), label(j));
  return out;
}

int embed_main(const EmbedOptions& o, const GlobalOptions& global) {
  const std::string& model_path = o.model;
  const std::optional<std::string>& output = o.output;
  const bool from_text = !o.text.empty() || o.text_file;
  if (from_text == o.inputs.has_value())
    throw UsageError("give either --inputs IN.safetensors or --text/--text-file",
                     usage_hint("embed"));
  // The text is read before the model, so a wrong path is reported at once.
  std::vector<std::string> sentences = o.text;
  if (o.text_file) {
    std::vector<std::string> lines = read_lines(*o.text_file);
    sentences.insert(sentences.end(), lines.begin(), lines.end());
  }
  const registry::Registry& reg = plugin_registry(global, /*build_legality=*/false);
  std::shared_ptr<Target> target = choose_target(reg, o.target);
  const std::string target_name = target->name();  // --target auto names one
  require_can_execute(*target, target_name, model_path);
  Model model = load_model(reg, model_path);
  check_encoder(model, model_path);
  NamedTensors inputs =
      from_text ? tokenize_batch(model, sentences) : read_encoder_inputs(*o.inputs);

  Session session(target);
  CompiledModel compiled = session.compile(model, "main");
  NamedTensors out = compiled.run(inputs);
  TensorMap written{{"sentence_embedding", out.at("sentence_embedding")},
                    {"last_hidden_state", out.at("last_hidden_state")}};
  if (output) {
    fs::path p = *output;
    std::error_code ec;
    if (p.has_parent_path() && !fs::is_directory(p.parent_path(), ec))
      throw CliError(fmt::format("cannot write {}: folder {} does not exist", p.string(),
                                 p.parent_path().string()),
                     "create the folder first, or choose another --output");
    write_safetensors(p, written);
  }
  const Tensor& emb = written.at("sentence_embedding");
  if (o.json) {
    json::Array rows;
    const int64_t width = emb.shape()[1];
    for (int64_t r = 0; r < emb.shape()[0]; ++r) {
      json::Array row;
      for (int64_t i = 0; i < width; ++i) row.push_back(jfloat(emb.as<float>()[r * width + i]));
      rows.push_back(json::Value{std::move(row)});
    }
    json::Object o{{"sentence_embedding", json::Value{std::move(rows)}}};
    o.emplace_back("output", output ? jstring(*output) : jnull());
    std::fputs((to_json_text(json::Value{std::move(o)}) + "\n").c_str(), stdout);
  } else if (output) {
    std::string text;
    for (const auto& [name, t] : written)
      text += fmt::format("  {} {}{}\n", name, dtype_name(t.dtype()), t.shape_str());
    std::fputs(fmt::format("wrote {}:\n{}", *output, text).c_str(), stdout);
  } else {
    std::fputs(similarity_text(emb, sentences).c_str(), stdout);
  }
  return 0;
}

}  // namespace

Command embed_command() {
  return make_command<EmbedOptions>(
      {"embed", "sentence embeddings of an encoder model (bert)",
       "MODEL --target T (--inputs IN.safetensors | --text TEXT... | --text-file FILE)\n"
       "       [--output OUT.safetensors] [--json]",
       "Runs an encoder on token ids. IN.safetensors holds input_ids [batch, seq] (i64 or i32)\n"
       "and optionally attention_mask (default all ones) and token_type_ids (default zeros).\n"
       "OUT.safetensors receives sentence_embedding f32[batch, hidden] (mean pooling over the\n"
       "unmasked tokens, then L2 normalisation) and last_hidden_state f32[batch, seq, hidden].\n"
       "--text / --text-file tokenize sentences with the model's tokenizer (vocab.txt or\n"
       "tokenizer.json) instead: one row per sentence, padded to the longest."},
      &declare_embed_options, &embed_main);
}

}  // namespace rlx::cli
