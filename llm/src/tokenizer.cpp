// Tokenizer: vocabulary tables, special-token partitioning and decoding; the per-kind
// algorithms live in tokenizer_spm.cpp, tokenizer_bpe.cpp and tokenizer_wordpiece.cpp. The
// order of steps follows llama.cpp's llama_vocab::tokenize, whose outputs the tests reproduce.
#include "rlx/llm/tokenizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <variant>

#include "rlx/core/error.h"
#include "tokenizer_impl.h"
#include "tokenizer_unicode.h"

namespace rlx {

namespace {

constexpr int32_t kTypeUnknown = 2, kTypeControl = 3, kTypeUserDefined = 4, kTypeByte = 6;
const std::string kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's visible space

[[noreturn]] void bad_spec(const std::string& what) {
  throw_user_error(fmt::format("tokenizer: {}", what));
}

void build(Tokenizer::Impl& t) {
  const TokenizerSpec& s = t.spec;
  const auto n = static_cast<int64_t>(s.tokens.size());
  if (n == 0) bad_spec("the vocabulary is empty");
  if (s.kind != "spm" && s.kind != "bpe" && s.kind != "wordpiece")
    bad_spec(fmt::format("unknown kind \"{}\" (spm, bpe and wordpiece are supported)", s.kind));
  if (!s.types.empty() && static_cast<int64_t>(s.types.size()) != n)
    bad_spec(fmt::format("{} token types for {} tokens", s.types.size(), n));
  if (!s.scores.empty() && static_cast<int64_t>(s.scores.size()) != n)
    bad_spec(fmt::format("{} scores for {} tokens", s.scores.size(), n));
  for (int64_t id : {s.bos, s.eos, s.unk, s.pad, s.sep, s.cls, s.mask})
    if (id >= n)
      bad_spec(fmt::format("special token id {} is outside the vocabulary of {}", id, n));
  t.ids.reserve(n);
  for (int64_t i = 0; i < n; ++i) t.ids[s.tokens[i]] = i;

  // Special tokens: typed ones where the file gives types, otherwise the named ids.
  for (int64_t i = 0; i < n; ++i) {
    int32_t type = t.token_type(i);
    bool special = s.types.empty()
                       ? t.is_control(i) || i == s.unk
                       : type == kTypeUnknown || type == kTypeControl || type == kTypeUserDefined;
    if (special && !s.tokens[i].empty()) t.specials.push_back(i);
  }
  std::stable_sort(t.specials.begin(), t.specials.end(),
                   [&](int64_t a, int64_t b) { return s.tokens[a].size() > s.tokens[b].size(); });

  std::fill(std::begin(t.byte_tokens), std::end(t.byte_tokens), -1);
  for (int b = 0; b < 256; ++b) {
    if (s.kind == "spm") {
      t.byte_tokens[b] = t.find(fmt::format("<0x{:02X}>", b));
      if (t.byte_tokens[b] < 0) t.byte_tokens[b] = t.find(std::string(1, static_cast<char>(b)));
    } else if (s.kind == "bpe") {
      std::string u;
      tok::utf8_append(tok::byte_to_cp(static_cast<uint8_t>(b)), u);
      t.byte_tokens[b] = t.find(u);
    }
  }

  if (s.kind == "bpe") {
    for (size_t r = 0; r < s.merges.size(); ++r) {
      const std::string& m = s.merges[r];
      size_t sp = m.find(' ', 1);  // a merge may start with a space-like token but never " "
      if (sp == std::string::npos || sp + 1 >= m.size())
        bad_spec(fmt::format("merge #{} (\"{}\") is not two tokens separated by a space", r, m));
      t.ranks.emplace(m, static_cast<int32_t>(r));  // the first (highest) priority wins
    }
    const std::string& p = s.pre;
    // Names as llama.cpp's llama_vocab::load maps them to one regex set.
    if (p.empty() || p == "default" || p == "gpt2" || p == "gpt-2" || p == "mpt") {
      t.pre = Tokenizer::Impl::Pre::kGpt2;
    } else if (p == "llama3" || p == "llama-bpe" || p == "llama-v3" || p == "smaug-bpe") {
      t.pre = Tokenizer::Impl::Pre::kLlama3;
      t.ignore_merges = true;
    } else if (p == "qwen2" || p == "qwen3") {
      t.pre = Tokenizer::Impl::Pre::kQwen2;
    } else if (p == "qwen35") {
      t.pre = Tokenizer::Impl::Pre::kQwen35;
    } else if (p == "starcoder" || p == "refact" || p == "command-r" || p == "smollm") {
      t.pre = Tokenizer::Impl::Pre::kStarcoder;
    } else if (p == "falcon") {
      t.pre = Tokenizer::Impl::Pre::kFalcon;
    } else if (p == "deepseek-coder") {
      t.pre = Tokenizer::Impl::Pre::kDeepseekCoder;
    } else {
      bad_spec(fmt::format(
          "BPE pre-tokenizer \"{}\" is not supported (gpt2, mpt, llama3, qwen2, qwen35, "
          "starcoder, refact, command-r, smollm, falcon, deepseek-coder are)",
          p));
    }
  }
}

// Raw text pieces and special tokens, in order.
using Fragment = std::variant<std::string_view, int64_t>;

std::vector<Fragment> partition(const Tokenizer::Impl& t, std::string_view text,
                                bool parse_special) {
  std::vector<Fragment> frags{text};
  for (int64_t id : t.specials) {
    if (!parse_special && t.token_type(id) != kTypeUserDefined) continue;
    const std::string& sp = t.spec.tokens[id];
    std::vector<Fragment> next;
    for (const Fragment& f : frags) {
      const auto* raw = std::get_if<std::string_view>(&f);
      if (!raw) {
        next.push_back(f);
        continue;
      }
      std::string_view rest = *raw;
      for (size_t at; (at = rest.find(sp)) != std::string_view::npos;) {
        if (at) next.emplace_back(rest.substr(0, at));
        next.emplace_back(id);
        rest.remove_prefix(at + sp.size());
      }
      if (!rest.empty()) next.emplace_back(rest);
    }
    frags = std::move(next);
  }
  return frags;
}

}  // namespace

bool Tokenizer::Impl::is_control(int64_t id) const {
  if (!spec.types.empty()) return token_type(id) == kTypeControl;
  const TokenizerSpec& s = spec;
  return id == s.bos || id == s.eos || id == s.pad || id == s.cls || id == s.sep || id == s.mask;
}

Tokenizer::Tokenizer(TokenizerSpec spec) {
  auto impl = std::make_shared<Impl>();
  impl->spec = std::move(spec);
  build(*impl);
  impl_ = std::move(impl);
}

Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(const Tokenizer&) = default;
Tokenizer& Tokenizer::operator=(const Tokenizer&) = default;

int64_t Tokenizer::vocab_size() const {
  return static_cast<int64_t>(impl_->spec.tokens.size());
}
const TokenizerSpec& Tokenizer::spec() const {
  return impl_->spec;
}

std::optional<int64_t> Tokenizer::token_id(std::string_view text) const {
  int64_t id = impl_->find(text);
  return id < 0 ? std::nullopt : std::optional<int64_t>(id);
}

std::vector<int64_t> Tokenizer::encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  const Impl& t = *impl_;
  const TokenizerSpec& s = t.spec;
  std::vector<int64_t> out;
  const bool wordpiece = s.kind == "wordpiece";
  if (add_special) {
    int64_t first = wordpiece ? (s.cls >= 0 ? s.cls : s.bos) : (s.add_bos ? s.bos : -1);
    if (wordpiece && first < 0) bad_spec("wordpiece: add_special needs a [CLS] token id");
    if (first >= 0) out.push_back(first);
  }
  bool prev_special = true;  // spm: the text after a special token gets the space prefix too
  for (const Fragment& f : partition(t, text, parse_special)) {
    if (const auto* id = std::get_if<int64_t>(&f)) {
      out.push_back(*id);
      prev_special = true;
      continue;
    }
    std::string_view raw = std::get<std::string_view>(f);
    if (s.kind == "spm") {
      std::string escaped = s.add_space_prefix && prev_special ? kSpace : "";
      for (char c : raw) {
        if (c == ' ')
          escaped += kSpace;
        else
          escaped += c;
      }
      tok::spm_encode(t, escaped, out);
    } else if (s.kind == "bpe") {
      tok::bpe_encode(t, raw, out);
    } else {
      tok::wordpiece_encode(t, raw, out);
    }
    prev_special = false;
  }
  if (add_special) {
    int64_t last = wordpiece ? (s.sep >= 0 ? s.sep : s.eos) : (s.add_eos ? s.eos : -1);
    if (wordpiece && last < 0) bad_spec("wordpiece: add_special needs a [SEP] token id");
    if (last >= 0) out.push_back(last);
  }
  return out;
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids, bool skip_special) const {
  const Impl& t = *impl_;
  const TokenizerSpec& s = t.spec;
  std::string out;
  bool first = true;
  for (int64_t id : ids) {
    if (id < 0 || id >= vocab_size())
      throw_user_error(fmt::format("tokenizer: cannot decode id {}: the vocabulary has {} tokens",
                                   id, vocab_size()));
    if (skip_special && t.is_control(id)) continue;
    const std::string& text = s.tokens[id];
    if (s.kind == "spm") {
      unsigned byte;
      if (t.token_type(id) == kTypeByte && std::sscanf(text.c_str(), "<0x%02X>", &byte) == 1) {
        out += static_cast<char>(byte);
      } else {
        std::string piece;
        for (size_t at = 0; at < text.size();) {
          bool space = text.compare(at, kSpace.size(), kSpace) == 0;
          piece += space ? ' ' : text[at];
          at += space ? kSpace.size() : 1;
        }
        // SentencePiece drops the space its encoder added in front of the text.
        if (first && s.add_space_prefix && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
        out += piece;
      }
    } else if (s.kind == "bpe") {
      for (uint32_t cp : tok::utf8_decode(text)) {
        int b = tok::byte_from_cp(cp);
        if (b >= 0)
          out += static_cast<char>(b);
        else
          tok::utf8_append(cp, out);  // added tokens spelled in plain text
      }
    } else if (text.rfind("##", 0) == 0) {
      out += text.substr(2);
    } else {
      if (!first) out += ' ';
      out += text;
    }
    first = false;
  }
  return out;
}

}  // namespace rlx
