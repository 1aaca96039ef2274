// Bad Hugging Face folders: every error names the file, the key or tensor, and what is wrong.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

#include "hf_folder.h"
#include "model_support.h"
#include "rlx/core/error.h"

namespace rlx::test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string load_error(const fs::path& dir) {
  try {
    load_model(dir);
  } catch (const std::exception& e) {
    return e.what();
  }
  ADD_FAILURE() << "loading " << dir << " succeeded";
  return {};
}

// The tiny llama folder with its config text edited by `edit` (a regex replacement).
fs::path llama_with(const std::string& pattern, const std::string& replacement,
                    const std::string& name = "model") {
  TinyDecoder d;
  fs::path dir = fresh_dir(name);
  write_text(dir / "config.json",
             std::regex_replace(d.config_json(), std::regex(pattern), replacement));
  write_safetensors(dir / "model.safetensors", d.weights());
  return dir;
}

TEST(HfErrors, MissingConfigKey) {
  fs::path dir = llama_with(R"("hidden_size": 16,)", "");
  EXPECT_THAT(load_error(dir),
              HasSubstr((dir / "config.json").string() + ": 'hidden_size' is missing"));
}

TEST(HfErrors, WrongTypeOfConfigValue) {
  fs::path dir = llama_with(R"("num_hidden_layers": 2)", R"("num_hidden_layers": "two")");
  EXPECT_THAT(load_error(dir), HasSubstr("'num_hidden_layers' must be an integer, not string"));
}

TEST(HfErrors, ConfigIsNotJson) {
  fs::path dir = llama_with(R"(\}\s*$)", "");
  EXPECT_THAT(load_error(dir), HasSubstr((dir / "config.json").string() + ": not valid JSON"));
}

TEST(HfErrors, UnknownArchitecture) {
  fs::path dir = llama_with(R"("model_type": "llama")", R"("model_type": "gpt2")");
  EXPECT_THAT(load_error(dir), HasSubstr("'model_type' names 'gpt2', which rlx has no model "
                                         "builder for"));
}

// An empty model_type is not an absent one: the error names the key and the file, and says
// what belongs there, rather than blaming 'architectures'.
TEST(HfErrors, EmptyModelTypeNamesTheKeyAndTheFile) {
  fs::path dir = llama_with(R"("model_type": "llama")", R"("model_type": "")");
  EXPECT_THAT(load_error(dir), HasSubstr((dir / "config.json").string() +
                                         ": 'model_type' is empty; it names the model family"));
}

TEST(HfErrors, NeitherModelTypeNorArchitecturesSaysSo) {
  fs::path dir =
      llama_with(R"("architectures": \["LlamaForCausalLM"\], "model_type": "llama",)", "");
  EXPECT_THAT(load_error(dir), HasSubstr((dir / "config.json").string() +
                                         ": 'model_type' is missing, and no 'architectures'"));
}

TEST(HfErrors, RopeScalingIsRefused) {
  fs::path dir = llama_with(R"("rope_theta": 10000.0,)",
                            R"("rope_scaling": {"rope_type": "llama3", "factor": 8.0},)");
  EXPECT_THAT(load_error(dir), HasSubstr("'rope_scaling' asks for rope_type 'llama3'"));
}

TEST(HfErrors, HeadsNotAMultipleOfKvHeads) {
  fs::path dir = llama_with(R"("num_key_value_heads": 2)", R"("num_key_value_heads": 3)");
  EXPECT_THAT(load_error(dir), HasSubstr("num_attention_heads (4) is not a multiple of "
                                         "num_key_value_heads (3)"));
}

// Values that make every output NaN (and `generate` print token 0) are config errors naming the key.
TEST(HfErrors, NonPositiveEpsilonOrRopeBaseNamesTheKey) {
  fs::path dir = llama_with(R"("rms_norm_eps": [0-9.e-]+)", R"("rms_norm_eps": -1)");
  EXPECT_THAT(load_error(dir), HasSubstr("rms_norm_eps must be a positive finite number, got -1"));
  dir = llama_with(R"("rope_theta": [0-9.e+]+)", R"("rope_theta": -1)", "theta");
  EXPECT_THAT(load_error(dir), HasSubstr("rope_theta must be a positive finite number, got -1"));
}

TEST(HfErrors, MissingTensor) {
  TinyDecoder d;
  fs::path dir = fresh_dir("model");
  write_text(dir / "config.json", d.config_json());
  TensorMap w = d.weights();
  w.erase("model.layers.1.mlp.up_proj.weight");
  write_safetensors(dir / "model.safetensors", w);
  EXPECT_THAT(load_error(dir), HasSubstr("weight 'model.layers.1.mlp.up_proj.weight' is missing"));
}

TEST(HfErrors, UntiedModelWithoutLmHead) {
  TinyDecoder d;
  fs::path dir = fresh_dir("model");
  write_text(dir / "config.json", d.config_json());
  TensorMap w = d.weights();
  w.erase("lm_head.weight");
  write_safetensors(dir / "model.safetensors", w);
  EXPECT_THAT(load_error(dir), HasSubstr("weight 'lm_head.weight' is missing"));
}

TEST(HfErrors, TensorShapeDisagreesWithConfig) {
  fs::path dir = llama_with(R"("intermediate_size": 24)", R"("intermediate_size": 20)");
  EXPECT_THAT(load_error(dir),
              HasSubstr("weight 'model.layers.0.mlp.gate_proj.weight' has shape [24, 16], the "
                        "config implies [20, 16]"));
}

TEST(HfErrors, FloatSixtyFourWeightsAreNotNarrowedSilently) {
  TinyDecoder d;
  d.dtype = DType::kF64;
  fs::path dir = fresh_dir("model");
  write_text(dir / "config.json", d.config_json());
  write_safetensors(dir / "model.safetensors", d.weights());
  EXPECT_THAT(load_error(dir), HasSubstr("is f64; the model builders compute in f32"));
}

TEST(HfErrors, FolderWithoutWeights) {
  TinyDecoder d;
  fs::path dir = fresh_dir("model");
  write_text(dir / "config.json", d.config_json());
  EXPECT_THAT(load_error(dir), HasSubstr(dir.string() + ": the folder has no model.safetensors "
                                                        "and no model.safetensors.index.json"));
}

TEST(HfErrors, IndexNamesAMissingShard) {
  TinyDecoder d;
  fs::path dir = fresh_dir("model");
  write_text(dir / "config.json", d.config_json());
  write_text(dir / "model.safetensors.index.json",
             R"({"weight_map": {"model.norm.weight": "model-00001-of-00002.safetensors"}})");
  EXPECT_THAT(load_error(dir), HasSubstr("tensor 'model.norm.weight' is in shard"));
  EXPECT_THAT(load_error(dir), HasSubstr("which does not exist"));
}

// A shard is read only if it is a regular file inside the folder: a symlink out of it is refused.
TEST(HfErrors, IndexNamesAShardLinkedFromOutsideTheFolder) {
  TinyDecoder d;
  fs::path dir = fresh_dir("model"), outside = fresh_dir("elsewhere");
  write_text(dir / "config.json", d.config_json());
  write_safetensors(outside / "shard.safetensors", d.weights());
  fs::create_symlink(outside / "shard.safetensors", dir / "model-00001-of-00001.safetensors");
  write_text(dir / "model.safetensors.index.json",
             R"({"weight_map": {"model.norm.weight": "model-00001-of-00001.safetensors"}})");
  EXPECT_THAT(load_error(dir), HasSubstr("outside the model's folder"));
}

TEST(HfErrors, IndexListsATensorItsShardLacks) {
  TinyDecoder d;
  fs::path dir = fresh_dir("model");
  write_text(dir / "config.json", d.config_json());
  write_safetensors(dir / "a.safetensors", d.weights());
  write_text(dir / "model.safetensors.index.json",
             R"({"weight_map": {"model.norm.weight": "a.safetensors", "extra": "a.safetensors"}})");
  EXPECT_THAT(load_error(dir),
              HasSubstr("tensor 'extra' is listed in shard '" + (dir / "a.safetensors").string() +
                        "', which does not hold it"));
}

TEST(HfErrors, IndexMayNotLeaveTheFolder) {
  TinyDecoder d;
  fs::path dir = fresh_dir("model");
  write_text(dir / "config.json", d.config_json());
  write_text(dir / "model.safetensors.index.json",
             R"({"weight_map": {"model.norm.weight": "../elsewhere.safetensors"}})");
  EXPECT_THAT(load_error(dir), HasSubstr("which is not a file in the model folder"));
}

TEST(HfErrors, CorruptWeightsFileNamesTheFile) {
  TinyDecoder d;
  fs::path dir = fresh_dir("model");
  write_text(dir / "config.json", d.config_json());
  write_text(dir / "model.safetensors", "short");
  EXPECT_THAT(load_error(dir),
              HasSubstr((dir / "model.safetensors").string() + ": header too small"));
}

// A config with fewer layers than the checkpoint would run a different, shallower model.
TEST(HfErrors, ConfigWithFewerLayersThanTheCheckpointIsRefused) {
  TinyDecoder d;  // weights of 2 layers
  fs::path dir = llama_with(R"("num_hidden_layers": 2)", R"("num_hidden_layers": 1)");
  const std::string e = load_error(dir);
  EXPECT_THAT(e, HasSubstr("the checkpoint has layer 1 but num_hidden_layers is 1"));
  EXPECT_THAT(e, HasSubstr("model.layers.1.input_layernorm.weight"));
  // 9 tensors per llama layer: 2 norms, q/k/v/o, gate/up/down.
  EXPECT_THAT(e, HasSubstr("9 weights of the checkpoint would never be read"));
}

TEST(HfErrors, TensorNoGraphReadsIsNamed) {
  TinyDecoder d;
  fs::path dir = fresh_dir("model");
  write_text(dir / "config.json", d.config_json());
  TensorMap w = d.weights();
  w["model.layers.0.self_attn.q_norm.weight"] = random_tensor(DType::kF32, {4}, 1.0, 7);
  write_safetensors(dir / "model.safetensors", w);
  EXPECT_THAT(load_error(dir),
              HasSubstr("1 weight of the checkpoint would never be read (the config does not "
                        "describe the model these weights belong to): "
                        "model.layers.0.self_attn.q_norm.weight"));
}

// Buffers transformers recomputes and heads of other tasks are not part of the forward pass.
TEST(HfErrors, KnownBuffersAndHeadsMayStayUnread) {
  TinyDecoder d;
  fs::path dir = fresh_dir("decoder");
  write_text(dir / "config.json", d.config_json());
  TensorMap w = d.weights();
  w["model.layers.0.self_attn.rotary_emb.inv_freq"] = random_tensor(DType::kF32, {2}, 1.0, 8);
  write_safetensors(dir / "model.safetensors", w);
  EXPECT_NO_THROW(load_model(dir));

  TinyBert bert;
  bert.prefix = "bert.";
  fs::path bdir = fresh_dir("bert");
  write_text(bdir / "config.json", bert.config_json());
  TensorMap bw = bert.weights();
  bw["bert.embeddings.position_ids"] = random_tensor(DType::kF32, {1, 12}, 1.0, 9);
  bw["bert.pooler.dense.weight"] = random_tensor(DType::kF32, {16, 16}, 1.0, 10);
  bw["cls.predictions.bias"] = random_tensor(DType::kF32, {30}, 1.0, 11);
  write_safetensors(bdir / "model.safetensors", bw);
  EXPECT_NO_THROW(load_model(bdir));
}

// sentence-transformers' max_seq_length becomes metadata. The importer once read it through a
// pointer into a JSON document already freed (a heap-use-after-free under the asan preset).
TEST(HfErrors, SentenceTransformersMaxSeqLengthIsKept) {
  TinyBert bert;
  fs::path dir = fresh_dir("bert-st");
  write_text(dir / "config.json", bert.config_json());
  write_safetensors(dir / "model.safetensors", bert.weights());
  write_text(dir / "sentence_bert_config.json", R"({"max_seq_length": 8, "do_lower_case": false})");
  Model m = load_model(dir);
  EXPECT_EQ(m.metadata["max_seq_length"], "8");
}

TEST(HfErrors, LayerTypesOfAnotherLengthThanTheLayers) {
  fs::path dir = llama_with(R"("rope_theta": 10000.0,)",
                            R"("rope_theta": 10000.0, "layer_types": ["full_attention"],)");
  EXPECT_THAT(load_error(dir), HasSubstr("'layer_types' lists 1 layers, num_hidden_layers is 2"));
}

}  // namespace
}  // namespace rlx::test
