// `rlx chat MODEL`: a conversation on stdin and stdout. Each line read is a user turn; the whole
// conversation is rendered in the model's chat format (rlx/llm/chat_format.h) and the reply is
// streamed until the format's end-of-turn token.
//
// Context between turns: every turn prefills the whole rendered conversation again. The chat
// formats do make the new prompt an extension of the old one (the reply and the next user turn
// are appended), so the KV cache of the last turn could be kept and only the new tokens run;
// llm::Decoder sizes its cache per run (prompt + max new tokens) and has no call that extends
// one, so that reuse waits for such a call. A conversation that outgrows the model's context is
// an error that says so, and a reply that would cross it is cut short with a notice.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <optional>

#include "commands.h"
#include "decoder_setup.h"
#include "errors.h"
#include "json_out.h"
#include "model.h"
#include "options.h"
#include "rlx/core/error.h"
#include "rlx/llm/chat_format.h"
#include "rlx/llm/decoding.h"
#include "rlx/llm/text_stream.h"
#include "sampling_flags.h"
#include "stderr_status.h"

namespace rlx::cli {
namespace {

constexpr const char* kTemplateKey = "tokenizer.chat_template";

struct ChatOptions {
  std::string model, target;
  std::optional<std::string> system, format;
  int64_t max_new_tokens = 512;
  bool json = false, q8_activations = false;
  PrecisionOptions precision;
  std::optional<DType> kv_cache;
  SamplingFlags sampling;
};

void declare_chat_options(CLI::App& app, ChatOptions& o) {
  add_model_argument(app, o.model);
  add_target_option(app, o.target, "run on");
  add_value(app, "--system", "TEXT", o.system, "the system message that opens the conversation");
  add_value(app, "--chat-format", "NAME", o.format,
            "render the conversation as NAME (" +
                fmt::format("{}", fmt::join(llm::ChatFormat::names(), ", ")) +
                ") instead of the format the model's chat template is recognised as");
  add_integer(app, "-n,--max-new-tokens", "N", 1, o.max_new_tokens,
              "how many tokens a reply may have at most (default 512)");
  add_q8_activations_flag(app, o.q8_activations);
  add_precision_option(app, o.precision);
  add_kv_cache_option(app, o.kv_cache);
  add_sampling_flags(app, o.sampling);
  add_flag(app, "--json", o.json,
           "print the transcript as JSON lines: {\"role\", \"content\"} per message, the "
           "assistant's with \"tokens\" and \"finish_reason\"");
}

// The format --chat-format names, checked before the model is read.
std::optional<llm::ChatFormat> named_format(const ChatOptions& o) {
  if (!o.format) return std::nullopt;
  try {
    return llm::ChatFormat::named(*o.format);
  } catch (const Error& e) {
    throw UsageError(fmt::format("--chat-format: {}", e.what()), usage_hint("chat"));
  }
}

// The format the model's chat template is written in, unless --chat-format gave one.
llm::ChatFormat chat_format(const Model& model, std::optional<llm::ChatFormat> given) {
  if (given) return *given;
  const std::string names = fmt::format("{}", fmt::join(llm::ChatFormat::names(), ", "));
  auto it = model.metadata.find(kTemplateKey);
  if (it == model.metadata.end() || it->second.empty())
    throw CliError(
        fmt::format("the {} model has no chat template (tokenizer_config.json's chat_template, "
                    "chat_template.jinja or GGUF's tokenizer.chat_template), so rlx cannot tell "
                    "how its conversations are written",
                    model.architecture),
        fmt::format("give the format it was trained on: --chat-format NAME ({})", names));
  if (auto format = llm::ChatFormat::recognise(it->second)) return *format;
  throw CliError(
      fmt::format("the model's chat template is not one rlx recognises: rlx renders the {} "
                  "formats itself (it does not run Jinja templates) and found none of their "
                  "markers in the template",
                  names),
      "if the model follows one of them, give it: --chat-format NAME");
}

std::string token_text(const Tokenizer& tokenizer, int64_t id) {
  const TokenizerSpec& s = tokenizer.spec();
  return id >= 0 && id < static_cast<int64_t>(s.tokens.size()) ? s.tokens[id] : std::string();
}

json::Value message_json(const llm::ChatMessage& m) {
  return json::Value{json::Object{{"role", jstring(m.role)}, {"content", jstring(m.content)}}};
}

void print_line(const json::Value& v) {
  std::fputs((to_json_line(v) + "\n").c_str(), stdout);
  std::fflush(stdout);
}

int chat_main(const ChatOptions& o, const GlobalOptions& global) {
  llm::DecodeOptions options;
  options.sampling = sampling_options(o.sampling);
  const std::optional<llm::ChatFormat> given = named_format(o);
  const registry::Registry& reg = plugin_registry(global, /*build_legality=*/false);
  std::shared_ptr<Target> target = choose_target(reg, o.target);
  require_can_execute(*target, o.target, o.model);
  Model model = load_model(reg, o.model);
  if (o.q8_activations) use_q8_activations(model, o.model);
  use_precision(model, o.precision, o.model);
  if (o.kv_cache && model.graphs.count("decode"))
    use_kv_cache(model, "decode", *o.kv_cache, o.model);
  if (!model.tokenizer)
    throw CliError(fmt::format("chat needs the model's tokenizer, and the {} model has none "
                               "(no tokenizer.json beside its weights, or one rlx does not read)",
                               model.architecture),
                   "use a model folder or GGUF file that carries its tokenizer");
  const Tokenizer tokenizer(*model.tokenizer);
  const llm::ChatFormat format = chat_format(model, given);
  const llm::ChatTokens special{token_text(tokenizer, tokenizer.spec().bos),
                                token_text(tokenizer, tokenizer.spec().eos)};
  const std::string end_text = format.end_of_turn(special);
  std::optional<int64_t> end_of_turn = tokenizer.token_id(end_text);
  if (end_text.empty() || !end_of_turn)
    throw CliError(fmt::format("the {} chat format ends a turn with '{}', and the tokenizer has "
                               "no such token",
                               format.name(), end_text),
                   "give the format the model was trained on: --chat-format NAME");
  options.stop_ids = llm::end_of_text_ids(model);
  options.stop_ids.insert(*end_of_turn);

  llm::Decoder decoder(model, target);
  warn_if_context_unknown(decoder);
  const int64_t context = decoder.context();
  std::vector<llm::ChatMessage> messages;
  if (o.system) {
    messages.push_back({"system", *o.system});
    if (o.json) print_line(message_json(messages.back()));
  }
  const bool person = isatty(STDIN_FILENO) != 0;
  const bool flush = o.json || isatty(STDOUT_FILENO) != 0;
  // The terminal holds the conversation (the "> " prompt, replies mid-line): a progress line's
  // "\r" would erase them, so none is drawn while chatting.
  std::optional<ProgressHold> hold;
  if (!o.json) hold.emplace();
  for (std::string line;;) {
    if (person) {
      std::fputs("> ", stdout);
      std::fflush(stdout);
    }
    if (!std::getline(std::cin, line)) break;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line == "/exit") break;
    if (line.empty()) continue;
    messages.push_back({"user", line});
    if (o.json) print_line(message_json(messages.back()));
    const std::vector<int64_t> prompt =
        tokenizer.encode(format.render(messages, special), /*add_special=*/false);
    const auto n = static_cast<int64_t>(prompt.size());
    options.max_new_tokens = o.max_new_tokens;
    if (context > 0 && n >= context)
      throw CliError(fmt::format("the conversation has grown to {} tokens, and the model takes "
                                 "{} positions (max_position_embeddings): no room for a reply",
                                 n, context),
                     "start a new chat; shorter turns or a shorter --system last longer");
    if (context > 0 && n + options.max_new_tokens > context) {
      options.max_new_tokens = context - n;
      print_warning(
          fmt::format("the conversation has {} tokens of the model's {} positions: "
                      "this reply can have at most {}",
                      n, context, options.max_new_tokens));
    }
    llm::TextStream text(tokenizer);
    options.on_token = [&](int64_t, int64_t token) {
      std::string piece = text.add(token);
      if (!o.json) {
        std::fputs(piece.c_str(), stdout);
        if (flush) std::fflush(stdout);
      }
    };
    llm::DecodeResult r = decoder.run(Tensor::from<int64_t>(DType::kI64, {1, n}, prompt), options);
    std::string rest = text.finish();
    messages.push_back({"assistant", text.text()});
    if (o.json) {
      print_line(json::Value{
          json::Object{{"role", jstring("assistant")},
                       {"content", jstring(text.text())},
                       {"tokens", jint(static_cast<int64_t>(r.tokens.at(0).size()))},
                       {"finish_reason", jstring(finish_reason(r.stop_reasons.at(0)))}}});
    } else {
      std::fputs((rest + "\n").c_str(), stdout);
      std::fflush(stdout);
    }
  }
  if (person) std::fputs("\n", stdout);
  return 0;
}

}  // namespace

Command chat_command() {
  return make_command<ChatOptions>(
      {"chat", "an interactive conversation with a decoder model, in its chat format",
       "MODEL --target T [--system TEXT] [--chat-format NAME] [--max-new-tokens N] "
       "[--temperature T [--top-k K] [--top-p P] [--seed S]] [--repetition-penalty R] "
       "[--kv-cache f32|f16|bf16] [--json]",
       "Reads one user turn per line from stdin (a \"> \" prompt when stdin is a terminal;\n"
       "end of input or /exit ends the chat), renders the conversation in the model's chat\n"
       "format and streams the reply until the format's end-of-turn token, an end-of-sequence\n"
       "token, or N tokens. The format comes from the model's chat template, recognised by its\n"
       "markers as chatml, llama3, gemma or llama2 (rlx renders these itself and does not run\n"
       "the Jinja template); --chat-format NAME picks one for a model without a template or\n"
       "with one rlx does not recognise. Each turn prefills the whole conversation again; a\n"
       "conversation longer than the model's context is an error. The sampling flags work as\n"
       "in `rlx generate`. --json prints each message as one JSON line instead."},
      &declare_chat_options, &chat_main);
}

}  // namespace rlx::cli
