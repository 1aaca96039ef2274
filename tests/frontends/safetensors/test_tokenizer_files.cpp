// Tokenizer files of a Hugging Face folder become the Model's TokenizerSpec, and core's
// Tokenizer reads them as transformers would.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "hf_folder.h"
#include "model_support.h"
#include "rlx/llm/tokenizer.h"

namespace rlx::test {
namespace {

namespace fs = std::filesystem;

fs::path bert_folder(const std::string& name) {
  TinyBert cfg;
  fs::path dir = fresh_dir(name);
  write_text(dir / "config.json", cfg.config_json());
  write_safetensors(dir / "model.safetensors", cfg.weights());
  return dir;
}

TEST(TokenizerFiles, VocabTxtIsAnUncasedWordPiece) {
  fs::path dir = bert_folder("bert");
  write_text(dir / "vocab.txt", bert_vocab_txt());
  Model m = load_model(dir);
  ASSERT_TRUE(m.tokenizer.has_value());
  EXPECT_EQ(m.tokenizer->kind, "wordpiece");
  EXPECT_TRUE(m.tokenizer->lowercase);
  EXPECT_EQ(m.tokenizer->pad, 0);
  EXPECT_EQ(m.tokenizer->unk, 1);
  EXPECT_EQ(m.tokenizer->cls, 2);
  EXPECT_EQ(m.tokenizer->sep, 3);
  Tokenizer tok(*m.tokenizer);
  EXPECT_EQ(tok.encode("Hello worlds", true), (std::vector<int64_t>{2, 5, 6, 7, 3}));
}

TEST(TokenizerFiles, TokenizerConfigCanKeepCase) {
  fs::path dir = bert_folder("bert");
  write_text(dir / "vocab.txt", bert_vocab_txt());
  write_text(dir / "tokenizer_config.json", R"({"do_lower_case": false})");
  EXPECT_FALSE(load_model(dir).tokenizer->lowercase);
}

TEST(TokenizerFiles, ByteLevelBpeFromTokenizerJson) {
  TinyDecoder d;
  d.vocab = 300;
  fs::path dir = fresh_dir("qwen");
  write_text(dir / "config.json", d.config_json());
  write_safetensors(dir / "model.safetensors", d.weights());
  write_text(dir / "tokenizer.json", byte_level_tokenizer_json(R"(\\p{N})"));
  write_text(dir / "tokenizer_config.json", R"({"eos_token": "<|end|>", "add_bos_token": false})");
  Model m = load_model(dir);
  ASSERT_TRUE(m.tokenizer.has_value());
  const TokenizerSpec& s = *m.tokenizer;
  EXPECT_EQ(s.kind, "bpe");
  EXPECT_EQ(s.pre, "qwen2");
  ASSERT_EQ(s.merges.size(), 2u);
  EXPECT_EQ(s.merges[0], "h i");
  EXPECT_EQ(s.tokens.size(), 259u);
  EXPECT_EQ(s.eos, 258);
  Tokenizer tok(s);
  std::vector<int64_t> ids = tok.encode("hi hi<|end|>");
  EXPECT_EQ(ids, (std::vector<int64_t>{256, 257, 258}));
  EXPECT_EQ(tok.decode({256, 257}), "hi hi");
}

// The chat template reaches the model under GGUF's key, from tokenizer_config.json (a string, or
// transformers' list of named templates, of which it uses "default") or chat_template.jinja.
TEST(TokenizerFiles, ChatTemplateIsKeptUnderGgufsKey) {
  TinyDecoder d;
  d.vocab = 300;
  fs::path dir = fresh_dir("qwen");
  write_text(dir / "config.json", d.config_json());
  write_safetensors(dir / "model.safetensors", d.weights());
  write_text(dir / "tokenizer.json", byte_level_tokenizer_json(R"(\\p{N})"));
  auto chat_template = [&] {
    Model m = load_model(dir);
    auto it = m.metadata.find("tokenizer.chat_template");
    return it == m.metadata.end() ? std::string("<none>") : it->second;
  };
  EXPECT_EQ(chat_template(), "<none>");
  write_text(dir / "tokenizer_config.json", R"({"chat_template": "{{ '<|im_start|>' }}"})");
  EXPECT_EQ(chat_template(), "{{ '<|im_start|>' }}");
  write_text(dir / "tokenizer_config.json",
             R"({"chat_template": [{"name": "tool_use", "template": "T"},
                                   {"name": "default", "template": "D"}]})");
  EXPECT_EQ(chat_template(), "D");
  write_text(dir / "chat_template.jinja", "J");
  EXPECT_EQ(chat_template(), "J");
}

TEST(TokenizerFiles, NoFilesNoTokenizer) {
  EXPECT_FALSE(load_model(bert_folder("bert")).tokenizer.has_value());
}

// A Unigram tokenizer.json has no rlx equivalent: the model loads without a tokenizer, and says
// why under kTokenizerProblemKey, naming the file and the kind.
TEST(TokenizerFiles, AnUnsupportedKindIsRecordedNotMistakenForNone) {
  fs::path dir = bert_folder("bert");
  write_text(dir / "tokenizer.json",
             R"({"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0]]}})");
  Model m = load_model(dir);
  EXPECT_FALSE(m.tokenizer.has_value());
  ASSERT_TRUE(m.metadata.count(kTokenizerProblemKey));
  EXPECT_EQ(m.metadata.at(kTokenizerProblemKey),
            (dir / "tokenizer.json").string() +
                " holds a Unigram tokenizer ('model.type'), which rlx does not read (it reads "
                "WordPiece, BPE and byte-fallback BPE)");
  fs::remove(dir / "tokenizer.json");
  EXPECT_FALSE(load_model(dir).metadata.count(kTokenizerProblemKey));
}

TEST(TokenizerFiles, BadTokenizerJsonNamesTheFile) {
  fs::path dir = bert_folder("bert");
  write_text(dir / "tokenizer.json", R"({"model": {"vocab": {}}})");
  try {
    load_model(dir);
    ADD_FAILURE() << "accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(
        std::string(e.what()).find((dir / "tokenizer.json").string() + ": 'model.type' is missing"),
        std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace rlx::test
