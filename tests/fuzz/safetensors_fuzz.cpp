// libFuzzer target: the safetensors reader on arbitrary bytes. It must either return tensors or
// throw rlx::Error; anything else (a crash, a sanitizer report, another exception) is a bug.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "rlx/core/error.h"
#include "rlx/core/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The reader works on files (it maps them), so each input goes through a per-process file.
  static const std::string path = "/tmp/rlx_fuzz_safetensors_" + std::to_string(getpid());
  if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  try {
    rlx::TensorMap t = rlx::read_safetensors(path);
    for (auto& [name, tensor] : t)
      if (tensor.numel() > 0) (void)tensor.scalar_at(tensor.numel() - 1);  // touch the last byte
  } catch (const rlx::Error&) {
  }
  return 0;
}
