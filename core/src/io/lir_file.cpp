// LIR programs on disk: the text, and the constants too large for it in safetensors side files
// beside it (`rlx compile -o` writes model.lir and its side files this way).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "rlx/core/error.h"
#include "rlx/core/model_files.h"
#include "rlx/core/lir.h"
#include "rlx/core/safetensors.h"

namespace rlx::lir {

namespace {

namespace fs = std::filesystem;

// The side file of copied constants: `text_path` + ".safetensors". Side files are named relative
// to the text, so a folder can be moved as a whole.
fs::path side_file(const fs::path& text_path) { return fs::path(text_path.string() + ".safetensors"); }

// `to` becomes the file `from` (a hard link: no bytes copied; a copy where the two folders are on
// different file systems or linking is refused). An existing `to` that already is `from` stays.
void link_or_copy(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  if (fs::exists(to, ec) && fs::equivalent(from, to, ec)) return;
  fs::remove(to, ec);
  fs::create_hard_link(from, to, ec);
  if (!ec) return;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec)
    throw_user_error(fmt::format("cannot copy the weights {} to {}: {}", from.string(), to.string(),
                                 ec.message()));
}

// The side files the text of `text_path` may have named before: "model.lir.safetensors" and
// "model.lir.<name>.safetensors".
bool is_side_file_name(const std::string& name, const std::string& text_name) {
  return name.starts_with(text_name + ".") && name.ends_with(".safetensors");
}

// Every file name an external<"file": ...> of the text names.
std::set<std::string> files_named(const std::string& text) {
  std::set<std::string> out;
  const std::string mark = "external<\"";
  for (size_t at = text.find(mark); at != std::string::npos; at = text.find(mark, at + 1)) {
    size_t begin = at + mark.size(), end = text.find('"', begin);
    if (end != std::string::npos) out.insert(text.substr(begin, end - begin));
  }
  return out;
}

}  // namespace

std::vector<std::string> write_program(const std::string& path, const Program& p) {
  const fs::path text_path(path);
  const fs::path dir = text_path.has_parent_path() ? text_path.parent_path() : fs::path(".");
  const std::string text_name = text_path.filename().string();
  ExternalData external;
  external.file = side_file(text_path).filename().string();
  std::map<std::string, fs::path> linked;  // side name -> the weights file it is
  external.locate = [&](const Tensor& t) -> std::optional<std::pair<std::string, std::string>> {
    std::optional<TensorOrigin> origin = mapped_origin(t);
    if (!origin) return std::nullopt;
    std::string name = text_name + "." + origin->file.filename().string();
    auto [it, fresh] = linked.emplace(name, origin->file);
    if (!fresh && it->second != origin->file) return std::nullopt;  // two sources, one name
    return std::make_pair(name, origin->name);
  };
  std::string text = print_program(p, &external);

  // Side files of an earlier program that this one does not use would mislead a reader.
  std::vector<std::string> sides;
  if (!external.tensors.empty()) sides.push_back(external.file);
  for (const auto& [name, from] : linked) sides.push_back(name);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (is_side_file_name(name, text_name) &&
        std::find(sides.begin(), sides.end(), name) == sides.end())
      fs::remove(entry.path(), ec);
  }
  if (!external.tensors.empty())
    write_safetensors(dir / external.file, external.tensors, {{"format", "rlx-lir-constants"}});
  for (const auto& [name, from] : linked) link_or_copy(from, dir / name);

  std::ofstream out(text_path, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw_user_error(fmt::format("cannot write {}", path));
  return sides;
}

Program read_program(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_user_error(fmt::format("cannot read {}", path));
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  const fs::path text_path(path);
  const fs::path dir = text_path.has_parent_path() ? text_path.parent_path() : fs::path(".");
  ExternalData external;
  external.file = side_file(text_path).filename().string();
  // Only the files the text names are mapped, not copied.
  for (const std::string& name : files_named(text)) {
    if (name.find('/') != std::string::npos || name == "." || name == "..")
      throw_user_error(fmt::format("{} names the side file \"{}\": side files are plain file "
                                   "names beside the text",
                                   path, name));
    std::error_code ec;
    if (!fs::exists(dir / name, ec))
      throw_user_error(fmt::format("{} keeps constants in {}, which is missing: copy it beside "
                                   "the text, or compile again",
                                   path, (dir / name).string()));
    const fs::path side = file_in_model_folder(dir, name, path + " (side file)");
    if (name == external.file) external.tensors = map_safetensors(side);
    else external.other_files[name] = map_safetensors(side);
  }
  return parse_program(text, path, &external);
}

}  // namespace rlx::lir
