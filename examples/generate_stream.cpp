// Loads a decoder (a Hugging Face folder or a GGUF file), generates greedily on the cpu target
// and prints each token the moment it is chosen, through the decoding loop's token callback: the
// public API behind `rlx generate`.
//
//   rlx_example_generate_stream MODEL (--prompt TEXT | --ids 1,2,3) [-n N] [--plugin-path DIR]
//
// With --prompt the model's tokenizer encodes it and each token is printed as text; with --ids
// (for models without a tokenizer) each token is printed as its id, one per line.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "rlx/core/error.h"
#include "rlx/llm/decoding.h"
#include "rlx/llm/text_stream.h"
#include "rlx/llm/tokenizer.h"
#include "rlx/registry/registry.h"

namespace {

std::vector<int64_t> comma_ids(const char* text) {
  std::vector<int64_t> ids;
  for (const char* p = text; *p;) {
    char* end = nullptr;
    ids.push_back(std::strtoll(p, &end, 10));
    p = *end == ',' ? end + 1 : end;
    if (end == p && *p) break;
  }
  return ids;
}

}  // namespace

int main(int argc, char** argv) {
  rlx::registry::Options options;
  const char* model_path = nullptr;
  const char* prompt = nullptr;
  const char* ids = nullptr;
  int64_t new_tokens = 16;
  for (int i = 1; i < argc; ++i) {
    auto value = [&] { return i + 1 < argc ? argv[++i] : nullptr; };
    if (std::strcmp(argv[i], "--plugin-path") == 0) {
      if (const char* v = value()) options.plugin_paths.push_back(v);
    } else if (std::strcmp(argv[i], "--prompt") == 0) {
      prompt = value();
    } else if (std::strcmp(argv[i], "--ids") == 0) {
      ids = value();
    } else if (std::strcmp(argv[i], "-n") == 0) {
      if (const char* v = value()) new_tokens = std::atoll(v);
    } else {
      model_path = argv[i];
    }
  }
  if (!model_path || (!prompt == !ids)) {
    std::fprintf(stderr,
                 "usage: %s MODEL (--prompt TEXT | --ids 1,2,3) [-n N] [--plugin-path DIR]\n",
                 argv[0]);
    return 2;
  }
  try {
    auto registry = rlx::registry::Registry::discover(options);
    auto importer = registry.importer_for(model_path);
    if (!importer) {
      std::fprintf(stderr, "error: no importer reads %s\n", model_path);
      return 1;
    }
    rlx::Model model = importer->load(model_path, {});

    std::vector<int64_t> prompt_ids;
    std::optional<rlx::Tokenizer> tokenizer;
    if (prompt) {
      if (!model.tokenizer) {
        std::fprintf(stderr, "error: %s has no tokenizer; give --ids\n", model_path);
        return 1;
      }
      tokenizer.emplace(*model.tokenizer);
      prompt_ids = tokenizer->encode(prompt, /*add_special=*/true);
    } else {
      prompt_ids = comma_ids(ids);
    }
    rlx::Tensor prompt_tensor(rlx::DType::kI64, {1, static_cast<int64_t>(prompt_ids.size())});
    for (size_t i = 0; i < prompt_ids.size(); ++i) prompt_tensor.as<int64_t>()[i] = prompt_ids[i];

    rlx::llm::Decoder decoder(model, registry.target("cpu"));
    rlx::llm::DecodeOptions decode;
    decode.max_new_tokens = new_tokens;
    decode.stop_ids = rlx::llm::end_of_text_ids(model);
    // TextStream gives out whole characters: a token may end inside one that the next token
    // completes.
    std::optional<rlx::llm::TextStream> text;
    if (tokenizer) text.emplace(*tokenizer);
    decode.on_token = [&](int64_t /*row*/, int64_t token) {
      if (text)
        std::fputs(text->add(token).c_str(), stdout);
      else
        std::printf("%lld\n", static_cast<long long>(token));
      std::fflush(stdout);
    };
    rlx::llm::DecodeResult result = decoder.run(prompt_tensor, decode);
    if (text) std::printf("%s\n", text->finish().c_str());
    const double per_token =
        result.decode_steps > 0 ? result.decode_seconds / result.decode_steps : 0;
    std::fprintf(stderr, "%zu tokens; %.2f ms per decode step\n", result.tokens[0].size(),
                 per_token * 1e3);
    return 0;
  } catch (const rlx::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
