// A GGUF file as an rlx::Model: general.architecture picks the mapping of metadata keys to a
// TransformerConfig and of GGUF tensor names ("blk.0.attn_q.weight") to the Hugging Face names
// the model builders ask for ("model.layers.0.self_attn.q_proj.weight"); tokenizer.ggml.*
// becomes the model's TokenizerSpec. Quantized tensors reach the builders still quantized.
#pragma once
#include <filesystem>
#include <map>
#include <string>

#include "gguf_reader.h"
#include "rlx/core/model.h"
#include "rlx/frontends/builders.h"

namespace rlx::gguf {

// How a GGUF tensor becomes the weight a builder asks for.
enum class Transform {
  kNone,
  // llama: convert_hf_to_gguf interleaves the two rotary halves of each head's q/k rows
  // (llama.cpp rotates adjacent pairs); the builders rotate halves, so the rows go back.
  kUnpermuteRope,
};

struct WeightRef {
  std::string gguf_name;
  Transform transform = Transform::kNone;
  int64_t heads = 0;  // kUnpermuteRope: heads in the rows
};

struct ArchMapping {
  frontends::TransformerConfig config;
  std::map<std::string, WeightRef> weights;  // Hugging Face name -> GGUF tensor
};

// Throws a user error naming the file and the key or tensor when the architecture is not one
// rlx maps (llama, gemma3, bert) or its metadata is missing or inconsistent.
ArchMapping map_architecture(const GgufFile& f);

// The builders' view of the file's tensors under Hugging Face names.
class GgufWeights final : public frontends::WeightSource {
 public:
  GgufWeights(const GgufFile& f, std::map<std::string, WeightRef> refs)
      : f_(f), refs_(std::move(refs)) {}
  bool has(const std::string& name) const override { return refs_.count(name) > 0; }
  frontends::Weight get(const std::string& name) const override;
  std::vector<std::string> names() const override;

 private:
  const GgufFile& f_;
  std::map<std::string, WeightRef> refs_;
};

// The whole import: the model's graphs (through rlx::frontends::build_model), metadata and
// tokenizer. A vocabulary-only file (no tensors) gives a model with a tokenizer and no graphs.
// Without a usable tokenizer, metadata "gguf.no_tokenizer" says why.
Model load_model(const std::filesystem::path& path);

}  // namespace rlx::gguf
