// Byte-level BPE as llama.cpp runs it (llm_tokenizer_bpe): pre-tokenize with the model's regex,
// map each word's bytes to GPT-2's printable alphabet, then repeatedly merge the adjacent pair
// with the lowest merge rank (ties: leftmost). Symbols that are not tokens fall back to one
// token per byte.
#include <fmt/format.h>

#include <queue>

#include "rlx/core/error.h"
#include "tokenizer_impl.h"
#include "tokenizer_unicode.h"

namespace rlx::tok {

namespace {

// bytes_to_unicode(): printable Latin-1 bytes map to themselves, the other 68 to U+0100 on.
struct ByteMap {
  uint32_t to_cp[256];
  ByteMap() {
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      to_cp[b] = printable ? static_cast<uint32_t>(b) : next++;
    }
  }
};
const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}

struct Symbol {
  int prev, next;
  size_t start, n;
};

struct Bigram {
  int left, right;
  int32_t rank;
  std::string text;
  bool operator<(const Bigram& o) const {  // priority_queue: lowest rank, then leftmost
    return rank > o.rank || (rank == o.rank && left > o.left);
  }
};

class Session {
 public:
  Session(const Tokenizer::Impl& t, const std::string& word) : t_(t), w_(word) {}

  void run(std::vector<int64_t>& out) {
    if (t_.ignore_merges) {
      if (int64_t id = t_.find(w_); id >= 0) {
        out.push_back(id);
        return;
      }
    }
    for (size_t at = 0; at < w_.size();) {
      size_t n = std::min(utf8_len(static_cast<uint8_t>(w_[at])), w_.size() - at);
      int i = static_cast<int>(sym_.size());
      sym_.push_back({i - 1, at + n < w_.size() ? i + 1 : -1, at, n});
      at += n;
    }
    for (size_t i = 1; i < sym_.size(); ++i) add_pair(static_cast<int>(i) - 1, static_cast<int>(i));
    while (!queue_.empty()) {
      Bigram b = queue_.top();
      queue_.pop();
      Symbol& l = sym_[b.left];
      Symbol& r = sym_[b.right];
      if (l.n == 0 || r.n == 0 || text(l) + text(r) != b.text) continue;  // stale
      l.n += r.n;
      r.n = 0;
      l.next = r.next;
      if (r.next >= 0) sym_[r.next].prev = b.left;
      add_pair(l.prev, b.left);
      add_pair(b.left, l.next);
    }
    for (int i = sym_.empty() ? -1 : 0; i != -1; i = sym_[i].next) {
      const std::string s = text(sym_[i]);
      if (int64_t id = t_.find(s); id >= 0) {
        out.push_back(id);
        continue;
      }
      // Not a token: one token per byte of the original text.
      for (uint32_t cp : utf8_decode(s)) {
        int b = byte_from_cp(cp);
        int64_t id = b >= 0 ? t_.byte_tokens[b] : -1;
        if (id < 0) id = t_.spec.unk;
        if (id < 0)
          throw_user_error(
              fmt::format("tokenizer: no token for byte-level symbol U+{:04X} and no "
                          "unknown token",
                          cp));
        out.push_back(id);
      }
    }
  }

 private:
  std::string text(const Symbol& s) const { return w_.substr(s.start, s.n); }

  void add_pair(int left, int right) {
    if (left < 0 || right < 0) return;
    std::string key = text(sym_[left]) + " " + text(sym_[right]);
    auto it = t_.ranks.find(key);
    if (it == t_.ranks.end()) return;
    key.erase(sym_[left].n, 1);  // the joined text
    queue_.push({left, right, it->second, std::move(key)});
  }

  const Tokenizer::Impl& t_;
  const std::string& w_;
  std::vector<Symbol> sym_;
  std::priority_queue<Bigram> queue_;
};

}  // namespace

uint32_t byte_to_cp(uint8_t b) {
  return byte_map().to_cp[b];
}

int byte_from_cp(uint32_t cp) {
  static const auto inverse = [] {
    std::vector<int> inv(512, -1);
    for (int b = 0; b < 256; ++b) inv[byte_map().to_cp[b]] = b;
    return inv;
  }();
  return cp < inverse.size() ? inverse[cp] : -1;
}

void bpe_encode(const Tokenizer::Impl& t, std::string_view text, std::vector<int64_t>& out) {
  for (const std::string& word : bpe_pre_split(text, t.pre)) {
    std::string mapped;
    for (char c : word) utf8_append(byte_to_cp(static_cast<uint8_t>(c)), mapped);
    Session(t, mapped).run(out);
  }
}

}  // namespace rlx::tok
