// GgufWeights (tensors under Hugging Face names, views of the mapped file) and load_model.
#include "gguf_model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

#include "gguf_tokenizer.h"
#include "rlx/core/error.h"
#include "rlx/llm/tokenizer.h"

namespace rlx::gguf {

namespace {

// Rows of `bytes`, each `row_bytes` long, from the interleaved rotary layout back to halves:
// within each head of `rows / heads` rows, row 2j + i moves to i * (rows / heads / 2) + j.
std::vector<uint8_t> unpermute_rows(std::span<const uint8_t> bytes, int64_t rows, int64_t row_bytes,
                                    int64_t heads, const std::string& what) {
  if (heads <= 0 || rows % heads || (rows / heads) % 2)
    throw_user_error(
        fmt::format("{}: {} rows do not split into {} heads of an even size", what, rows, heads));
  const int64_t hd = rows / heads, half = hd / 2;
  std::vector<uint8_t> out(bytes.size());
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < half; ++j)
        std::memcpy(out.data() + (h * hd + i * half + j) * row_bytes,
                    bytes.data() + (h * hd + 2 * j + i) * row_bytes, row_bytes);
  return out;
}

Tensor owned_bytes(DType dtype, std::vector<int64_t> shape, const std::vector<uint8_t>& bytes) {
  Tensor t(dtype, std::move(shape));
  std::memcpy(t.data(), bytes.data(), bytes.size());
  return t;
}

}  // namespace

std::vector<std::string> GgufWeights::names() const {
  std::vector<std::string> out;
  for (const auto& [name, ref] : refs_) out.push_back(name);
  return out;
}

frontends::Weight GgufWeights::get(const std::string& name) const {
  auto it = refs_.find(name);
  if (it == refs_.end())
    throw_user_error(fmt::format("{}: the model needs weight '{}', which the file does not have",
                                 f_.source, name));
  const WeightRef& ref = it->second;
  const TensorInfo& t = *f_.tensor(ref.gguf_name);
  const std::string what = fmt::format("{}: tensor '{}'", f_.source, t.name);
  std::span<const uint8_t> bytes = f_.bytes(t);     // throws naming the tensor if it is unusable
  auto* data = const_cast<uint8_t*>(bytes.data());  // the mapping is copy-on-write
  std::shared_ptr<void> owner = std::const_pointer_cast<void>(f_.owner());
  frontends::Weight w;
  w.shape = t.shape();
  const int64_t rows = t.rows();
  const int64_t row_bytes = rows ? static_cast<int64_t>(t.nbytes) / rows : 0;
  std::vector<int64_t> raw_shape = {rows, row_bytes};
  if (t.ne.size() > 2 && ref.transform != Transform::kNone)
    throw_user_error(
        fmt::format("{}: expected a matrix or vector, got {} dims", what, t.ne.size()));

  if (t.type->dense) {
    if (ref.transform == Transform::kUnpermuteRope) {
      // A q/k bias is a vector: its elements are the rows to reorder.
      const bool vector = t.ne.size() == 1;
      const int64_t n = vector ? t.numel : rows;
      const int64_t nb = vector ? static_cast<int64_t>(dtype_size(*t.type->dense)) : row_bytes;
      w.dense =
          owned_bytes(*t.type->dense, w.shape, unpermute_rows(bytes, n, nb, ref.heads, what));
    } else {
      w.dense = Tensor::view(*t.type->dense, w.shape, data, owner);
    }
    return w;
  }
  // A block format: rows of bytes, decoded by DequantMatMul / DequantizeRows.
  w.qtype = std::string(t.type->name);
  if (ref.transform == Transform::kUnpermuteRope)
    w.raw =
        owned_bytes(DType::kU8, raw_shape, unpermute_rows(bytes, rows, row_bytes, ref.heads, what));
  else
    w.raw = Tensor::view(DType::kU8, raw_shape, data, owner);
  return w;
}

Model load_model(const std::filesystem::path& path) {
  GgufFile f = read_gguf(path);
  std::string why_no_tokenizer;
  std::optional<TokenizerSpec> tokenizer = tokenizer_spec(f, &why_no_tokenizer);
  Model model;
  if (f.tensors.empty()) {
    const Value* arch = f.find("general.architecture");
    model.architecture = arch && arch->as_string() ? *arch->as_string() : "gguf";
    model.metadata["gguf.vocab_only"] = "true";
  } else {
    ArchMapping mapping = map_architecture(f);
    GgufWeights weights(f, std::move(mapping.weights));
    model = frontends::build_model(mapping.config, weights);
  }
  // A tokenizer rlx cannot run (a BPE pre-tokenizer it lacks) does not stop the import: the
  // model still runs on token ids, and the reason is kept for `rlx generate --prompt` to show.
  if (tokenizer) {
    try {
      Tokenizer check(*tokenizer);
    } catch (const Error& e) {
      why_no_tokenizer = e.what();
      tokenizer.reset();
    }
  }
  model.tokenizer = std::move(tokenizer);
  if (!model.tokenizer) model.metadata["gguf.no_tokenizer"] = why_no_tokenizer;
  model.metadata["gguf.version"] = std::to_string(f.version);
  // Scalar metadata for `rlx` users; arrays (the vocabulary) stay in the tokenizer.
  for (const auto& [key, value] : f.kv)
    if (!value.is_array() && !model.metadata.count(key)) model.metadata[key] = value.str();
  return model;
}

}  // namespace rlx::gguf
