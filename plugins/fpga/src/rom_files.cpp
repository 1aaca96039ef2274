// The $readmemh files of a layer: one hexadecimal word per line, two's complement, in the
// address order of layer_module's ROMs.
#include <fmt/format.h>

#include <fstream>

#include "design.h"
#include "rlx/core/error.h"

namespace rlx::fpga {

namespace {

void write_lines(const std::filesystem::path& file, const std::string& text) {
  std::ofstream f(file, std::ios::binary);
  f << text;
  if (!f) throw_user_error(fmt::format("fpga: cannot write {}", file.string()));
}

}  // namespace

std::vector<std::string> write_roms(const Layer& l, size_t i, int32_t p,
                                    const std::filesystem::path& dir) {
  const int32_t c = chunks_per_output(l, p);
  std::string weights, bias, mult, shift;
  for (int32_t n = 0; n < l.n; ++n) {
    for (int32_t chunk = 0; chunk < c; ++chunk) {
      // Lane j sits in bits [8j+7:8j], so the last lane is written first; lanes past k are 0.
      for (int32_t j = p - 1; j >= 0; --j) {
        const int32_t k = chunk * p + j;
        const int8_t w = k < l.k ? l.w[static_cast<size_t>(n) * l.k + k] : int8_t{0};
        weights += fmt::format("{:02x}", static_cast<uint8_t>(w));
      }
      weights += '\n';
    }
    bias += fmt::format("{:08x}\n", static_cast<uint32_t>(l.bias[n]));
    if (l.int8_out) {
      mult += fmt::format("{:08x}\n", static_cast<uint32_t>(l.m[n]));
      shift += fmt::format("{:02x}\n", static_cast<uint8_t>(l.r[n]));
    }
  }
  std::vector<std::string> files{rom_file(i, "weights"), rom_file(i, "bias")};
  write_lines(dir / files[0], weights);
  write_lines(dir / files[1], bias);
  if (l.int8_out) {
    files.push_back(rom_file(i, "mult"));
    files.push_back(rom_file(i, "shift"));
    write_lines(dir / files[2], mult);
    write_lines(dir / files[3], shift);
  }
  return files;
}

}  // namespace rlx::fpga
