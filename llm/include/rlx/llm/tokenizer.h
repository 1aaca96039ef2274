// Text <-> token ids from a TokenizerSpec (rlx/core/model.h), the tokenizer data a model file
// carries. Three kinds, each matching the implementation its models were trained with:
//   "spm"        SentencePiece BPE (llama, gemma): merges by piece score, byte fallback
//   "bpe"        byte-level BPE (gpt2, llama3, qwen2): merges by rank, regex pre-tokenizer
//   "wordpiece"  BERT: basic tokenization (whitespace, punctuation, CJK, lowercasing and
//                accent stripping when spec.lowercase), greedy longest-match with "##" pieces
// Token texts follow the source format's conventions: spm pieces use U+2581 for spaces and
// "<0xXX>" byte tokens; bpe tokens are byte-level (GPT-2's byte-to-unicode alphabet);
// wordpiece continuation pieces start with "##".
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rlx/core/model.h"

namespace rlx {

class Tokenizer {
 public:
  // Throws a user error when the spec cannot work (unknown kind or pre-tokenizer, missing
  // byte tokens, malformed merges).
  explicit Tokenizer(TokenizerSpec spec);
  ~Tokenizer();
  Tokenizer(const Tokenizer&);
  Tokenizer& operator=(const Tokenizer&);

  // add_special: BOS/EOS (spm, bpe) or [CLS] ... [SEP] (wordpiece) as the spec asks.
  // parse_special: text spelling a control or user-defined token ("<s>") becomes that token.
  std::vector<int64_t> encode(std::string_view text, bool add_special = false,
                              bool parse_special = true) const;
  // skip_special: leaves out control tokens (BOS, EOS, [CLS], ...). Out-of-range ids are a
  // user error naming the id.
  std::string decode(const std::vector<int64_t>& ids, bool skip_special = true) const;

  int64_t vocab_size() const;
  std::optional<int64_t> token_id(std::string_view text) const;
  const TokenizerSpec& spec() const;

  struct Impl;

 private:
  std::shared_ptr<const Impl> impl_;
};

}  // namespace rlx
