// safetensors files: how the CLI exchanges tensors with users. Reading validates the header the
// way the reference reader does and names the file and tensor in every error.
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "rlx/core/tensor.h"

namespace rlx {

using TensorMap = std::map<std::string, Tensor>;

TensorMap read_safetensors(const std::filesystem::path& path);
// Validates exactly as read_safetensors, but returns tensors that view a copy-on-write mapping
// of the file (zero-copy; writes stay private) wherever the data is aligned for its element type,
// and copies only the others. For model weights: the mapping lives as long as any tensor, and
// truncating the file while it is mapped faults the reader, as with any mmap-based loader.
TensorMap map_safetensors(const std::filesystem::path& path);
// Where a tensor that map_safetensors returned lies on disk: its file (absolute) and name there.
// Only while its mapping lives, the file at that path is still the one mapped (device, inode,
// size, modification time) and none of the tensor's pages were written in memory; otherwise
// nullopt, and the caller copies the data instead of referring to the file.
struct TensorOrigin {
  std::filesystem::path file;
  std::string name;
};
std::optional<TensorOrigin> mapped_origin(const Tensor& t);

void write_safetensors(const std::filesystem::path& path, const TensorMap& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace rlx
