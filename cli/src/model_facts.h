// What `rlx info` says about a model, gathered from the imported Model without compiling it or
// touching its weights' bytes (sizes come from the params' types, so a mapped file stays
// unread). info.cpp prints these facts as text or JSON; both show the same ones.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "rlx/core/input_limits.h"
#include "rlx/core/model.h"

namespace rlx::cli {

using KeyValues = std::vector<std::pair<std::string, std::string>>;

struct GraphFacts {
  std::string name;
  int64_t nodes = 0;
  std::vector<std::pair<std::string, TensorType>> inputs, outputs;
};

// A symbolic dim of the graphs' inputs and how a command gives it a size.
struct SymbolFacts {
  std::string name;
  std::string meaning;  // "batch", "sequence length", "KV-cache capacity"; empty when unknown
  std::string bind;     // "--batch N or --bind B=N"
  std::vector<std::string> graphs;
};

// Weights of one storage kind: a dtype ("f32") or a block format ("q8_0").
struct WeightGroup {
  std::string kind;
  bool quantized = false;
  int64_t tensors = 0, elements = 0, bytes = 0;
};

struct ModelFacts {
  std::string format;    // "Hugging Face folder (config.json + safetensors)", "GGUF v3", ...
  std::string importer;  // the plugin that read it; empty for rlx IR text
  std::string architecture;
  KeyValues architecture_details;  // model_type, general.architecture, producer, opset ...
  std::vector<GraphFacts> graphs;  // main first, then the others by name
  std::vector<SymbolFacts> symbols;
  KeyValues fixed_dims;  // sizes the importer fixed from --bind
  bool has_tokenizer = false;
  std::string tokenizer_kind, tokenizer_note;  // kind when present; why not when absent
  int64_t tokenizer_vocab = 0;
  std::vector<WeightGroup> weights;  // dense dtypes first, then block formats
  int64_t parameters = 0, weight_bytes = 0;
  WeightGroup constants;  // small tensors inlined in the graphs (ONNX shapes, scalars)
  InputLimits limits;
  KeyValues metadata;  // the rest of Model::metadata, values cut to kMetadataValueChars
};

inline constexpr size_t kMetadataValueChars = 96;

// `importer` is the plugin that read `path` ("" for IR text).
ModelFacts describe_model(const Model& model, const std::string& path, const std::string& importer);

}  // namespace rlx::cli
