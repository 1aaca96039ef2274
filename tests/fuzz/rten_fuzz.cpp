// libFuzzer target: the rten importer on arbitrary bytes (built by tests/fuzz/fuzz_project,
// targets/rten.cmake). It must return a model or throw rlx::Error; a crash, a sanitizer report,
// an out-of-bounds read or an internal error is a bug. Seeds: corpus/rten plus the conformance
// silero_vad.rten.
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "rlx/rten/import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    rlx::Model m = rlx::rten::import_bytes(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.rten");
    (void)m.graph().nodes.size();
  } catch (const rlx::Error& e) {
    if (e.kind() == rlx::ErrorKind::kInternal) {
      std::fprintf(stderr, "%s\n", e.what());
      __builtin_trap();
    }
  }
  return 0;
}
