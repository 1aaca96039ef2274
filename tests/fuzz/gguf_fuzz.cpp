// libFuzzer target: the GGUF reader on arbitrary bytes, then everything rlx derives from a file
// that parses: tensor bytes and their decoding, the tokenizer spec and a tokenizer built from it
// (encoding and decoding a fixed text), and the architecture mapping. Each step must succeed or
// throw rlx::Error; a crash, a sanitizer report or another exception is a bug.
#include <cstdint>
#include <vector>

#include "gguf_model.h"
#include "gguf_reader.h"
#include "gguf_tokenizer.h"
#include "rlx/core/error.h"
#include "rlx/core/quant.h"
#include "rlx/llm/tokenizer.h"

namespace {

template <typename F>
void guarded(F&& f) {
  try {
    f();
  } catch (const rlx::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rlx::gguf;
  std::optional<GgufFile> file;
  guarded([&] {
    file = parse_gguf({data, size}, "fuzz.gguf", ParseOptions{.allow_partial_blocks = true});
  });
  if (!file) return 0;
  for (const TensorInfo& t : file->tensors) {
    if (!t.problem.empty() || !t.type->quant || t.numel > (1 << 20)) continue;
    guarded([&] {
      auto bytes = file->bytes(t);
      std::vector<float> out(t.numel);
      rlx::quant::dequantize(*t.type->quant, bytes.data(), out.data(), t.numel);
    });
  }
  guarded([&] {
    if (auto spec = tokenizer_spec(*file)) {
      rlx::Tokenizer tok(*spec);
      std::vector<int64_t> ids = tok.encode("Hello, wörld! 你好 <s> 123\n\t ##x", true);
      tok.decode(ids, false);
    }
  });
  guarded([&] { map_architecture(*file); });
  return 0;
}
