// A compiled program of the hexagon target in test mode: the ELF is built once, in a temporary
// folder of its own; each run writes the inputs there as files, runs the ELF under the emulator
// and reads the outputs back. Constants are in the image, temporaries in its arena.
#pragma once
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "rlx/core/lir.h"
#include "rlx/core/target.h"

namespace rlx::hexagon {

class HexagonExecutable final : public Executable {
 public:
  HexagonExecutable(const lir::Program& program, const std::string& clang, std::string emulator);
  ~HexagonExecutable() override;
  HexagonExecutable(const HexagonExecutable&) = delete;
  HexagonExecutable& operator=(const HexagonExecutable&) = delete;

  void run(const std::vector<void*>& buffers) override;

 private:
  struct Io {
    std::string file;
    int32_t buffer;
    int64_t bytes;
  };
  std::vector<Io> inputs_, outputs_;
  std::string emulator_;
  std::filesystem::path dir_;
  std::mutex running_;  // one folder of files per executable: runs take turns
};

}  // namespace rlx::hexagon
