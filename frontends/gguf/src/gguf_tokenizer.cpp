#include "gguf_tokenizer.h"

#include <fmt/format.h>

#include "rlx/core/error.h"

namespace rlx::gguf {

namespace {

const std::string kSpace = "\xE2\x96\x81";  // U+2581

[[noreturn]] void bad(const GgufFile& f, const std::string& key, const std::string& what) {
  throw_user_error(fmt::format("{}: metadata key '{}': {}", f.source, key, what));
}

const Value* array_of(const GgufFile& f, const std::string& key, ValueType elem, bool required) {
  const Value* v = f.find(key);
  if (!v) {
    if (required) bad(f, key, "missing (the tokenizer needs it)");
    return nullptr;
  }
  // Any integer width for ids and types, f32 or f64 for scores.
  auto integer = [](ValueType t) {
    return t != ValueType::kString && t != ValueType::kArray && t != ValueType::kF32 &&
           t != ValueType::kF64 && t != ValueType::kBool;
  };
  bool ok = v->is_array() && (v->elem == elem || (elem == ValueType::kI32 && integer(v->elem)) ||
                              (elem == ValueType::kF32 && v->elem == ValueType::kF64));
  if (!ok)
    bad(f, key,
        fmt::format("expected an array of {}, got {}{}", value_type_name(elem),
                    value_type_name(v->type),
                    v->is_array() ? fmt::format(" of {}", value_type_name(v->elem)) : ""));
  return v;
}

void read_id(const GgufFile& f, const std::string& key, int64_t n_tokens, int64_t* out) {
  const Value* v = f.find(key);
  if (!v) return;
  auto id = v->as_int();
  // llama.cpp writes -1 (as u32 0xFFFFFFFF) for "none".
  if (id && (*id == 0xFFFFFFFFll || *id == -1)) {
    *out = -1;
    return;
  }
  if (!id || *id < 0 || *id >= n_tokens)
    bad(f, key,
        fmt::format("token id {} is not in the vocabulary of {} tokens", v->str(), n_tokens));
  *out = *id;
}

void read_flag(const GgufFile& f, const std::string& key, bool* out) {
  const Value* v = f.find(key);
  if (!v) return;
  auto b = v->as_bool();
  if (!b) bad(f, key, fmt::format("expected a bool, got {}", value_type_name(v->type)));
  *out = *b;
}

// convert_hf_to_gguf writes BERT vocabularies with a "phantom space": word-initial pieces get a
// U+2581 prefix and "##" continuation pieces lose theirs. rlx's WordPiece takes the Hugging Face
// spelling, so undo it; bracketed specials ([CLS]) were left alone and stay so.
std::string unphantom(const std::string& t) {
  if (t.rfind(kSpace, 0) == 0) return t.substr(kSpace.size());
  if (t.size() >= 2 && t.front() == '[' && t.back() == ']') return t;
  return "##" + t;
}

}  // namespace

std::optional<TokenizerSpec> tokenizer_spec(const GgufFile& f, std::string* why_not) {
  auto no = [&](std::string why) -> std::optional<TokenizerSpec> {
    if (why_not) *why_not = std::move(why);
    return std::nullopt;
  };
  const Value* model = f.find("tokenizer.ggml.model");
  if (!model) return no("the file has no tokenizer (no tokenizer.ggml.model)");
  if (!model->as_string()) bad(f, "tokenizer.ggml.model", "expected a string");
  const std::string& m = *model->as_string();
  TokenizerSpec s;
  if (m == "llama") {
    s.kind = "spm";
    s.bos = 1, s.eos = 2, s.unk = 0;  // llama.cpp's defaults for SentencePiece vocabularies
    s.add_bos = true;
  } else if (m == "gpt2") {
    s.kind = "bpe";
    s.bos = 11, s.eos = 11;
  } else if (m == "bert") {
    s.kind = "wordpiece";
    s.cls = s.bos = 101, s.unk = 100, s.sep = 102, s.pad = 0, s.mask = 103;
    s.lowercase = true;  // llama.cpp's WPM always lowercases
  } else if (m == "none" || m == "no_vocab") {
    return no("the file says it has no vocabulary (tokenizer.ggml.model = \"" + m + "\")");
  } else {
    return no(fmt::format("tokenizer model \"{}\" is not supported (llama, gpt2 and bert are)", m));
  }

  const Value* tokens = array_of(f, "tokenizer.ggml.tokens", ValueType::kString, true);
  if (tokens->strings.empty()) bad(f, "tokenizer.ggml.tokens", "the vocabulary is empty");
  s.tokens = tokens->strings;
  const auto n = static_cast<int64_t>(s.tokens.size());
  if (s.kind == "wordpiece")
    for (std::string& t : s.tokens) t = unphantom(t);
  if (const Value* sc = array_of(f, "tokenizer.ggml.scores", ValueType::kF32, false)) {
    if (static_cast<int64_t>(sc->floats.size()) != n)
      bad(f, "tokenizer.ggml.scores", fmt::format("{} scores for {} tokens", sc->floats.size(), n));
    s.scores.assign(sc->floats.begin(), sc->floats.end());
  }
  if (const Value* ty = array_of(f, "tokenizer.ggml.token_type", ValueType::kI32, false)) {
    if (static_cast<int64_t>(ty->ints.size()) != n)
      bad(f, "tokenizer.ggml.token_type",
          fmt::format("{} types for {} tokens", ty->ints.size(), n));
    s.types.assign(ty->ints.begin(), ty->ints.end());
  }
  if (s.kind == "bpe") {
    s.merges = array_of(f, "tokenizer.ggml.merges", ValueType::kString, true)->strings;
    if (const Value* pre = f.find("tokenizer.ggml.pre"); pre && pre->as_string())
      s.pre = *pre->as_string();
  }
  // Out-of-range defaults (a small vocabulary) mean "none", as in llama.cpp.
  for (int64_t* id : {&s.bos, &s.eos, &s.unk, &s.pad, &s.sep, &s.cls, &s.mask})
    if (*id >= n) *id = -1;
  read_id(f, "tokenizer.ggml.bos_token_id", n, &s.bos);
  read_id(f, "tokenizer.ggml.eos_token_id", n, &s.eos);
  read_id(f, "tokenizer.ggml.unknown_token_id", n, &s.unk);
  read_id(f, "tokenizer.ggml.padding_token_id", n, &s.pad);
  read_id(f, "tokenizer.ggml.seperator_token_id", n, &s.sep);  // sic: llama.cpp's spelling
  read_id(f, "tokenizer.ggml.cls_token_id", n, &s.cls);
  read_id(f, "tokenizer.ggml.mask_token_id", n, &s.mask);
  read_flag(f, "tokenizer.ggml.add_bos_token", &s.add_bos);
  read_flag(f, "tokenizer.ggml.add_eos_token", &s.add_eos);
  read_flag(f, "tokenizer.ggml.add_space_prefix", &s.add_space_prefix);
  return s;
}

}  // namespace rlx::gguf
