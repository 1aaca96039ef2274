#include "tokenizer_files.h"

#include <fmt/format.h>

#include <fstream>
#include <functional>
#include <iterator>

#include "json_file.h"
#include "rlx/core/error.h"

namespace rlx::frontends {

namespace fs = std::filesystem;

namespace {

constexpr int32_t kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kByte = 6;

// A special token in tokenizer_config.json is a string or {"content": "..."}.
std::optional<std::string> token_text(const json::Value* v) {
  if (!v) return std::nullopt;
  if (const std::string* s = v->as_string()) return *s;
  if (const json::Value* c = v->find("content"); c && c->as_string()) return *c->as_string();
  return std::nullopt;
}

class Vocab {
 public:
  // Ids are dense in practice; `limit` (entries + slack) keeps a bad id from allocating a huge
  // vocabulary.
  explicit Vocab(TokenizerSpec& spec, int64_t limit = 0) : spec_(spec), limit_(limit) {}
  void set(int64_t id, const std::string& text, const fs::path& file) {
    if (id < 0 || id >= limit_)
      throw_user_error(
          fmt::format("{}: token '{}' has id {}, outside [0, {}) for a vocabulary "
                      "of this size",
                      file.string(), text, id, limit_));
    if (static_cast<size_t>(id) >= spec_.tokens.size()) spec_.tokens.resize(id + 1);
    spec_.tokens[id] = text;
  }
  int64_t find(const std::string& text) const {
    for (size_t i = 0; i < spec_.tokens.size(); ++i)
      if (spec_.tokens[i] == text) return static_cast<int64_t>(i);
    return -1;
  }

 private:
  TokenizerSpec& spec_;
  int64_t limit_;
};

// Which regex split the byte-level pre-tokenizer uses decides the pre-tokenizer name.
std::string bpe_pre(const json::Value& root) {
  std::string text;
  std::function<void(const json::Value&)> walk = [&](const json::Value& v) {
    if (const json::Value* p = v.find("pattern"))
      if (const json::Value* r = p->find("Regex"); r && r->as_string()) text += *r->as_string();
    if (const json::Value* ps = v.find("pretokenizers"); ps && ps->as_array())
      for (const json::Value& x : *ps->as_array()) walk(x);
  };
  if (const json::Value* pre = root.find("pre_tokenizer")) walk(*pre);
  if (text.find("\\p{N}{1,3}") != std::string::npos) return "llama3";
  if (text.find("\\p{N}") != std::string::npos && text.find("(?i:") != std::string::npos)
    return "qwen2";
  return "gpt2";
}

bool mentions(const json::Value& v, const std::string& type) {
  if (const json::Value* t = v.find("type"); t && t->as_string() && *t->as_string() == type)
    return true;
  for (const char* list : {"pretokenizers", "normalizers", "decoders"})
    if (const json::Value* xs = v.find(list); xs && xs->as_array())
      for (const json::Value& x : *xs->as_array())
        if (mentions(x, type)) return true;
  return false;
}

std::optional<TokenizerSpec> from_tokenizer_json(const fs::path& file, std::string* unsupported) {
  json::Value root = read_json_file(file);
  const json::Value* model = root.find("model");
  const json::Value* type = model ? model->find("type") : nullptr;
  if (!type || !type->as_string())
    throw_user_error(fmt::format("{}: 'model.type' is missing", file.string()));
  const json::Value* v = model->find("vocab");
  // The model still loads (token ids need no tokenizer); what wants text is told why not.
  if (*type->as_string() == "Unigram") {
    *unsupported = fmt::format(
        "{} holds a Unigram tokenizer ('model.type'), which rlx does not read (it reads "
        "WordPiece, BPE and byte-fallback BPE)",
        file.string());
    return std::nullopt;
  }
  if (!v || !v->as_object())
    throw_user_error(
        fmt::format("{}: 'model.vocab' must be an object of token -> id", file.string()));
  const json::Value* added_list = root.find("added_tokens");
  size_t entries = v->as_object()->size();
  if (added_list && added_list->as_array()) entries += added_list->as_array()->size();
  TokenizerSpec spec;
  Vocab vocab(spec, static_cast<int64_t>(entries) + 65536);
  for (const auto& [text, id] : *v->as_object()) {
    const json::Number* n = id.as_number();
    if (!n || !n->as_i64())
      throw_user_error(
          fmt::format("{}: vocab entry '{}' must have an integer id", file.string(), text));
    vocab.set(*n->as_i64(), text, file);
  }
  std::vector<std::pair<int64_t, bool>> added;  // id, special
  if (const json::Value* a = root.find("added_tokens"); a && a->as_array())
    for (const json::Value& t : *a->as_array()) {
      const json::Value* id = t.find("id");
      auto text = token_text(&t);
      if (!id || !id->as_number() || !id->as_number()->as_i64() || !text)
        throw_user_error(
            fmt::format("{}: an added_tokens entry lacks an integer id or content", file.string()));
      vocab.set(*id->as_number()->as_i64(), *text, file);
      const json::Value* sp = t.find("special");
      added.emplace_back(*id->as_number()->as_i64(), sp && sp->as_bool() && *sp->as_bool());
    }

  const std::string& kind = *type->as_string();
  if (kind == "WordPiece") {
    spec.kind = "wordpiece";
    if (const json::Value* n = root.find("normalizer"))
      if (const json::Value* lc = n->find("lowercase"); lc && lc->as_bool())
        spec.lowercase = *lc->as_bool();
    if (auto unk = token_text(model->find("unk_token"))) spec.unk = vocab.find(*unk);
    return spec;
  }
  if (kind != "BPE")
    throw_user_error(
        fmt::format("{}: tokenizer model type '{}' is not supported (WordPiece, BPE "
                    "and byte-fallback BPE are)",
                    file.string(), kind));
  if (const json::Value* m = model->find("merges"); m && m->as_array())
    for (const json::Value& x : *m->as_array()) {
      if (const std::string* s = x.as_string()) {
        spec.merges.push_back(*s);
      } else if (const json::Array* pair = x.as_array();
                 pair && pair->size() == 2 && (*pair)[0].as_string() && (*pair)[1].as_string()) {
        spec.merges.push_back(*(*pair)[0].as_string() + " " + *(*pair)[1].as_string());
      } else {
        throw_user_error(
            fmt::format("{}: a merge must be \"a b\" or [\"a\", \"b\"]", file.string()));
      }
    }
  const json::Value* fallback = model->find("byte_fallback");
  if (fallback && fallback->as_bool() && *fallback->as_bool()) {
    // A SentencePiece model converted to tokenizers' BPE keeps SentencePiece's ids, where a
    // piece's score falls with its id; types come from the byte and special tokens.
    spec.kind = "spm";
    const auto n = static_cast<int64_t>(spec.tokens.size());
    spec.scores.resize(n);
    spec.types.assign(n, kNormal);
    for (int64_t i = 0; i < n; ++i) {
      spec.scores[i] = -static_cast<float>(i);
      const std::string& t = spec.tokens[i];
      if (t.size() == 6 && t.rfind("<0x", 0) == 0 && t.back() == '>') spec.types[i] = kByte;
    }
    for (auto [id, special] : added) spec.types[id] = special ? kControl : kUserDefined;
    if (auto unk = token_text(model->find("unk_token")); unk && vocab.find(*unk) >= 0) {
      spec.unk = vocab.find(*unk);
      spec.types[spec.unk] = kUnknown;
    }
    spec.add_bos = true;  // SentencePiece llama tokenizers prepend <s> unless told otherwise
    return spec;
  }
  const json::Value* pre = root.find("pre_tokenizer");
  if (!pre || !mentions(*pre, "ByteLevel"))
    throw_user_error(
        fmt::format("{}: a BPE tokenizer without a ByteLevel pre-tokenizer or "
                    "byte_fallback is not supported",
                    file.string()));
  spec.kind = "bpe";
  spec.pre = bpe_pre(root);
  // Added tokens are matched in the text before BPE runs (a chat template's <|im_start|> is one
  // token, not its bytes), and the special ones are left out of decoded text, as tokenizers
  // does; the types say which are which, as a GGUF file's token types do.
  if (!added.empty()) {
    spec.types.assign(spec.tokens.size(), kNormal);
    for (auto [id, special] : added) spec.types[id] = special ? kControl : kUserDefined;
  }
  return spec;
}

std::optional<TokenizerSpec> from_vocab_txt(const fs::path& file) {
  std::ifstream f(file);
  if (!f) throw_user_error(fmt::format("{}: cannot open", file.string()));
  TokenizerSpec spec;
  spec.kind = "wordpiece";
  spec.lowercase = true;  // BERT's default; tokenizer_config.json may say otherwise
  for (std::string line; std::getline(f, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    spec.tokens.push_back(line);
  }
  return spec;
}

// tokenizer_config.json: special tokens by text, flags; then the config's ids as fallback.
void apply_tokenizer_config(const fs::path& folder, TokenizerSpec& spec,
                            const TransformerConfig& config) {
  Vocab vocab(spec);
  std::error_code ec;
  json::Value cfg;
  if (fs::exists(folder / "tokenizer_config.json", ec))
    cfg = read_json_file(folder / "tokenizer_config.json");
  auto id_of = [&](const char* key, const char* fallback_text) -> int64_t {
    if (auto text = token_text(cfg.find(key))) return vocab.find(*text);
    return fallback_text ? vocab.find(fallback_text) : -1;
  };
  const bool wp = spec.kind == "wordpiece";
  auto keep = [](int64_t& slot, int64_t id) {
    if (id >= 0) slot = id;
  };
  keep(spec.unk, id_of("unk_token", wp ? "[UNK]" : nullptr));
  keep(spec.pad, id_of("pad_token", wp ? "[PAD]" : nullptr));
  keep(spec.bos, id_of("bos_token", nullptr));
  keep(spec.eos, id_of("eos_token", nullptr));
  if (wp) {
    keep(spec.cls, id_of("cls_token", "[CLS]"));
    keep(spec.sep, id_of("sep_token", "[SEP]"));
    keep(spec.mask, id_of("mask_token", "[MASK]"));
  }
  const auto n = static_cast<int64_t>(spec.tokens.size());
  if (spec.bos < 0 && config.bos >= 0 && config.bos < n) spec.bos = config.bos;
  if (spec.eos < 0 && config.eos >= 0 && config.eos < n) spec.eos = config.eos;
  if (spec.pad < 0 && config.pad >= 0 && config.pad < n) spec.pad = config.pad;
  if (const json::Value* b = cfg.find("add_bos_token"); b && b->as_bool())
    spec.add_bos = *b->as_bool();
  if (const json::Value* e = cfg.find("add_eos_token"); e && e->as_bool())
    spec.add_eos = *e->as_bool();
  if (const json::Value* l = cfg.find("do_lower_case"); l && l->as_bool() && wp)
    spec.lowercase = *l->as_bool();
  if (spec.add_bos && spec.bos < 0) spec.add_bos = false;
}

// chat_template.jinja, else tokenizer_config.json's chat_template: a string, or a list of
// {"name", "template"} of which transformers uses "default".
std::string read_chat_template(const fs::path& folder) {
  std::error_code ec;
  if (fs::is_regular_file(folder / "chat_template.jinja", ec)) {
    std::ifstream f(folder / "chat_template.jinja", std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }
  if (!fs::exists(folder / "tokenizer_config.json", ec)) return {};
  const json::Value cfg = read_json_file(folder / "tokenizer_config.json");
  const json::Value* t = cfg.find("chat_template");
  if (!t) return {};
  if (const std::string* s = t->as_string()) return *s;
  if (const json::Array* list = t->as_array())
    for (const json::Value& named : *list)
      if (const json::Value* name = named.find("name");
          name && name->as_string() && *name->as_string() == "default")
        if (const json::Value* text = named.find("template"); text && text->as_string())
          return *text->as_string();
  return {};
}

}  // namespace

TokenizerFiles read_tokenizer_files(const fs::path& folder, const TransformerConfig& config) {
  std::error_code ec;
  TokenizerFiles files;
  if (fs::exists(folder / "tokenizer.json", ec))
    files.spec = from_tokenizer_json(folder / "tokenizer.json", &files.unsupported);
  else if (fs::exists(folder / "vocab.txt", ec))
    files.spec = from_vocab_txt(folder / "vocab.txt");
  if (files.spec) apply_tokenizer_config(folder, *files.spec, config);
  files.chat_template = read_chat_template(folder);
  return files;
}

}  // namespace rlx::frontends
