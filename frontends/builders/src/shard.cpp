#include "shard.h"

#include <fmt/format.h>

#include <cstring>
#include <regex>

#include "rlx/core/error.h"

namespace rlx::frontends::detail {

namespace {

// Which part of a weight a rank keeps; kOnce: a bias added after a product whose outputs are
// partial sums, kept by rank 0 and zero elsewhere, so the AllReduce adds it once.
enum class Split { kNone, kRows, kColumns, kOnce };

struct Rule {
  Split split;
  int64_t parts;  // the split dim's size on the whole model
};

class ShardedWeights final : public WeightSource {
 public:
  ShardedWeights(const WeightSource& source, const TransformerConfig& c, const TensorParallel& tp)
      : source_(source), c_(c), tp_(tp) {}
  bool has(const std::string& name) const override { return source_.has(name); }
  std::vector<std::string> names() const override { return source_.names(); }

  Weight get(const std::string& name) const override {
    Weight w = source_.get(name);
    const Rule rule = rule_for(name);
    if (rule.split == Split::kNone) return w;
    if (!w.qtype.empty() || w.scale.defined())
      throw_user_error(fmt::format(
          "tensor parallelism splits dense checkpoints only, and {} of {} is stored {}; "
          "run the unquantized model with --tp, or run this one without it",
          name, c_.source, w.qtype.empty() ? "as int8" : "in the block format " + w.qtype));
    if (rule.split == Split::kOnce) {
      if (tp_.rank != 0) w.dense = Tensor(w.dense.dtype(), w.dense.shape());  // zeros
      return w;
    }
    w.dense = slice(w.dense, rule, name);
    w.shape = w.dense.shape();
    return w;
  }

 private:
  Rule rule_for(const std::string& name) const {
    // Decoders (Hugging Face names) and bert: what is split by heads, by MLP columns, and the
    // products whose inputs are split (their outputs are partial sums).
    static const std::regex kHeads(
        R"(\.self_attn\.(q|k|v)_proj\.(weight|bias)$|\.attention\.self\.(query|key|value)\.(weight|bias)$)");
    static const std::regex kMlpIn(
        R"(\.mlp\.(gate|up)_proj\.(weight|bias)$|\.intermediate\.dense\.(weight|bias)$)");
    static const std::regex kAttnOut(R"(\.self_attn\.o_proj\.weight$|\.attention\.output\.dense\.weight$)");
    static const std::regex kMlpOut(R"(\.mlp\.down_proj\.weight$|\.layer\.[0-9]+\.output\.dense\.weight$)");
    static const std::regex kOutBias(
        R"(\.self_attn\.o_proj\.bias$|\.mlp\.down_proj\.bias$|\.attention\.output\.dense\.bias$|\.layer\.[0-9]+\.output\.dense\.bias$)");
    std::smatch m;
    if (std::regex_search(name, m, kHeads)) {
      const bool kv = m[1] == "k" || m[1] == "v" || m[3] == "key" || m[3] == "value";
      const int64_t heads = kv && c_.arch != "bert" ? c_.kv_heads : c_.heads;
      return {Split::kRows, heads * c_.head_dim};
    }
    if (std::regex_search(name, kMlpIn)) return {Split::kRows, c_.intermediate};
    if (std::regex_search(name, kAttnOut)) return {Split::kColumns, c_.heads * c_.head_dim};
    if (std::regex_search(name, kMlpOut)) return {Split::kColumns, c_.intermediate};
    if (std::regex_search(name, kOutBias)) return {Split::kOnce, 0};
    if ((name == "model.embed_tokens.weight" || name == "lm_head.weight") &&
        splits_vocab(c_, tp_))
      return {Split::kRows, c_.vocab};
    return {Split::kNone, 0};
  }

  // Rows (dim 0) or columns (dim 1) [rank * n / size, (rank + 1) * n / size).
  Tensor slice(const Tensor& t, const Rule& rule, const std::string& name) const {
    const int64_t dim = rule.split == Split::kRows ? 0 : 1;
    if (t.rank() <= dim || t.shape()[dim] != rule.parts)
      throw_user_error(fmt::format("{} of {} is {}, not what the config implies for its split dim "
                                   "({})",
                                   name, c_.source, t.shape_str(), rule.parts));
    const int64_t part = rule.parts / tp_.size, begin = tp_.rank * part;
    std::vector<int64_t> shape = t.shape();
    shape[dim] = part;
    Tensor out(t.dtype(), shape);
    const size_t elem = dtype_size(t.dtype());
    const auto* src = static_cast<const uint8_t*>(t.data());
    auto* dst = static_cast<uint8_t*>(out.data());
    if (dim == 0) {
      const int64_t row = t.numel() / rule.parts;
      std::memcpy(dst, src + begin * row * elem, part * row * elem);
      return out;
    }
    const int64_t rows = t.shape()[0], cols = t.shape()[1];
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(dst + r * part * elem, src + (r * cols + begin) * elem, part * elem);
    return out;
  }

  const WeightSource& source_;
  TransformerConfig c_;  // the whole model's
  TensorParallel tp_;
};

}  // namespace

TransformerConfig shard_config(const TransformerConfig& c, const TensorParallel& tp) {
  auto refuse = [&](const std::string& why) {
    throw_user_error(fmt::format("--tp {}: {} ({})", tp.size, why, c.source));
  };
  if (tp.size < 1 || tp.rank < 0 || tp.rank >= tp.size)
    refuse(fmt::format("rank {} is not one of {} ranks", tp.rank, tp.size));
  if (c.heads % tp.size || (c.arch != "bert" && c.kv_heads % tp.size))
    refuse(fmt::format("the model has {} query and {} key/value heads; both must divide by the "
                       "number of ranks",
                       c.heads, c.kv_heads));
  if (c.intermediate % tp.size)
    refuse(fmt::format("the MLP's {} columns do not divide by the number of ranks", c.intermediate));
  TransformerConfig s = c;
  s.heads /= tp.size;
  if (c.arch != "bert") s.kv_heads /= tp.size;
  s.intermediate /= tp.size;
  s.tensor_parallel = tp.size;
  s.tensor_parallel_rank = tp.rank;
  s.vocab_parallel = splits_vocab(c, tp);
  return s;
}

bool splits_vocab(const TransformerConfig& c, const TensorParallel& tp) {
  return c.arch != "bert" && tp.size > 1 && c.vocab % tp.size == 0;
}

std::unique_ptr<WeightSource> shard_weights(const WeightSource& source, const TransformerConfig& c,
                                            const TensorParallel& tp) {
  return std::make_unique<ShardedWeights>(source, c, tp);
}

}  // namespace rlx::frontends::detail
