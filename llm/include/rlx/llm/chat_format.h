// Conversation prompts in the formats chat models were trained on. A model's chat template is a
// Jinja program (tokenizer_config.json, GGUF's tokenizer.chat_template); rlx does not execute it
// (no maintained C++ Jinja engine is packaged, docs/decisions.md) but recognises the family by
// its markers and renders that family's format itself:
//   chatml  <|im_start|>role\ncontent<|im_end|>\n              (Qwen, many others)
//   llama3  <|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|>
//   gemma   <start_of_turn>user\ncontent<end_of_turn>\n       (the system text leads the first
//           user turn; the assistant is "model")
//   llama2  <s>[INST] <<SYS>>\nsystem\n<</SYS>>\n\nuser [/INST] answer </s>   (Llama 2, Mistral)
// Each renders the plain family format: extras a model's own template adds (a default system
// text, a date, a thinking block) are not reproduced.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlx::llm {

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

// Texts of the tokenizer's BOS and EOS tokens, which some formats spell out ("" when none).
struct ChatTokens {
  std::string bos, eos;
};

class ChatFormat {
 public:
  // An unknown name is a user error that lists the known ones.
  static ChatFormat named(std::string_view name);
  // The family whose markers `template_text` holds; nullopt when it holds none rlx knows.
  static std::optional<ChatFormat> recognise(std::string_view template_text);
  static std::vector<std::string> names();

  const std::string& name() const { return name_; }
  // The conversation so far followed by the opening of the assistant's turn, ready to encode
  // with special tokens parsed and none added.
  std::string render(const std::vector<ChatMessage>& messages, const ChatTokens& tokens) const;
  // The text of the token that closes an assistant turn.
  std::string end_of_turn(const ChatTokens& tokens) const;

 private:
  explicit ChatFormat(std::string name) : name_(std::move(name)) {}
  std::string name_;
};

}  // namespace rlx::llm
