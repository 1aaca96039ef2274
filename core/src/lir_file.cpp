// LIR programs on disk: the text, and the constants too large for it in a safetensors side file
// beside it (`rlx compile -o` writes model.lir and model.lir.safetensors this way).
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "rlx/core/error.h"
#include "rlx/core/lir.h"
#include "rlx/core/safetensors.h"

namespace rlx::lir {

namespace {

namespace fs = std::filesystem;

// The side file of `text_path`, and the name the text records for it (relative to the text, so a
// folder can be moved as a whole).
fs::path side_file(const fs::path& text_path) { return fs::path(text_path.string() + ".safetensors"); }

}  // namespace

void write_program(const std::string& path, const Program& p) {
  const fs::path side = side_file(path);
  ExternalData external;
  external.file = side.filename().string();
  std::string text = print_program(p, &external);
  std::error_code ec;
  if (external.tensors.empty()) fs::remove(side, ec);  // a stale one would mislead a reader
  else write_safetensors(side, external.tensors, {{"format", "rlx-lir-constants"}});
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw_user_error(fmt::format("cannot write {}", path));
}

Program read_program(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_user_error(fmt::format("cannot read {}", path));
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  // Only a text that refers to a side file needs it.
  ExternalData external;
  const fs::path side = side_file(path);
  external.file = side.filename().string();
  if (text.find("external<") != std::string::npos) {
    std::error_code ec;
    if (!fs::exists(side, ec))
      throw_user_error(fmt::format("{} keeps its constants in {}, which is missing: copy it beside "
                                   "the text, or compile again",
                                   path, side.string()));
    external.tensors = map_safetensors(side);
  }
  return parse_program(text, path, &external);
}

}  // namespace rlx::lir
