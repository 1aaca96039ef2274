#include "hexagon_program.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <variant>

#include "hexagon_dialect.h"
#include "hexagon_runtime.h"
#include "hvx_dot.h"
#include "module_plan.h"
#include "rlx/core/error.h"
#include "rlx/sdk/render.h"

namespace rlx::hexagon {

namespace {

// 128 bytes: an HVX vector, so a vector load from the start of a buffer is aligned.
constexpr const char* kAligned = "__attribute__((aligned(128)))";

std::string array_name(int32_t id) {
  return fmt::format("rlx_b{}", id);
}

std::string byte_initializer(const Tensor& data) {
  const auto* bytes = static_cast<const unsigned char*>(data.data());
  std::string out;
  out.reserve(data.nbytes() * 5);
  for (size_t i = 0; i < data.nbytes(); ++i) {
    out += fmt::format("{},", bytes[i]);
    if (i % 32 == 31) out += "\n  ";
  }
  return out;
}

// RLX_HEXAGON_HVX=0 writes every dot_general as the scalar loop kernel, for comparing the two
// (bench/hexagon); anything else, or unset, uses HVX where hvx_dot.h applies.
bool hvx_enabled() {
  const char* v = std::getenv("RLX_HEXAGON_HVX");
  return !v || std::string(v) != "0";
}

}  // namespace

std::string input_file(size_t j, const std::string& name) {
  return fmt::format("in{}_{}.bin", j, sdk::kernel_symbol(name));
}
std::string output_file(size_t j, const std::string& name) {
  return fmt::format("out{}_{}.bin", j, sdk::kernel_symbol(name));
}

ProgramSources render_hexagon_program(const lir::Program& p) {
  const sdk::Dialect& dialect = hexagon_dialect();
  ProgramSources s;
  s.kernels = dialect.prelude + "\n";
  std::vector<std::string> symbols;
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    if (const auto* loop = std::get_if<lir::LoopKernel>(&p.kernels[i])) {
      s.kernels += sdk::render_kernel(*loop, p, dialect) + "\n";
      symbols.push_back(sdk::kernel_symbol(*loop));
      continue;
    }
    const auto& call = std::get<lir::CallKernel>(p.kernels[i]);
    if (call.callee != "dot_general")
      throw Error(ErrorKind::kCompile,
                  fmt::format("hexagon has no kernel for the library call {} ({}): "
                              "its legality should have refused it",
                              call.callee, call.loc));
    const std::string name = sdk::kernel_symbol(fmt::format("k{}_dot_general", i));
    if (auto hvx = hvx_enabled() ? hvx_dot_kernel(call, p, name) : std::nullopt) {
      s.kernels += *hvx + "\n";
      symbols.push_back(name);
    } else {
      const lir::LoopKernel loop = gpu_host::dot_general_kernel(call, p, name);
      s.kernels += sdk::render_kernel(loop, p, dialect) + "\n";
      symbols.push_back(sdk::kernel_symbol(loop));
    }
  }

  std::string& d = s.driver;
  d = fmt::format(
      "// The driver of an rlx program for Hexagon: buffers, file I/O, kernels in order.\n"
      "#include \"{}\"\n\n",
      kRuntimeHeaderName);
  for (const std::string& symbol : symbols)
    d += fmt::format("void {}(char* const* buffers);\n", symbol);
  d += fmt::format("\nstatic uint8_t rlx_arena[{}] {};\n", std::max<int64_t>(p.arena_bytes, 1),
                   kAligned);
  std::string setup;
  for (const lir::Buffer& b : p.buffers) {
    if (p.storage_of(b.id) != b.id) continue;  // aliases use their storage's entry
    const int64_t bytes = std::max<int64_t>(b.nbytes(), 1);
    switch (b.kind) {
      case lir::BufferKind::kTemp:
        setup += fmt::format("  rlx_buffers[{}] = (char*)rlx_arena + {};\n", b.id, b.arena_offset);
        continue;
      case lir::BufferKind::kConstant:
        d += fmt::format("static const uint8_t {}[{}] {} = {{\n  {}}};  // constant {}\n",
                         array_name(b.id), bytes, kAligned, byte_initializer(b.data), b.name);
        break;
      default:
        d += fmt::format("static uint8_t {}[{}] {};  // {}\n", array_name(b.id), bytes, kAligned,
                         b.name);
        break;
    }
    setup += fmt::format("  rlx_buffers[{}] = (char*){};\n", b.id, array_name(b.id));
  }
  d += fmt::format("static char* rlx_buffers[{}];\n\nvoid _start(void) {{\n{}",
                   std::max<size_t>(p.buffers.size(), 1), setup);
  for (size_t j = 0; j < p.inputs.size(); ++j) {
    const lir::Buffer& b = p.buffers.at(p.inputs[j].second);
    d += fmt::format("  rlx_read_file(\"{}\", rlx_buffers[{}], {});\n",
                     input_file(j, p.inputs[j].first), p.storage_of(b.id), b.nbytes());
  }
  for (const std::string& symbol : symbols) d += fmt::format("  {}(rlx_buffers);\n", symbol);
  for (size_t j = 0; j < p.outputs.size(); ++j) {
    const lir::Buffer& b = p.buffers.at(p.outputs[j].second);
    d += fmt::format("  rlx_write_file(\"{}\", rlx_buffers[{}], {});\n",
                     output_file(j, p.outputs[j].first), p.storage_of(b.id), b.nbytes());
  }
  d += "  rlx_exit(0);\n}\n";
  return s;
}

std::vector<std::string> write_program(const ProgramSources& sources,
                                       const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const std::vector<std::pair<std::string, const char*>> files = {
      {kKernelsFile, sources.kernels.c_str()},
      {kDriverFile, sources.driver.c_str()},
      {kRuntimeHeaderName, kRuntimeHeader},
      {kRuntimeSourceName, kRuntimeSource}};
  std::vector<std::string> names;
  for (const auto& [name, text] : files) {
    std::ofstream out(dir / name, std::ios::binary);
    out << text;
    if (!out.flush())
      throw Error(ErrorKind::kUser, "hexagon: cannot write " + (dir / name).string());
    names.push_back(name);
  }
  return names;
}

}  // namespace rlx::hexagon
