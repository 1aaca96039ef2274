// Each chat format against the prompt its family's own template gives for the same
// conversation, written out by hand from the templates (Qwen2.5 without its default system
// text, Llama 3 without 3.1's date header, Gemma 3, Llama 2).
#include <gtest/gtest.h>

#include "rlx/core/error.h"
#include "rlx/llm/chat_format.h"

namespace rlx::llm {
namespace {

const std::vector<ChatMessage> kConversation = {
    {"system", "Be brief."}, {"user", "Hi! "}, {"assistant", "Hello."}, {"user", "2+2?"}};

std::string rendered(const char* format, const ChatTokens& tokens = {}) {
  return ChatFormat::named(format).render(kConversation, tokens);
}

TEST(ChatFormat, Chatml) {
  EXPECT_EQ(rendered("chatml"),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi! <|im_end|>\n"
            "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(ChatFormat::named("chatml").end_of_turn({}), "<|im_end|>");
}

TEST(ChatFormat, Llama3) {
  EXPECT_EQ(rendered("llama3", {"<|begin_of_text|>", "<|end_of_text|>"}),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\n2+2?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(ChatFormat::named("llama3").end_of_turn({}), "<|eot_id|>");
}

TEST(ChatFormat, GemmaPutsTheSystemTextInTheFirstUserTurn) {
  EXPECT_EQ(rendered("gemma", {"<bos>", "<eos>"}),
            "<bos><start_of_turn>user\nBe brief.\n\nHi!<end_of_turn>\n"
            "<start_of_turn>model\nHello.<end_of_turn>\n"
            "<start_of_turn>user\n2+2?<end_of_turn>\n<start_of_turn>model\n");
  EXPECT_EQ(ChatFormat::named("gemma").end_of_turn({}), "<end_of_turn>");
}

TEST(ChatFormat, Llama2ClosesAnswersWithEos) {
  EXPECT_EQ(rendered("llama2", {"<s>", "</s>"}),
            "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi! [/INST] Hello. </s>"
            "<s>[INST] 2+2? [/INST]");
  EXPECT_EQ(ChatFormat::named("llama2").end_of_turn({"<s>", "</s>"}), "</s>");
}

TEST(ChatFormat, TemplatesAreRecognisedByTheirMarkers) {
  auto name = [](const char* text) {
    auto f = ChatFormat::recognise(text);
    return f ? f->name() : std::string("none");
  };
  EXPECT_EQ(name("{{'<|im_start|>' + message['role']}}"), "chatml");
  EXPECT_EQ(name("{{ '<|start_header_id|>' + role + '<|end_header_id|>' }}"), "llama3");
  EXPECT_EQ(name("{{ '<start_of_turn>' + role }}"), "gemma");
  EXPECT_EQ(name("{{ bos_token + '[INST] ' + content }}"), "llama2");
  EXPECT_EQ(name("{{ '### User: ' + content }}"), "none");
  EXPECT_THROW(ChatFormat::named("vicuna"), Error);
}

}  // namespace
}  // namespace rlx::llm
