// Files a model names from inside itself: ONNX external data, safetensors shards of an index, the
// side files of an LIR text. The model is untrusted input, so what it names must be a regular
// file inside the model's own folder once symlinks are resolved: a link to /etc/passwd would put
// that file's bytes in an output tensor, and a FIFO would block open() forever.
#pragma once
#include <filesystem>
#include <string>

namespace rlx {

// `folder / name`, checked: it exists, its real path lies inside the real path of `folder`, and
// it is a regular file. Throws a user error otherwise, naming `who` (the model file and field
// that named it), the name and what it resolved to. `name` is relative; callers refuse absolute
// names and ".." with their own words before calling.
std::filesystem::path file_in_model_folder(const std::filesystem::path& folder, const std::string& name,
                                           const std::string& who);

}  // namespace rlx
