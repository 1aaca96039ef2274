// `rlx chat` on qwen3-tiny with a hand-made tokenizer (tiny_tokenizer.h) and a ChatML template:
// each reply is what `rlx generate` gives for the whole conversation rendered by hand in
// ChatML, so the conversation's context is kept between turns; models without a template or
// with an unknown one are refused with the --chat-format hint.
#include "cli_fixture.h"
#include "tiny_tokenizer.h"

namespace rlx::cli {
namespace {

const fs::path kFixtures = RLX_FIXTURES_DIR;
using ChatCliTest = CliTest;

// Qwen2's template, shortened to its ChatML core (the marker is what rlx recognises).
constexpr const char* kChatmlConfig =
    R"({"chat_template": "{% for message in messages %}{{'<|im_start|>' + message['role'] + )"
    R"('\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if )"
    R"(add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"})";

std::vector<json::Value> json_lines(const std::string& out) {
  std::vector<json::Value> lines;
  size_t start = 0;
  for (size_t end; (end = out.find('\n', start)) != std::string::npos; start = end + 1)
    lines.push_back(json::parse(out.substr(start, end - start)));
  EXPECT_EQ(start, out.size()) << "output does not end with a line break";
  return lines;
}

class Chat : public ChatCliTest {
 protected:
  fs::path model(const std::string& config = kChatmlConfig) {
    return test::tiny_text_model(kFixtures, dir_ / "model", config);
  }
  // The reply `rlx generate` gives for the prompt `rendered`, cut after the end-of-turn token.
  std::string expected_reply(const fs::path& m, const std::string& rendered, int n) {
    std::string ids;
    for (int64_t id : test::encode_by_hand(rendered))
      ids += (ids.empty() ? "" : ",") + std::to_string(id);
    ProcessResult r = rlx({"generate", m.string(), "--prompt-ids", ids, "-n", std::to_string(n),
                           "--ignore-eos", "--json"});
    EXPECT_EQ(r.exit_code, 0) << dump(r);
    std::vector<int64_t> tokens;
    const json::Value doc = parse_json(r);  // named: find() points into it
    const json::Value* generated = doc.find("tokens");
    if (!generated || !generated->as_array()) {
      ADD_FAILURE() << dump(r);
      return {};
    }
    for (const json::Value& t : *generated->as_array()) {
      tokens.push_back(*t.as_number()->as_i64());
      if (tokens.back() == test::kImEnd) break;
    }
    return test::decode_by_hand(tokens);
  }
};

TEST_F(Chat, EachReplyContinuesTheWholeConversationInChatml) {
  fs::path m = model();
  ProcessResult r = rlx({"chat", m.string(), "--system", "Be brief.", "-n", "6", "--json"}, {},
                        std::string("Hello there\n\nWhat is 2+2?\n/exit\nnot read\n"));
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  std::vector<json::Value> lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 5u) << dump(r);
  const char* roles[] = {"system", "user", "assistant", "user", "assistant"};
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(str(lines[i].find("role")), roles[i]) << i;
  EXPECT_EQ(str(lines[1].find("content")), "Hello there");
  EXPECT_EQ(str(lines[3].find("content")), "What is 2+2?");

  std::string conversation =
      "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello there<|im_end|>\n"
      "<|im_start|>assistant\n";
  const std::string first = expected_reply(m, conversation, 6);
  EXPECT_EQ(str(lines[2].find("content")), first);
  conversation += first +
                  "<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
                  "<|im_start|>assistant\n";
  EXPECT_EQ(str(lines[4].find("content")), expected_reply(m, conversation, 6));
  for (size_t i : {2u, 4u}) {
    const std::string reason = str(lines[i].find("finish_reason"));
    EXPECT_TRUE(reason == "length" || reason == "eos") << reason;
  }
}

TEST_F(Chat, PlainOutputIsTheRepliesOneLineEach) {
  fs::path m = model();
  ProcessResult json = rlx({"chat", m.string(), "-n", "5", "--json"}, {}, std::string("hi\n"));
  ASSERT_EQ(json.exit_code, 0) << dump(json);
  ProcessResult plain = rlx({"chat", m.string(), "-n", "5"}, {}, std::string("hi\n"));
  ASSERT_EQ(plain.exit_code, 0) << dump(plain);
  EXPECT_EQ(plain.out, str(json_lines(json.out).at(1).find("content")) + "\n");
}

TEST_F(Chat, AModelWithoutATemplateOrWithAnUnknownOneIsToldToGiveTheFormat) {
  ProcessResult none = rlx({"chat", model("{}").string()}, {}, std::string("hi\n"));
  EXPECT_EQ(none.exit_code, 1) << dump(none);
  EXPECT_THAT(none.err, HasSubstr("has no chat template")) << dump(none);
  EXPECT_THAT(none.err, HasSubstr("--chat-format NAME (llama3, chatml, gemma, llama2)"));

  ProcessResult unknown =
      rlx({"chat", model(R"({"chat_template": "{{ '### User: ' + content }}"})").string()}, {},
          std::string("hi\n"));
  EXPECT_EQ(unknown.exit_code, 1) << dump(unknown);
  EXPECT_THAT(unknown.err, HasSubstr("chat template is not one rlx recognises")) << dump(unknown);

  // Naming the format makes a model without a template chat.
  ProcessResult named =
      rlx({"chat", model("{}").string(), "--chat-format", "chatml", "-n", "3", "--json"}, {},
          std::string("hi\n"));
  EXPECT_EQ(named.exit_code, 0) << dump(named);
  EXPECT_EQ(
      str(json_lines(named.out).at(1).find("content")),
      expected_reply(dir_ / "model", "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", 3));

  ProcessResult bad = rlx({"chat", "m", "--chat-format", "vicuna"});
  EXPECT_EQ(bad.exit_code, 1) << dump(bad);
  EXPECT_THAT(bad.err, HasSubstr("--chat-format: unknown chat format 'vicuna'")) << dump(bad);
}

// qwen3-tiny takes 512 positions: a turn that leaves no room is an error naming the sizes, and
// one that leaves a little gets a reply cut to fit with a warning.
TEST_F(Chat, AConversationThatOutgrowsTheContextIsToldSo) {
  fs::path m = model();
  const std::string filler(480, 'a');
  ProcessResult r =
      rlx({"chat", m.string(), "-n", "64", "--json"}, {}, filler + "\n" + filler + "\n");
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("warning: the conversation has 499 tokens of the model's 512 "
                               "positions: this reply can have at most 13"))
      << dump(r);
  EXPECT_THAT(r.err, HasSubstr("the model takes 512 positions")) << dump(r);
  std::vector<json::Value> lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << dump(r);
  EXPECT_LE(*lines[1].find("tokens")->as_number()->as_i64(), 13);
}

}  // namespace
}  // namespace rlx::cli
