// Loads a sentence-transformers folder (all-MiniLM-L6-v2, say), embeds sentences on the cpu
// target and prints the cosine similarity of each pair: the public API behind `rlx embed --text`.
//
//   rlx_example_embed_sentences MODEL_DIR SENTENCE SENTENCE... [--plugin-path DIR]
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "rlx/core/error.h"
#include "rlx/llm/embedding.h"
#include "rlx/registry/registry.h"

int main(int argc, char** argv) {
  rlx::registry::Options options;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--plugin-path") == 0 && i + 1 < argc)
      options.plugin_paths.push_back(argv[++i]);
    else
      positional.push_back(argv[i]);
  }
  if (positional.size() < 3) {
    std::fprintf(stderr, "usage: %s MODEL_DIR SENTENCE SENTENCE... [--plugin-path DIR]\n", argv[0]);
    return 2;
  }
  try {
    auto registry = rlx::registry::Registry::discover(options);
    // The importer is the plugin whose manifest claims the folder (config.json + safetensors).
    auto importer = registry.importer_for(positional[0]);
    if (!importer) {
      std::fprintf(stderr, "error: no importer reads %s\n", positional[0].c_str());
      return 1;
    }
    rlx::Model model = importer->load(positional[0], {});

    rlx::llm::SentenceEncoder encoder(model, registry.target("cpu"));
    std::vector<std::string> sentences(positional.begin() + 1, positional.end());
    rlx::Tensor embeddings = encoder.embed(sentences);  // f32[n, hidden], unit rows

    const int64_t width = embeddings.shape()[1];
    const float* e = embeddings.as<float>();
    for (size_t i = 0; i < sentences.size(); ++i)
      for (size_t j = i + 1; j < sentences.size(); ++j)
        std::printf("%.6f\t%zu\t%zu\n",
                    rlx::llm::cosine_similarity(e + i * width, e + j * width, width), i, j);
    return 0;
  } catch (const rlx::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
