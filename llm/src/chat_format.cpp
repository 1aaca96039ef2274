#include "rlx/llm/chat_format.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rlx/core/error.h"

namespace rlx::llm {
namespace {

// A marker each family's template spells, and the family; looked for in this order.
struct Family {
  const char* name;
  const char* marker;
};
constexpr Family kFamilies[] = {{"llama3", "<|start_header_id|>"},
                                {"chatml", "<|im_start|>"},
                                {"gemma", "<start_of_turn>"},
                                {"llama2", "[INST]"}};

// Python's str.strip() and Jinja's trim, which the templates apply to each message.
std::string trim(std::string_view s) {
  const char* space = " \t\n\r\f\v";
  size_t first = s.find_first_not_of(space);
  if (first == std::string_view::npos) return {};
  return std::string(s.substr(first, s.find_last_not_of(space) - first + 1));
}

// The system text when the first message is one, and the messages after it.
std::pair<std::string, std::vector<ChatMessage>> split_system(
    const std::vector<ChatMessage>& messages) {
  if (messages.empty() || messages[0].role != "system") return {{}, messages};
  return {messages[0].content, {messages.begin() + 1, messages.end()}};
}

std::string render_chatml(const std::vector<ChatMessage>& messages) {
  std::string out;
  for (const ChatMessage& m : messages)
    out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  return out + "<|im_start|>assistant\n";
}

std::string render_llama3(const std::vector<ChatMessage>& messages, const ChatTokens& t) {
  std::string out = t.bos;
  for (const ChatMessage& m : messages)
    out +=
        "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + trim(m.content) + "<|eot_id|>";
  return out + "<|start_header_id|>assistant<|end_header_id|>\n\n";
}

std::string render_gemma(const std::vector<ChatMessage>& messages, const ChatTokens& t) {
  auto [system, rest] = split_system(messages);
  std::string out = t.bos;
  for (size_t i = 0; i < rest.size(); ++i) {
    const ChatMessage& m = rest[i];
    std::string lead = i == 0 && !system.empty() ? system + "\n\n" : "";
    out += "<start_of_turn>" + std::string(m.role == "assistant" ? "model" : m.role) + "\n" + lead +
           trim(m.content) + "<end_of_turn>\n";
  }
  return out + "<start_of_turn>model\n";
}

std::string render_llama2(const std::vector<ChatMessage>& messages, const ChatTokens& t) {
  auto [system, rest] = split_system(messages);
  std::string out;
  for (size_t i = 0; i < rest.size(); ++i) {
    const ChatMessage& m = rest[i];
    std::string content =
        i == 0 && !system.empty() ? "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + m.content : m.content;
    if (m.role == "assistant")
      out += " " + trim(content) + " " + t.eos;
    else
      out += t.bos + "[INST] " + trim(content) + " [/INST]";
  }
  return out;
}

}  // namespace

std::vector<std::string> ChatFormat::names() {
  std::vector<std::string> out;
  for (const Family& f : kFamilies) out.emplace_back(f.name);
  return out;
}

ChatFormat ChatFormat::named(std::string_view name) {
  for (const Family& f : kFamilies)
    if (name == f.name) return ChatFormat(f.name);
  throw_user_error(
      fmt::format("unknown chat format '{}': rlx renders {}", name, fmt::join(names(), ", ")));
}

std::optional<ChatFormat> ChatFormat::recognise(std::string_view template_text) {
  for (const Family& f : kFamilies)
    if (template_text.find(f.marker) != std::string_view::npos) return ChatFormat(f.name);
  return std::nullopt;
}

std::string ChatFormat::render(const std::vector<ChatMessage>& messages,
                               const ChatTokens& tokens) const {
  if (name_ == "chatml") return render_chatml(messages);
  if (name_ == "llama3") return render_llama3(messages, tokens);
  if (name_ == "gemma") return render_gemma(messages, tokens);
  return render_llama2(messages, tokens);
}

std::string ChatFormat::end_of_turn(const ChatTokens& tokens) const {
  if (name_ == "chatml") return "<|im_end|>";
  if (name_ == "llama3") return "<|eot_id|>";
  if (name_ == "gemma") return "<end_of_turn>";
  return tokens.eos;
}

}  // namespace rlx::llm
