// A norm's output element computed where a prologue loads it (render.h, NormedRead): the
// loading work-item sums its row of x itself. A decode step's k norm is over rows of one head
// (64 or 128 elements), so the sums are a few cached loads where the norm's own launch cost as
// much as a small product; the rotation that reads the element loads two of a row.
#include <fmt/format.h>

#include "render_parts.h"
#include "rlx/core/error.h"

namespace rlx::sdk::detail {

namespace {

// KernelText's statements, from `indent` levels, without a kernel around them.
class Statements : public KernelText {
 public:
  Statements(const Dialect& d, int indent) : KernelText(d, "a norm computed by a prologue") {
    indent_ = indent;
  }
  std::string text() { return std::move(out_); }
};

}  // namespace

std::string normed_read(const NormedRead& r, const lir::Program& program, const Dialect& d,
                        const std::string& index, const std::string& guard, const std::string& name,
                        int indent) {
  Statements t(d, indent);
  const std::string f32 = t.entry(d.compute_type, DType::kF32, "f32 type");
  auto dtype = [&](int32_t b) { return program.buffers.at(b).dtype; };
  const std::string i = name + "_i", base = name + "_b", j = name + "_j", x = name + "_x";
  t.let(i, index);  // the element of the norm's output
  const std::string row = fmt::format("({} / {})", i, r.n), col = fmt::format("({} % {})", i, r.n);
  t.let(base, r.x_rows_per_block > 0
                  ? fmt::format("{} + ({} / {}) * {} + ({} % {}) * {}", r.x_offset, row,
                                r.x_rows_per_block, r.x_block_stride, row, r.x_rows_per_block, r.n)
                  : fmt::format("{} * {}", row, r.n));
  const std::string n = t.f32_literal(static_cast<double>(r.n));
  // sum = the sum of term(x) over the row, in order; nothing is read where the guard fails.
  auto pass = [&](const std::string& sum, auto term) {
    t.declare_mutable(f32, sum, t.f32_literal(0.0));
    if (!guard.empty()) t.if_block(guard);
    t.loop(j, r.n);
    t.declare(f32, x, t.load(r.x, dtype(r.x), base + " + " + j));
    t.line(fmt::format("{0} = {0} + {1};", sum, term(x)));
    t.close();
    if (!guard.empty()) t.close();
  };
  const std::string sum = name + "_s", mean = name + "_m", dev = name + "_d";
  if (r.rms) {
    pass(sum, [](const std::string& v) { return v + " * " + v; });
  } else {
    pass(sum, [](const std::string& v) { return v; });
    t.declare(f32, mean, fmt::format("{} / {}", sum, n));
    pass(dev,
         [&](const std::string& v) { return fmt::format("({0} - {1}) * ({0} - {1})", v, mean); });
  }
  const std::string inv = name + "_v";
  t.declare(f32, inv,
            fmt::format("{} / {}({} / {} + {})", t.f32_literal(1.0), t.math("sqrt"),
                        r.rms ? sum : dev, n, t.f32_literal(r.epsilon)));
  const std::string own = t.load(r.x, dtype(r.x), base + " + " + col);
  std::string y =
      r.rms ? fmt::format("{} * {}", own, inv) : fmt::format("({} - {}) * {}", own, mean, inv);
  if (r.scale >= 0) y = fmt::format("({}) * {}", y, t.load(r.scale, dtype(r.scale), col));
  if (r.bias >= 0) y = fmt::format("{} + {}", y, t.load(r.bias, dtype(r.bias), col));
  if (r.out_dtype != DType::kF32)  // rounded as the norm's store rounds it
    y = fmt::format(
        fmt::runtime(t.entry(d.load, r.out_dtype, "load conversion")),
        fmt::arg("x", fmt::format(fmt::runtime(t.entry(d.store, r.out_dtype, "store conversion")),
                                  fmt::arg("x", y))));
  t.declare(f32, name, guard.empty() ? y : t.choose(guard, y, t.f32_literal(0.0)));
  return t.text();
}

}  // namespace rlx::sdk::detail
