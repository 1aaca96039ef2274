// For now the graph's MIR text, which rlx reads back; the standalone C++ program against MLX's
// API is not written yet (docs/targets.md, mlx).
#include "program_writer.h"

#include <fmt/format.h>

#include <fstream>

#include "rlx/core/error.h"
#include "rlx/core/ir_text.h"

namespace rlx::mlx_target {

std::vector<Artifact> write_program(const Graph& g, const std::filesystem::path& dir) {
  const char* file = "model.mir";
  std::ofstream f(dir / file, std::ios::binary);
  f << print_graph(g);
  if (!f) throw_user_error(fmt::format("mlx: cannot write {}", (dir / file).string()));
  return {{file, "mir"}};
}

}  // namespace rlx::mlx_target
