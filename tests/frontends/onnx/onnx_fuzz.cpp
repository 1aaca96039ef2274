// libFuzzer target: the ONNX importer on arbitrary bytes (built by tests/fuzz/fuzz_project,
// targets/onnx.cmake). It must return a model or throw rlx::Error; a crash, a sanitizer report
// or any other exception is a bug.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

#include "rlx/onnx/import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // External data resolves against an empty folder, so no input can make the importer read a
  // real file.
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("rlx_fuzz_onnx_" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  try {
    rlx::Model m = rlx::onnx::import_bytes(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.onnx", dir);
    (void)m.graph().nodes.size();
  } catch (const rlx::Error& e) {
    // The importer turns its own bugs into internal errors rather than crashing; the fuzzer
    // still reports them.
    if (e.kind() == rlx::ErrorKind::kInternal) {
      std::fprintf(stderr, "%s\n", e.what());
      __builtin_trap();
    }
  }
  return 0;
}
