// `rlx generate MODEL --target T --prompt-ids 1,2,3 --max-new-tokens N`: decoding with the model's
// KV-cache graphs (prefill once, then one decode step per token), greedy or sampled, the tokens
// printed as they come.
#include <fmt/format.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <optional>
#include <utility>

#include "commands.h"
#include "decoder_setup.h"
#include "errors.h"
#include "json_out.h"
#include "model.h"
#include "options.h"
#include "ranks.h"
#include "rlx/llm/decoding.h"
#include "rlx/llm/text_stream.h"
#include "sampling_flags.h"
#include "stderr_status.h"
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

struct GenerateOptions {
  std::string model, target;
  std::optional<std::string> prompt_ids, prompt;
  int64_t max_new_tokens = 32;
  bool ignore_eos = false, json = false, q8_activations = false, stream = false;
  PrecisionOptions precision;
  std::optional<DType> kv_cache;
  SamplingFlags sampling;
  std::vector<std::string> stop;
  RankOptions ranks;
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
  add_repeatable(app, "--stop", "STR", o.stop,
                 "end when the generated text contains STR, which is not printed (with "
                 "--prompt; repeatable)");
  add_q8_activations_flag(app, o.q8_activations);
  add_precision_option(app, o.precision);
  add_kv_cache_option(app, o.kv_cache);
  add_sampling_flags(app, o.sampling);
  add_flag(app, "--stream", o.stream,
           "flush stdout after each token (the default when stdout is a terminal)");
  add_flag(app, "--json", o.json,
           "print {\"tokens\": [generated ids], \"finish_reason\", \"kv_cache\": {dtype, "
           "bytes, capacity}, \"sampling\", \"prefill_tokens_per_s\", \"decode_tokens_per_s\"} "
           "at the end (and \"text\" with --prompt)");
  add_rank_options(app, o.ranks);
}

// Prints what the loop reports as the tokens come: text with --prompt, ids otherwise; flushed
// each time when asked to, or when a person is watching.
class TokenPrinter {
 public:
  explicit TokenPrinter(bool flush) : flush_(flush) {}
  void id(int64_t token) {
    print((first_ ? "" : " ") + std::to_string(token));
    first_ = false;
  }
  void print(const std::string& piece) {
    std::fputs(piece.c_str(), stdout);
    if (flush_) std::fflush(stdout);
  }

 private:
  bool flush_, first_ = true;
};

// Tokens per second, or null when there was nothing to time.
json::Value rate(int64_t tokens, double seconds) {
  return tokens > 0 && seconds > 0 ? jnumber(static_cast<double>(tokens) / seconds) : jnull();
}

int generate_main(const GenerateOptions& o, const GlobalOptions& global) {
  const std::string& model_path = o.model;
  // The command line is checked before the model is read.
  if (o.prompt && o.prompt_ids)
    throw UsageError("give either --prompt or --prompt-ids, not both", usage_hint("generate"));
  if (!o.prompt && !o.prompt_ids)
    throw UsageError("give the prompt: --prompt-ids 1,2,3 or --prompt TEXT",
                     usage_hint("generate"));
  if (o.prompt && o.prompt->empty())
    throw UsageError("--prompt is empty: give the text to continue", usage_hint("generate"));
  llm::DecodeOptions options;
  options.sampling = sampling_options(o.sampling);
  if (!o.stop.empty() && !o.prompt)
    throw UsageError(
        "--stop looks for text, and with --prompt-ids generate prints token ids: give the "
        "prompt as --prompt TEXT",
        usage_hint("generate"));
  for (const std::string& stop : o.stop)
    if (stop.empty())
      throw UsageError("--stop is empty: it would match before any text",
                       "give the text that ends generation, such as --stop $'\\n\\n'");
  if (o.stream && o.json)
    throw UsageError(
        "--stream prints tokens as they come and --json one object at the end: "
        "give one of them",
        usage_hint("generate"));
  if (std::optional<int> code = launch_ranks(o.ranks)) return *code;
  std::vector<int64_t> prompt;
  if (o.prompt_ids) prompt = parse_ids(*o.prompt_ids, "prompt-ids");
  const registry::Registry& reg = plugin_registry(global, /*build_legality=*/false);
  std::shared_ptr<Target> target = choose_target(reg, o.target);
  const std::string target_name = target->name();  // --target auto names one
  require_can_execute(*target, target_name, model_path);
  const std::shared_ptr<Channel> channel = join_ranks(*target, o.ranks, &reg);
  Model model = load_model_shard(reg, model_path, o.ranks);
  if (o.q8_activations) use_q8_activations(model, model_path);
  use_precision(model, o.precision, model_path);
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
  warn_if_context_unknown(decoder);
  options.max_new_tokens = o.max_new_tokens;
  if (!o.ignore_eos) options.stop_ids = llm::end_of_text_ids(model);
  // With --prompt the tokens become text as they come (and --stop looks at that text); --json
  // prints once at the end, otherwise each piece goes out as soon as it is known.
  std::optional<llm::TextStream> text;
  if (tokenizer) text.emplace(*tokenizer, o.stop);
  std::optional<TokenPrinter> printer;
  if (!o.json) printer.emplace(o.stream || isatty(STDOUT_FILENO));
  // From the first token on, the line holds streamed text: no progress line over it.
  std::optional<ProgressHold> hold;
  options.on_token = [&](int64_t, int64_t token) {
    if (printer && !hold) hold.emplace();
    if (text) {
      std::string piece = text->add(token);
      if (printer) printer->print(piece);
    } else if (printer) {
      printer->id(token);
    }
  };
  if (!o.stop.empty())
    options.stop_requested = [&](int64_t) { return text->stopped().has_value(); };
  llm::DecodeResult r = decoder.run(Tensor::from<int64_t>(DType::kI64, {1, n}, prompt), options);
  const std::vector<int64_t>& tokens = r.tokens.at(0);
  std::string rest = text ? text->finish() : std::string();
  if (printer) printer->print(rest + "\n");

  // Prefill is timed with its first run's specialisation to the prompt's length. Decode's rate is
  // the steady state's (the steps after the first, which specialises the graph to the cache's
  // capacity) when there are any.
  const bool steady = r.decode_steps > 0;
  const int64_t decoded = steady ? r.decode_steps : static_cast<int64_t>(tokens.size()) - 1;
  const double decode_seconds = steady ? r.decode_seconds : r.first_step_seconds;
  json::Value prefill_rate = rate(n, r.prefill_seconds),
              decode_rate = rate(decoded, decode_seconds);
  if (o.json) {
    json::Array ids;
    for (int64_t t : tokens) ids.push_back(jint(t));
    json::Object cache{{"dtype", jstring(std::string(dtype_name(r.cache_dtype)))},
                       {"bytes", jint(r.cache_bytes)},
                       {"capacity", jint(r.cache_capacity)}};
    json::Object out{{"tokens", json::Value{std::move(ids)}},
                     {"kv_cache", json::Value{std::move(cache)}},
                     {"finish_reason", jstring(finish_reason(r.stop_reasons.at(0)))},
                     {"sampling", sampling_json(options.sampling)},
                     {"prefill_tokens_per_s", prefill_rate},
                     {"decode_tokens_per_s", decode_rate}};
    if (text) out.emplace_back("text", jstring(text->text()));
    if (text && text->stopped())
      out.emplace_back("stop_string", jstring(text->stop_strings().at(*text->stopped())));
    std::fputs((to_json_text(json::Value{std::move(out)}) + "\n").c_str(), stdout);
  } else if (!global.quiet) {
    auto per_s = [](const json::Value& v) {
      return v.is_null() ? std::string("-") : fmt::format("{:.1f}", v.as_number()->value);
    };
    std::fputs(fmt::format("rlx: prefill {} tokens/s, decode {} tokens/s ({} prompt tokens, {} "
                           "generated)\n",
                           per_s(prefill_rate), per_s(decode_rate), n, tokens.size())
                   .c_str(),
               stderr);
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
      {"generate", "text generation with a decoder model (qwen3, llama, gemma3)",
       "MODEL --target T (--prompt-ids 1,2,3 | --prompt TEXT) [--max-new-tokens N] "
       "[--temperature T [--top-k K] [--top-p P] [--seed S]] [--repetition-penalty R] "
       "[--ignore-eos] [--stop STR]... [--kv-cache f32|f16|bf16] [--stream | --json]",
       "Runs the model's prefill graph over the prompt, then its decode graph once per new token\n"
       "with a KV cache of fixed capacity (prompt + N). Takes the most likely token unless\n"
       "--temperature T > 0, which samples from softmax(logits / T), cut to the --top-k K most\n"
       "likely and then to the fewest whose probability reaches --top-p P; --seed S makes the\n"
       "draws repeatable. --repetition-penalty R (greedy or sampled) lowers the logits of tokens\n"
       "already in the prompt or the output, as transformers does.\n"
       "Stops after N tokens, or after an end-of-sequence token of the model unless --ignore-eos;\n"
       "with --prompt, also when the text contains a --stop string (cut before it; text that\n"
       "could begin one is held until it cannot). The prompt plus N may not exceed the model's\n"
       "max_position_embeddings (a model that does not state it gets a warning). The cache holds\n"
       "f32 keys and values unless --kv-cache says f16 or bf16 (half the memory and reads,\n"
       "each cached value rounded: the tokens may differ from an f32 cache's).\n"
       "Prints the generated ids (not the prompt) separated by spaces, or with --prompt the\n"
       "generated text (the model's tokenizer.json or vocab.txt), each token as it comes\n"
       "(flushed when stdout is a terminal or with --stream); then prefill and decode tokens/s\n"
       "on stderr. --json prints all at the end instead, the rates and finish_reason (eos,\n"
       "stop_string or length) included; -v adds timings."},
      &declare_generate_options, &generate_main);
}

}  // namespace rlx::cli
