#include "hexagon_dialect.h"

#include <string>

#include "hexagon_runtime.h"
#include "rlx/core/error.h"

namespace rlx::hexagon {

namespace {

// Replaces the one line `from` of the C prelude; the C dialect changing its includes must be
// seen here, not silently kept.
void replace_line(std::string& text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  if (at == std::string::npos)
    throw_internal_error("hexagon: the C dialect's prelude no longer has '" + from + "'");
  text.replace(at, from.size(), to);
}

sdk::Dialect make_hexagon() {
  sdk::Dialect d = sdk::c_dialect();
  d.name = "hexagon-c";
  replace_line(d.prelude, "#include <math.h>\n",
               std::string("#include \"") + kRuntimeHeaderName + "\"\n");
  replace_line(d.prelude, "#include <string.h>\n", "");
  // Float sums and products accumulate in f64 and round once at the store, as on the cpu: v67
  // adds and multiplies doubles in hardware (dfadd, dfmpy), so this costs no library call. The
  // f64 row stays for that; f64 buffers are refused by legality (the runtime's math is f32).
  d.float_accumulator = DType::kF64;
  // Every select's condition goes through the runtime's rlx_keep (an empty asm): clang 14's
  // Hexagon backend turns `a > b ? a : b` into sfmax, which returns the other operand when one is
  // NaN, so the renderer's NaN-propagating max and min (and reductions) would lose the NaN.
  d.conditional = "(rlx_keep({c}) ? {t} : {f})";
  return d;
}

}  // namespace

const sdk::Dialect& hexagon_dialect() {
  static const sdk::Dialect d = make_hexagon();
  return d;
}

}  // namespace rlx::hexagon
