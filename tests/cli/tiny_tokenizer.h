// A copy of the qwen3-tiny fixture (tests/data/fixtures, ids only) with a tokenizer, for the
// tests of what generation does with text. The tokenizer is byte-level BPE with no merges, so a
// test can encode and decode by hand: id b (0..255) is byte b, 256 <|endoftext|>, 257
// <|im_start|>, 258 <|im_end|> (special), and every id from 259 to the model's 2048 a filler
// token that decodes to "<N>" ("<300>"), so any id the random model picks has text.
#pragma once
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "rlx/core/json.h"

namespace rlx::cli::test {

inline constexpr int64_t kEndOfText = 256, kImStart = 257, kImEnd = 258, kTinyVocab = 2048;

// GPT-2's byte-level alphabet: the character that stands for byte `b` in token texts.
inline std::string byte_token(int b) {
  int cp = b;
  if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255))) {
    int n = 0;
    for (int x = 0; x < b; ++x)
      if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255))) ++n;
    cp = 256 + n;
  }
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

// The ids of `text` with the chat markers as their special tokens and every other byte as its
// byte token.
inline std::vector<int64_t> encode_by_hand(const std::string& text) {
  std::vector<int64_t> ids;
  for (size_t at = 0; at < text.size();) {
    bool marker = false;
    for (auto [spelling, id] : {std::pair<std::string, int64_t>{"<|im_start|>", kImStart},
                                {"<|im_end|>", kImEnd},
                                {"<|endoftext|>", kEndOfText}})
      if (text.compare(at, spelling.size(), spelling) == 0) {
        ids.push_back(id);
        at += spelling.size();
        marker = true;
        break;
      }
    if (!marker) ids.push_back(static_cast<unsigned char>(text[at++]));
  }
  return ids;
}

// The text of generated ids as transformers decodes them with skip_special_tokens.
inline std::string decode_by_hand(const std::vector<int64_t>& ids) {
  std::string text;
  for (int64_t id : ids)
    if (id < 256)
      text += static_cast<char>(id);
    else if (id > kImEnd)
      text += "<" + std::to_string(id) + ">";
  return text;
}

// Copies qwen3-tiny to `dir` and adds tokenizer.json and a tokenizer_config.json with
// `config_json` (its chat_template, say). Returns `dir`.
inline std::filesystem::path tiny_text_model(const std::filesystem::path& fixtures,
                                             const std::filesystem::path& dir,
                                             const std::string& config_json = "{}") {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors"})
    fs::copy_file(fixtures / "qwen3-tiny" / f, dir / f, fs::copy_options::overwrite_existing);
  std::string vocab;
  for (int b = 0; b < 256; ++b)
    vocab += (b ? ", " : "") + json::json_quote(byte_token(b)) + ": " + std::to_string(b);
  for (int64_t id = kImEnd + 1; id < kTinyVocab; ++id)
    vocab += ", " + json::json_quote("<" + std::to_string(id) + ">") + ": " + std::to_string(id);
  std::string added;
  for (auto [text, id] : {std::pair<const char*, int64_t>{"<|endoftext|>", kEndOfText},
                          {"<|im_start|>", kImStart},
                          {"<|im_end|>", kImEnd}})
    added += std::string(added.empty() ? "" : ", ") + "{\"id\": " + std::to_string(id) +
             ", \"content\": \"" + text + "\", \"special\": true}";
  std::ofstream(dir / "tokenizer.json")
      << "{\"added_tokens\": [" << added << "], "
      << "\"pre_tokenizer\": {\"type\": \"ByteLevel\"}, "
      << "\"model\": {\"type\": \"BPE\", \"vocab\": {" << vocab << "}, \"merges\": []}}";
  std::ofstream(dir / "tokenizer_config.json") << config_json;
  return dir;
}

}  // namespace rlx::cli::test
