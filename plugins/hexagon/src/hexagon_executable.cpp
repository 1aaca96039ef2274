#include "hexagon_executable.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <fstream>
#include <system_error>

#include "hexagon_program.h"
#include "hexagon_toolchain.h"
#include "rlx/core/error.h"

namespace rlx::hexagon {

namespace fs = std::filesystem;

HexagonExecutable::HexagonExecutable(const lir::Program& program, const std::string& clang,
                                     std::string emulator)
    : emulator_(std::move(emulator)) {
  const ProgramSources sources = render_hexagon_program(program);
  std::string pattern = (fs::temp_directory_path() / "rlx-hexagon-XXXXXX").string();
  if (!::mkdtemp(pattern.data()))
    throw Error(ErrorKind::kDevice, "hexagon: cannot make a temporary folder under " +
                                        fs::temp_directory_path().string() + " for its program");
  dir_ = pattern;
  try {
    write_program(sources, dir_);
    build_program(clang, dir_);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
    throw;
  }
  for (size_t j = 0; j < program.inputs.size(); ++j) {
    const lir::Buffer& b = program.buffers.at(program.inputs[j].second);
    inputs_.push_back({input_file(j, program.inputs[j].first), b.id, b.nbytes()});
  }
  for (size_t j = 0; j < program.outputs.size(); ++j) {
    const lir::Buffer& b = program.buffers.at(program.outputs[j].second);
    outputs_.push_back({output_file(j, program.outputs[j].first), b.id, b.nbytes()});
  }
}

HexagonExecutable::~HexagonExecutable() {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

void HexagonExecutable::run(const std::vector<void*>& buffers) {
  std::lock_guard<std::mutex> lock(running_);
  for (const Io& in : inputs_) {
    std::ofstream out(dir_ / in.file, std::ios::binary);
    out.write(static_cast<const char*>(buffers.at(in.buffer)), in.bytes);
    if (!out.flush())
      throw Error(ErrorKind::kDevice, "hexagon: cannot write " + (dir_ / in.file).string());
  }
  for (const Io& o : outputs_) fs::remove(dir_ / o.file);
  run_program(emulator_, dir_);
  for (const Io& o : outputs_) {
    std::ifstream in(dir_ / o.file, std::ios::binary);
    in.read(static_cast<char*>(buffers.at(o.buffer)), o.bytes);
    if (in.gcount() != o.bytes)
      throw Error(ErrorKind::kDevice,
                  fmt::format("hexagon: the program wrote {} bytes of {} ({} expected)",
                              in.gcount(), o.file, o.bytes));
  }
}

}  // namespace rlx::hexagon
