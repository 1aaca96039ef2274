// libFuzzer target: a Hugging Face folder through the safetensors importer's code (config.json,
// tokenizer.json, model.safetensors -> TransformerConfig, TokenizerSpec, weights, model
// builders). The input holds the three files separated by kSeparator lines. Loading must either
// give a Model or throw rlx::Error; anything else (a crash, a sanitizer report, another
// exception) is a bug.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

#include "checkpoint.h"
#include "hf_config.h"
#include "rlx/core/error.h"
#include "rlx/frontends/builders.h"
#include "tokenizer_files.h"

namespace {

constexpr std::string_view kSeparator = "\n#rlx-file#\n";
constexpr const char* kFiles[] = {"config.json", "tokenizer.json", "model.safetensors"};

void write(const std::filesystem::path& p, std::string_view bytes) {
  if (std::FILE* f = std::fopen(p.c_str(), "wb")) {
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::filesystem::path dir = "/tmp/rlx_fuzz_hf_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  for (const char* name : kFiles) {
    size_t at = rest.find(kSeparator);
    std::string_view part = rest.substr(0, at);
    std::error_code ec;
    std::filesystem::remove(dir / name, ec);
    if (!part.empty() || at != std::string_view::npos) write(dir / name, part);
    rest = at == std::string_view::npos ? std::string_view{} : rest.substr(at + kSeparator.size());
  }
  try {
    rlx::frontends::TransformerConfig config = rlx::frontends::read_hf_config(dir);
    rlx::frontends::TokenizerFiles tokenizer = rlx::frontends::read_tokenizer_files(dir, config);
    (void)tokenizer;
    rlx::frontends::Checkpoint weights = rlx::frontends::Checkpoint::open(dir);
    rlx::Model m = rlx::frontends::build_model(config, weights);
    (void)m;
  } catch (const rlx::Error&) {
  }
  return 0;
}
