// `rlx embed MODEL --target T --inputs IN.safetensors --output OUT.safetensors`: an encoder's
// sentence embeddings and token states. Missing attention_mask and token_type_ids default to
// all ones and all zeros, as Hugging Face tokenizers produce them for unpadded single segments.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "commands.h"
#include "errors.h"
#include "json_out.h"
#include "model.h"
#include "options.h"
#include "rlx/core/error.h"
#include "rlx/core/runtime.h"
#include "rlx/core/safetensors.h"
#include "rlx/llm/embedding.h"
#include "text_input.h"

namespace rlx::cli {
namespace {

namespace fs = std::filesystem;

// The user's safetensors file, completed by the library (defaults, i32 widened); its problems
// are reported with the file's name.
NamedTensors read_encoder_inputs(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw CliError(fmt::format("inputs file '{}' does not exist", path),
                   "give a safetensors file holding input_ids (and optionally attention_mask, "
                   "token_type_ids)");
  TensorMap file = read_safetensors(path);
  NamedTensors given(file.begin(), file.end());
  try {
    return llm::complete_encoder_inputs(std::move(given));
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kUser) throw;
    throw CliError(fmt::format("{}: {}", path, e.what()),
                   "write input_ids, i64 [batch, seq] (and optionally attention_mask, "
                   "token_type_ids of the same shape); rlx embed reads no other tensor");
  }
}

void check_encoder(const Model& model, const std::string& path) {
  if (std::string problem = llm::encoder_problem(model); !problem.empty())
    throw CliError(fmt::format("{}: {}", path, problem),
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
  PrecisionOptions precision;
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
  add_precision_option(app, o.precision);
}

// Pairs of sentences at most this many are listed with their cosine similarity; more is a job for
// --output.
constexpr int64_t kMaxListed = 16;

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
      out += fmt::format("  {:7.4f}  {} ~ {}\n",
                         llm::cosine_similarity(e + i * width, e + j * width, width), label(i),
                         label(j));
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
    std::vector<std::string> lines = read_lines(*o.text_file, "--text-file");
    sentences.insert(sentences.end(), lines.begin(), lines.end());
  }
  const registry::Registry& reg = plugin_registry(global, /*build_legality=*/false);
  std::shared_ptr<Target> target = choose_target(reg, o.target);
  const std::string target_name = target->name();  // --target auto names one
  require_can_execute(*target, target_name, model_path);
  Model model = load_model(reg, model_path);
  check_encoder(model, model_path);
  use_precision(model, o.precision, model_path);
  // Tokenizer problems are named before the model compiles.
  std::optional<Tokenizer> tokenizer;
  if (from_text) tokenizer = model_tokenizer(model, "text", "--inputs IN.safetensors");
  NamedTensors inputs =
      from_text ? llm::sentence_batch(*tokenizer, sentences, llm::encoder_row_limit(model))
                : read_encoder_inputs(*o.inputs);

  llm::SentenceEncoder encoder(model, target);
  NamedTensors out = encoder.run(inputs);
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
