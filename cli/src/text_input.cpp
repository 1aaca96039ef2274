#include "text_input.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "errors.h"

namespace rlx::cli {

Tokenizer model_tokenizer(const Model& model, const std::string& option,
                          const std::string& ids_option) {
  if (!model.tokenizer) {
    const std::string hint = fmt::format("give token ids instead: {}", ids_option);
    if (auto it = model.metadata.find(kTokenizerProblemKey); it != model.metadata.end())
      throw CliError(fmt::format("--{} needs a tokenizer, and the {} model's is not supported: {}",
                                 option, model.architecture, it->second),
                     hint);
    throw CliError(fmt::format("--{} needs a tokenizer, and the {} model has none (no "
                               "tokenizer.json or vocab.txt beside its weights)",
                               option, model.architecture),
                   hint);
  }
  return Tokenizer(*model.tokenizer);
}

std::vector<std::string> read_lines(const std::string& path, const std::string& option) {
  namespace fs = std::filesystem;
  constexpr const char* kHint = "give a text file holding one sentence per line";
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw CliError(fmt::format("{} {} does not exist", option, path), kHint);
  if (fs::is_directory(path, ec))
    throw CliError(fmt::format("{} {} is a folder, not a file", option, path), kHint);
  errno = 0;
  std::ifstream f(path);
  if (!f)
    throw CliError(fmt::format("cannot read {} {}: {}", option, path,
                               errno ? std::strerror(errno) : "it cannot be opened"),
                   kHint);
  std::vector<std::string> lines;
  for (std::string line; std::getline(f, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(line);
  }
  if (lines.empty())
    throw CliError(fmt::format("{} {} has no non-empty line", option, path), kHint);
  return lines;
}

}  // namespace rlx::cli
