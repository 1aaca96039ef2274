// The weights of a Hugging Face folder: model.safetensors, or the shards that
// model.safetensors.index.json lists. Files are mapped, not read: a tensor is a view of the
// mapping (see rlx::map_safetensors), so loading costs page faults for the weights used only.
#pragma once
#include <filesystem>
#include <map>
#include <string>

#include "rlx/core/safetensors.h"
#include "rlx/frontends/builders.h"

namespace rlx::frontends {

class Checkpoint final : public WeightSource {
 public:
  Checkpoint(Checkpoint&&) = default;  // moving a std::map keeps where_'s pointers valid
  Checkpoint(const Checkpoint&) = delete;
  Checkpoint& operator=(const Checkpoint&) = delete;

  // Throws a user error naming the folder when it holds neither file, and naming the index, the
  // shard or the tensor when they disagree.
  static Checkpoint open(const std::filesystem::path& folder);

  bool has(const std::string& name) const override { return where_.count(name) != 0; }
  Weight get(const std::string& name) const override;
  std::vector<std::string> names() const override;
  // "model.safetensors" or "model.safetensors.index.json (3 shards)", for messages.
  const std::string& description() const { return description_; }

 private:
  Checkpoint() = default;
  std::filesystem::path folder_;
  std::string description_;
  std::map<std::string, TensorMap> shards_;     // file name -> its tensors
  std::map<std::string, const Tensor*> where_;  // tensor name -> its data in shards_
};

}  // namespace rlx::frontends
