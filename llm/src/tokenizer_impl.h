// Shared state of the three tokenizer algorithms (tokenizer_spm.cpp, tokenizer_bpe.cpp,
// tokenizer_wordpiece.cpp). Private to core.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "rlx/llm/tokenizer.h"

namespace rlx {

struct Tokenizer::Impl {
  TokenizerSpec spec;
  std::unordered_map<std::string, int64_t> ids;  // text -> id; a repeated text keeps its last id
  std::vector<int64_t> specials;                 // matched in raw text first, longest text first
  int64_t byte_tokens[256];  // spm "<0xXX>", bpe the byte's unicode char; -1 when absent
  // bpe: merge rank of "left right" (index in spec.merges).
  std::unordered_map<std::string, int32_t> ranks;
  enum class Pre { kGpt2, kLlama3, kQwen2, kQwen35, kStarcoder, kFalcon, kDeepseekCoder } pre = Pre::kGpt2;
  bool ignore_merges = false;  // llama3: a word that is a whole token is not merged

  int64_t find(std::string_view text) const {
    auto it = ids.find(std::string(text));
    return it == ids.end() ? -1 : it->second;
  }
  int32_t token_type(int64_t id) const {
    return id >= 0 && id < static_cast<int64_t>(spec.types.size()) ? spec.types[id] : 1;
  }
  bool is_control(int64_t id) const;
};

namespace tok {

// Each appends the ids of one fragment of plain text (no special tokens in it).
// spm: `text` already has spaces replaced by U+2581 and the prefix space added.
void spm_encode(const Tokenizer::Impl& t, std::string_view text, std::vector<int64_t>& out);
void bpe_encode(const Tokenizer::Impl& t, std::string_view text, std::vector<int64_t>& out);
void wordpiece_encode(const Tokenizer::Impl& t, std::string_view text, std::vector<int64_t>& out);

// GPT-2's reversible byte <-> printable-codepoint map used by byte-level BPE vocabularies.
uint32_t byte_to_cp(uint8_t b);
int byte_from_cp(uint32_t cp);  // -1 when cp is not in the map
// Splits text the way the pre-tokenizer's regex does (see tokenizer_bpe_split.cpp).
std::vector<std::string> bpe_pre_split(std::string_view text, Tokenizer::Impl::Pre pre);

}  // namespace tok
}  // namespace rlx
