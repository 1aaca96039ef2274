// SentencePiece BPE as llama.cpp runs it (llm_tokenizer_spm): start from UTF-8 characters,
// repeatedly merge the adjacent pair whose concatenation is the highest-scoring piece (ties:
// leftmost), then emit each final symbol's id, with byte tokens for characters the vocabulary
// lacks. (llama.cpp also records merges to split unknown symbols back; a merged symbol is always
// a piece, so only unmerged characters can be unknown and that path never runs.)
#include <fmt/format.h>

#include <queue>

#include "rlx/core/error.h"
#include "tokenizer_impl.h"
#include "tokenizer_unicode.h"

namespace rlx::tok {

namespace {

struct Symbol {
  int prev, next;
  size_t start, n;  // byte range in the text; n == 0 once merged into its left neighbour
};

struct Bigram {
  int left, right;
  float score;
  size_t size;
  bool operator<(const Bigram& o) const {  // priority_queue: highest score, then leftmost
    return score < o.score || (score == o.score && left > o.left);
  }
};

class Session {
 public:
  Session(const Tokenizer::Impl& t, std::string_view text) : t_(t), text_(text) {}

  void run(std::vector<int64_t>& out) {
    for (size_t at = 0; at < text_.size();) {
      size_t n = std::min(utf8_len(static_cast<uint8_t>(text_[at])), text_.size() - at);
      int i = static_cast<int>(symbols_.size());
      symbols_.push_back({i - 1, at + n < text_.size() ? i + 1 : -1, at, n});
      at += n;
    }
    for (size_t i = 1; i < symbols_.size(); ++i)
      try_pair(static_cast<int>(i) - 1, static_cast<int>(i));
    while (!queue_.empty()) {
      Bigram b = queue_.top();
      queue_.pop();
      Symbol& l = symbols_[b.left];
      Symbol& r = symbols_[b.right];
      if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;  // stale: a side merged since
      l.n += r.n;
      r.n = 0;
      l.next = r.next;
      if (r.next >= 0) symbols_[r.next].prev = b.left;
      try_pair(l.prev, b.left);
      try_pair(b.left, l.next);
    }
    for (int i = symbols_.empty() ? -1 : 0; i != -1; i = symbols_[i].next) emit(symbols_[i], out);
  }

 private:
  std::string_view piece(const Symbol& s, size_t n) const { return text_.substr(s.start, n); }

  void try_pair(int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols_[left];
    std::string_view joined = piece(l, l.n + symbols_[right].n);
    int64_t id = t_.find(joined);
    if (id < 0) return;
    float score = t_.spec.scores.empty() ? 0.f : t_.spec.scores[id];
    queue_.push({left, right, score, joined.size()});
  }

  void emit(const Symbol& s, std::vector<int64_t>& out) {
    std::string_view text = piece(s, s.n);
    int64_t id = t_.find(text);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
    for (char c : text) {
      int64_t b = t_.byte_tokens[static_cast<uint8_t>(c)];
      if (b < 0) b = t_.spec.unk;
      if (b < 0)
        throw_user_error(
            fmt::format("tokenizer: byte 0x{:02X} has no token and the vocabulary "
                        "has no unknown token",
                        static_cast<uint8_t>(c)));
      out.push_back(b);
    }
  }

  const Tokenizer::Impl& t_;
  std::string_view text_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram> queue_;
};

}  // namespace

void spm_encode(const Tokenizer::Impl& t, std::string_view text, std::vector<int64_t>& out) {
  Session(t, text).run(out);
}

}  // namespace rlx::tok
