// Small Hugging Face model folders written by the tests: a config.json and random weights with
// the tensor names and shapes transformers uses, so the importer can be driven without fixtures.
#pragma once
#include <filesystem>
#include <string>

#include "rlx/core/safetensors.h"

namespace rlx::test {

struct TinyDecoder {
  std::string model_type = "llama";  // or "qwen3", "gemma3_text"
  int64_t sliding_window = 0;        // gemma3_text
  std::string layer_types;           // gemma3_text: JSON array text, e.g. ["sliding_attention"]
  int64_t vocab = 40, hidden = 16, layers = 2, heads = 4, kv_heads = 2, head_dim = 4;
  int64_t intermediate = 24;
  bool tied = false;
  DType dtype = DType::kF32;
  std::string config_json() const;
  TensorMap weights() const;
};

struct TinyBert {
  int64_t vocab = 30, hidden = 16, layers = 1, heads = 2, intermediate = 32, positions = 12;
  std::string prefix;          // "bert." as saved by BertForMaskedLM
  bool tf_norm_names = false;  // LayerNorm.gamma / .beta, as in checkpoints converted from TF
  DType dtype = DType::kF32;
  std::string config_json() const;
  TensorMap weights() const;
};

// A fresh folder under the test temp dir, removed by the caller.
std::filesystem::path fresh_dir(const std::string& name);
void write_text(const std::filesystem::path& path, const std::string& text);

// vocab.txt of a tiny uncased BERT: [PAD] [UNK] [CLS] [SEP] [MASK] hello world ##s ...
std::string bert_vocab_txt();
// tokenizer.json of a byte-level BPE: the 256 byte tokens (GPT-2's alphabet), then "hi" (256),
// " hi" (257) from two merges, and the special token "<|end|>" (258). `digits` is the \p{N}
// part of its split regex, which names the pre-tokenizer.
std::string byte_level_tokenizer_json(const std::string& digits);

// Deterministic values in [-scale, scale) of `dtype` (f32, f16, bf16, f64).
Tensor random_tensor(DType dtype, std::vector<int64_t> shape, double scale, uint64_t seed);

}  // namespace rlx::test
