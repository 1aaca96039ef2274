#include "checkpoint.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "json_file.h"
#include "quantized_weights.h"
#include "rlx/core/model_files.h"
#include "rlx/core/error.h"

namespace rlx::frontends {

namespace fs = std::filesystem;

namespace {

constexpr const char* kSingle = "model.safetensors";
constexpr const char* kIndex = "model.safetensors.index.json";

// weight_map of the index: tensor name -> shard file name (relative to the folder).
std::map<std::string, std::string> read_index(const fs::path& path) {
  json::Value root = read_json_file(path);
  const json::Value* map = root.find("weight_map");
  if (!map || !map->as_object())
    throw_user_error(fmt::format("{}: 'weight_map' must be an object of tensor name -> file name",
                                 path.string()));
  std::map<std::string, std::string> out;
  for (const auto& [tensor, file] : *map->as_object()) {
    const std::string* f = file.as_string();
    if (!f)
      throw_user_error(fmt::format("{}: weight_map entry '{}' must be a file name string, not {}",
                                   path.string(), tensor, file.kind()));
    // Shards live beside the index; a path that leaves the folder is refused.
    if (f->empty() || f->find('/') != std::string::npos || *f == "." || *f == "..")
      throw_user_error(
          fmt::format("{}: weight_map entry '{}' names '{}', which is not a file in "
                      "the model folder",
                      path.string(), tensor, *f));
    if (!out.emplace(tensor, *f).second)
      throw_user_error(
          fmt::format("{}: weight_map lists tensor '{}' twice", path.string(), tensor));
  }
  return out;
}

}  // namespace

Checkpoint Checkpoint::open(const fs::path& folder) {
  Checkpoint c;
  c.folder_ = folder;
  std::error_code ec;
  if (fs::exists(folder / kIndex, ec)) {
    std::map<std::string, std::string> index = read_index(folder / kIndex);
    for (const auto& [tensor, file] : index)
      if (!c.shards_.count(file)) {
        fs::path shard = folder / file;
        if (!fs::exists(shard, ec))
          throw_user_error(fmt::format("{}: tensor '{}' is in shard '{}', which does not exist",
                                       (folder / kIndex).string(), tensor, shard.string()));
        c.shards_.emplace(file, map_safetensors(file_in_model_folder(
                                    folder, file, fmt::format("{}: shard", (folder / kIndex).string()))));
      }
    for (const auto& [tensor, file] : index) {
      const TensorMap& shard = c.shards_.at(file);
      auto it = shard.find(tensor);
      if (it == shard.end())
        throw_user_error(
            fmt::format("{}: tensor '{}' is listed in shard '{}', which does not "
                        "hold it",
                        (folder / kIndex).string(), tensor, (folder / file).string()));
      c.where_.emplace(tensor, &it->second);
    }
    c.description_ = fmt::format("{} ({} shards)", kIndex, c.shards_.size());
  } else if (fs::exists(folder / kSingle, ec)) {
    c.shards_.emplace(kSingle, map_safetensors(folder / kSingle));
    for (const auto& [tensor, t] : c.shards_.at(kSingle)) c.where_.emplace(tensor, &t);
    c.description_ = kSingle;
  } else {
    throw_user_error(fmt::format("{}: the folder has no {} and no {}: nothing to load weights from",
                                 folder.string(), kSingle, kIndex));
  }
  return c;
}

std::vector<std::string> Checkpoint::names() const {
  // The scales and zero points of a quantized weight are part of that weight (get() returns
  // them with it), not tensors of their own.
  std::vector<std::string> out;
  for (const auto& [name, t] : where_)
    if (!quantized_part(name, [&](const std::string& n) { return has(n); })) out.push_back(name);
  return out;
}

Weight Checkpoint::get(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end())
    throw_user_error(
        fmt::format("{}: tensor '{}' is not in {}", folder_.string(), name, description_));
  Weight w;
  w.dense = *it->second;
  w.shape = w.dense.shape();
  if (has(name + kScaleSuffix))
    read_quantized(name, w, [&](const std::string& n) -> const Tensor* {
      auto f = where_.find(n);
      return f == where_.end() ? nullptr : f->second;
    });
  return w;
}

}  // namespace rlx::frontends
