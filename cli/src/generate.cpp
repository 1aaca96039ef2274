// `rlx generate MODEL --target T --prompt-ids 1,2,3 --max-new-tokens N`: greedy decoding with the
// model's KV-cache graphs (prefill once, then one decode step per token).
#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <optional>

#include "commands.h"
#include "errors.h"
#include "json_out.h"
#include "model.h"
#include "options.h"
#include "rlx/llm/decoding.h"
#include "text_input.h"

namespace rlx::cli {
namespace {

std::vector<int64_t> parse_ids(const std::string& text, const std::string& option) {
  std::vector<int64_t> ids;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = std::min(text.find(',', start), text.size());
    std::string item = text.substr(start, end - start);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    int64_t v = -1;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || p != item.data() + item.size() || v < 0)
      throw UsageError(fmt::format("--{}: '{}' is not a token id (a non-negative integer); "
                                   "expected a comma-separated list such as 1,2,3",
                                   option, item),
                       usage_hint("generate"));
    ids.push_back(v);
    start = end + 1;
  }
  return ids;
}

std::set<int64_t> stop_ids(const Model& model) {
  std::set<int64_t> ids;
  auto it = model.metadata.find("eos_token_ids");
  if (it == model.metadata.end() || it->second.empty()) return ids;
  for (int64_t id : parse_ids(it->second, "eos_token_ids")) ids.insert(id);
  return ids;
}

// Byte-level tokens can end inside a UTF-8 sequence; like transformers' decode (errors =
// "replace"), each invalid byte becomes U+FFFD so the text (and the JSON holding it) is valid.
std::string replace_invalid_utf8(std::string text) {
  std::string out;
  std::string_view rest = text;
  while (auto bad = json::utf8_error_offset(rest)) {
    out.append(rest.substr(0, *bad));
    out += "\xEF\xBF\xBD";
    rest.remove_prefix(*bad + 1);
  }
  out.append(rest);
  return out;
}

struct GenerateOptions {
  std::string model, target;
  std::optional<std::string> prompt_ids, prompt;
  int64_t max_new_tokens = 32;
  bool ignore_eos = false, json = false, q8_activations = false;
  std::optional<DType> kv_cache;
};

void declare_generate_options(CLI::App& app, GenerateOptions& o) {
  add_model_argument(app, o.model);
  add_target_option(app, o.target, "run on");
  add_value(app, "-p,--prompt-ids", "IDS", o.prompt_ids,
            "the prompt as comma-separated token ids: 1,2,3");
  add_value(app, "--prompt", "TEXT", o.prompt,
            "the prompt as text, tokenized with the model's tokenizer");
  add_integer(app, "-n,--max-new-tokens", "N", 0, o.max_new_tokens,
              "how many tokens to generate at most (default 32)");
  add_flag(app, "--ignore-eos", o.ignore_eos, "keep generating after an end-of-sequence token");
  add_q8_activations_flag(app, o.q8_activations);
  add_kv_cache_option(app, o.kv_cache);
  add_flag(app, "--json", o.json,
           "print {\"tokens\": [generated ids], \"kv_cache\": {dtype, bytes, capacity}} (and "
           "\"text\" with --prompt)");
}

int generate_main(const GenerateOptions& o, const GlobalOptions& global) {
  const std::string& model_path = o.model;
  const std::string& target_name = o.target;
  // The command line is checked before the model is read.
  if (o.prompt && o.prompt_ids)
    throw UsageError("give either --prompt or --prompt-ids, not both", usage_hint("generate"));
  if (!o.prompt && !o.prompt_ids)
    throw UsageError("give the prompt: --prompt-ids 1,2,3 or --prompt TEXT",
                     usage_hint("generate"));
  if (o.prompt && o.prompt->empty())
    throw UsageError("--prompt is empty: give the text to continue", usage_hint("generate"));
  std::vector<int64_t> prompt;
  if (o.prompt_ids) prompt = parse_ids(*o.prompt_ids, "prompt-ids");
  const registry::Registry& reg = plugin_registry(global, /*build_legality=*/false);
  std::shared_ptr<Target> target = choose_target(reg, target_name);
  require_can_execute(*target, target_name, model_path);
  Model model = load_model(reg, model_path);
  if (o.q8_activations) use_q8_activations(model, model_path);
  // Without a decode graph the decoder below says what generation needs.
  if (o.kv_cache && model.graphs.count("decode"))
    use_kv_cache(model, "decode", *o.kv_cache, model_path);
  std::optional<Tokenizer> tokenizer;
  if (o.prompt) {
    tokenizer = model_tokenizer(model, "prompt", "--prompt-ids 1,2,3");
    prompt = tokenizer->encode(*o.prompt, /*add_special=*/true);
    if (prompt.empty())
      throw CliError("--prompt: the text gives no tokens", "give a non-empty prompt");
  }

  // Token ids are checked against the vocabulary where every input is (the model's input
  // limits, when it runs); the length is checked here to name the flag.
  llm::Decoder decoder(model, target);
  auto n = static_cast<int64_t>(prompt.size());
  if (const int64_t context = decoder.context(); context > n && o.max_new_tokens > context - n)
    throw CliError(fmt::format("-n/--max-new-tokens {}: the prompt's {} tokens and {} new ones "
                               "exceed the model's context of {} positions "
                               "(max_position_embeddings)",
                               o.max_new_tokens, n, o.max_new_tokens, context),
                   fmt::format("give -n {} or less, or a shorter prompt", context - n));
  llm::DecodeOptions options;
  options.max_new_tokens = o.max_new_tokens;
  if (!o.ignore_eos) options.stop_ids = stop_ids(model);
  llm::DecodeResult r = decoder.run(Tensor::from<int64_t>(DType::kI64, {1, n}, prompt), options);
  const std::vector<int64_t>& tokens = r.tokens.at(0);

  // Text in, text out: with --prompt the continuation is printed as text.
  std::optional<std::string> text;
  if (tokenizer) text = replace_invalid_utf8(tokenizer->decode(tokens));
  if (o.json) {
    json::Array ids;
    for (int64_t t : tokens) ids.push_back(jint(t));
    json::Object cache{{"dtype", jstring(std::string(dtype_name(r.cache_dtype)))},
                       {"bytes", jint(r.cache_bytes)},
                       {"capacity", jint(r.cache_capacity)}};
    json::Object o{{"tokens", json::Value{std::move(ids)}},
                   {"kv_cache", json::Value{std::move(cache)}}};
    if (text) o.emplace_back("text", jstring(*text));
    std::fputs((to_json_text(json::Value{std::move(o)}) + "\n").c_str(), stdout);
  } else if (text) {
    std::fputs((*text + "\n").c_str(), stdout);
  } else {
    std::string line;
    for (int64_t t : tokens) line += (line.empty() ? "" : " ") + std::to_string(t);
    std::fputs((line + "\n").c_str(), stdout);
  }
  if (global.verbose)
    std::fputs(fmt::format("rlx: {} prompt tokens, {} generated; prefill {:.1f} ms, first decode "
                           "step {:.1f} ms (specialised to the KV cache capacity {}), {} more "
                           "steps {:.1f} ms ({:.2f} ms/token); KV cache {} ({:.2f} MB)\n",
                           n, tokens.size(), 1e3 * r.prefill_seconds, 1e3 * r.first_step_seconds,
                           r.cache_capacity, r.decode_steps, 1e3 * r.decode_seconds,
                           r.decode_steps ? 1e3 * r.decode_seconds / r.decode_steps : 0.0,
                           dtype_name(r.cache_dtype), static_cast<double>(r.cache_bytes) / 1e6)
                   .c_str(),
               stderr);
  return 0;
}

}  // namespace

Command generate_command() {
  return make_command<GenerateOptions>(
      {"generate", "greedy text generation with a decoder model (qwen3, llama, gemma3)",
       "MODEL --target T (--prompt-ids 1,2,3 | --prompt TEXT) [--max-new-tokens N] "
       "[--ignore-eos] [--kv-cache f32|f16|bf16] [--json]",
       "Runs the model's prefill graph over the prompt, then its decode graph once per new token\n"
       "with a KV cache of fixed capacity (prompt + N), always taking the most likely token.\n"
       "Stops after N tokens, or after an end-of-sequence token of the model unless --ignore-eos;\n"
       "the prompt plus N may not exceed the model's max_position_embeddings. The cache holds\n"
       "f32 keys and values unless --kv-cache says f16 or bf16 (half the memory and reads,\n"
       "each cached value rounded: the tokens may differ from an f32 cache's).\n"
       "Prints the generated ids (not the prompt) separated by spaces, or with --prompt the\n"
       "generated text (the model's tokenizer.json or vocab.txt); -v adds timings."},
      &declare_generate_options, &generate_main);
}

}  // namespace rlx::cli
