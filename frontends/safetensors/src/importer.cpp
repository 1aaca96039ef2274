// The safetensors importer plugin. A folder is a Hugging Face model (config.json picks the
// builder, the safetensors files hold the weights); a single file is tensors only.
#include "checkpoint.h"
#include "hf_config.h"
#include "json_file.h"
#include "rlx/frontends/builders.h"
#include "rlx/sdk/plugin.h"
#include "tensor_file.h"
#include "tokenizer_files.h"

namespace rlx::frontends {
namespace {

// config.json's own words for the model (model_type, architectures), kept for `rlx info`: the
// builder's family ("gemma3") is rlx's name and loses the class a checkpoint was saved from.
void record_config_names(const std::filesystem::path& folder, Model& m) {
  const json::Value doc = read_json_file(folder / "config.json");  // named: find() points into it
  if (const json::Value* t = doc.find("model_type"); t && t->as_string())
    m.metadata["config.model_type"] = *t->as_string();
  std::string classes;
  if (const json::Value* a = doc.find("architectures"); a && a->as_array())
    for (const json::Value& c : *a->as_array())
      if (const std::string* s = c.as_string()) classes += (classes.empty() ? "" : ",") + *s;
  if (!classes.empty()) m.metadata["config.architectures"] = classes;
}

class SafetensorsImporter final : public sdk::ImporterPlugin {
 public:
  std::string name() const override { return "safetensors"; }

  // Its dims stay symbolic and no input decides a shape, so of the options only the
  // tensor-parallel shard matters here.
  Model load(const std::filesystem::path& path, const ImportOptions& options) override {
    std::error_code ec;
    if (!std::filesystem::is_directory(path, ec)) return load_tensor_file(path);
    TransformerConfig config = read_hf_config(path);
    Checkpoint weights = Checkpoint::open(path);
    config.source = path.string() + "/" + weights.description();
    Model m = build_model(config, weights, options.tensor_parallel, options.pipeline_parallel);
    m.metadata["source"] = path.string();
    record_config_names(path, m);
    TokenizerFiles tokenizer = read_tokenizer_files(path, config);
    m.tokenizer = std::move(tokenizer.spec);
    if (!tokenizer.unsupported.empty()) m.metadata[kTokenizerProblemKey] = tokenizer.unsupported;
    // Under GGUF's key, so `rlx chat` finds a template the same way in both formats.
    if (!tokenizer.chat_template.empty())
      m.metadata["tokenizer.chat_template"] = tokenizer.chat_template;
    // sentence-transformers cuts texts at its own max_seq_length (all-MiniLM-L6-v2: 256, below
    // the 512 positions), and `rlx embed --text` cuts where it does.
    std::filesystem::path st = path / "sentence_bert_config.json";
    if (std::filesystem::is_regular_file(st, ec)) {
      // Named: find() points into the document, which a temporary would free before use.
      const json::Value doc = read_json_file(st);
      if (const json::Value* n = doc.find("max_seq_length"); n && n->as_number())
        if (std::optional<int64_t> v = n->as_number()->as_i64(); v && *v > 0)
          m.metadata["max_seq_length"] = std::to_string(*v);
    }
    return m;
  }
};

}  // namespace
}  // namespace rlx::frontends

RLX_DEFINE_IMPORTER_PLUGIN(rlx::frontends::SafetensorsImporter)
