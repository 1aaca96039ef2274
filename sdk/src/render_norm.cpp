// LayerNorm and RMSNorm kernels for the cooperative dialects (render.h: render_norm), written
// once from the dialect table like render_matmul.
//
// Their decompositions take a reduction kernel per statistic and an elementwise kernel to apply
// it: three launches and as many reads of each row for LayerNorm (mean, centred variance,
// normalise), plus the tiny [rows, 1] buffers between them. Here a group of 64 invocations owns
// one row: each adds the elements li, li + 64, ... and the group sums the 64 parts through
// shared memory (in a dialect with SIMD-group reductions, in registers within each SIMD group
// first, then one value per SIMD group). The row (a transformer's hidden size: a few KB) stays
// in the GPU's caches between the passes, so memory sees it read once and written once. The
// variance is of the centred row, as the decomposition computes it (no sum-of-squares shortcut,
// which cancels badly).
//
// Many short rows (a batch of sequences: 16384 rows of 384 at MiniLM's batch 128) go a row per
// SIMD group instead, where the dialect says its SIMD width: the lanes' sums combine in
// registers, with no shared memory and no barrier, and a group of 64 holds 64 / width rows. A
// group owning a row waited at two barriers per row, and its row's loads, reduction and stores
// ran one after another with nothing else of the group in flight.
#include <fmt/format.h>

#include "render_parts.h"
#include "rlx/core/error.h"
#include "rlx/sdk/render.h"

namespace rlx::sdk {

namespace {

constexpr int64_t kGroup = 64;
// A row per SIMD group from this many rows on (fewer rows are latency, which more lanes on a row
// shorten), up to this many elements a lane.
constexpr int64_t kSimdRowsFrom = 1024;
constexpr int64_t kMostPerLane = 32;

class NormWriter : detail::KernelText {
 public:
  NormWriter(const NormShape& s, const Dialect& d)
      : KernelText(d, fmt::format("{} {}", s.rms ? "RMSNorm" : "LayerNorm", s.name)), s_(s) {
    if (d_.shared_array.empty() || d_.barrier.empty() || d_.group_index.empty() ||
        d_.local_index.empty())
      fail("the dialect has no cooperative (workgroup-shared) kernels");
    if (d_.buffer_params != BufferParams::kOnePerBuffer)
      fail("norm kernels take one parameter per buffer");
    if (s_.rows <= 0 || s_.n <= 0) fail(fmt::format("the rows [{}, {}] are empty", s_.rows, s_.n));
    if (s_.rms && s_.bias_buffer >= 0) fail("RMSNorm takes no bias");
    for (DType dt : {s_.x_dtype, s_.scale_dtype, s_.bias_dtype, s_.out_dtype})
      if (dt != DType::kF32 && dt != DType::kF16 && dt != DType::kBF16)
        fail(fmt::format("{} is not f16, bf16 or f32", dtype_name(dt)));
    f32_ = entry(d_.compute_type, DType::kF32, "compute type");
    int_ = entry(d_.compute_type, DType::kI32, "compute type");
    if (has_simd() && d_.simd_width > 0 && kGroup % d_.simd_width == 0 &&
        s_.rows >= kSimdRowsFrom && s_.n <= d_.simd_width * kMostPerLane)
      lanes_ = d_.simd_width;
  }

  NormKernel render() {
    std::vector<BufferParam> params(static_cast<size_t>(
        std::max({s_.x_buffer, s_.scale_buffer, s_.bias_buffer, s_.out_buffer}) + 1));
    for (size_t j = 0; j < params.size(); ++j)
      params[j] = {static_cast<int32_t>(j), DType::kF32, false};
    params[s_.x_buffer].dtype = s_.x_dtype;
    if (s_.scale_buffer >= 0) params[s_.scale_buffer].dtype = s_.scale_dtype;
    if (s_.bias_buffer >= 0) params[s_.bias_buffer].dtype = s_.bias_dtype;
    params[s_.out_buffer] = {s_.out_buffer, s_.out_dtype, true};
    const std::string symbol = kernel_symbol(s_.name);
    // With SIMD-group sums each statistic has slots of its own (one per SIMD group: at most 64),
    // so the next one's writes need no barrier after the last one's reads.
    const std::string shared =
        simd_rows() ? ""
                    : shared_array(f32_, "rlx_red", has_simd() && !s_.rms ? 2 * kGroup : kGroup);
    const std::string rows_from =
        s_.x_rows_per_block > 0
            ? fmt::format(", x rows from element {} in blocks of {} every {}", s_.x_offset,
                          s_.x_rows_per_block, s_.x_block_stride)
            : "";
    open(symbol, params,
         fmt::format("{}: {} over rows [{}, {}], epsilon {}, {}, f32{}{}", symbol,
                     s_.rms ? "RMSNorm" : "LayerNorm", s_.rows, s_.n, s_.epsilon,
                     simd_rows() ? fmt::format("one SIMD group of {} per row", lanes_)
                                 : fmt::format("one group of {} per row", kGroup),
                     has_simd() ? ", SIMD-group sums" : "", rows_from),
         shared, /*cooperative=*/true, /*simd=*/has_simd());
    if (simd_rows()) {
      // The rows past the last (an odd count) compute a copy of the last one and store nothing.
      const int64_t per_group = kGroup / lanes_;
      group_ids((s_.rows + per_group - 1) / per_group, int_);
      declare(int_, "lane", cast(int_, d_.simd_lane));
      let("ri", fmt::format("gi * {} + {}", per_group, cast(d_.index_type, d_.simd_group)));
      let("r", choose(fmt::format("ri < {}", s_.rows), "ri", std::to_string(s_.rows - 1)));
    } else {
      group_ids(s_.rows, int_);
      let("r", "g");
    }
    // A SIMD group's row is at most kMostPerLane elements a lane: each lane keeps its share in
    // registers from the first pass, so the row is read from memory once, not once a pass.
    if (simd_rows()) array(f32_, "rlx_x", steps());
    let("base", fmt::format("r * {}", s_.n));
    if (s_.x_rows_per_block > 0)
      let("xbase", fmt::format("{} + (r / {}) * {} + (r % {}) * {}", s_.x_offset,
                               s_.x_rows_per_block, s_.x_block_stride, s_.x_rows_per_block, s_.n));
    const std::string n = f32_literal(static_cast<double>(s_.n));
    const std::string eps = f32_literal(s_.epsilon);
    if (s_.rms) {
      row_sum("part", [&](const std::string& x) { return x + " * " + x; });
      group_sum("part", "total", 0);
      declare(f32_, "inv",
              fmt::format("{} / {}", f32_literal(1.0),
                          math_call("sqrt", fmt::format("total / {} + {}", n, eps))));
      write([&](const std::string& x) { return fmt::format("{} * inv", x); });
    } else {
      row_sum("part", [](const std::string& x) { return x; });
      group_sum("part", "total", 0);
      declare(f32_, "mean", fmt::format("total / {}", n));
      row_sum("dev",
              [](const std::string& x) { return fmt::format("({0} - mean) * ({0} - mean)", x); });
      group_sum("dev", "squares", kGroup);
      declare(f32_, "inv",
              fmt::format("{} / {}", f32_literal(1.0),
                          math_call("sqrt", fmt::format("squares / {} + {}", n, eps))));
      write([&](const std::string& x) { return fmt::format("({} - mean) * inv", x); });
    }
    return {finish(), (s_.rows + kGroup / lanes_ - 1) / (kGroup / lanes_)};
  }

 private:
  const NormShape& s_;
  std::string f32_, int_;
  int64_t lanes_ = kGroup;  // invocations per row: the group's 64, or a SIMD group's width
  bool loaded_ = false;     // rlx_x holds this invocation's share of the row

  bool simd_rows() const { return lanes_ != kGroup; }

  std::string math_call(const std::string& op, const std::string& x) const {
    return fmt::format("{}({})", math(op), x);
  }
  std::string x_base() const { return s_.x_rows_per_block > 0 ? "xbase" : "base"; }
  // The trip count of a strided pass: elements i, i + lanes, ... below n, i the invocation's
  // index among its row's lanes.
  int64_t steps() const { return (s_.n + lanes_ - 1) / lanes_; }
  void element_index() {
    let("e", fmt::format("t * {} + {}", lanes_, simd_rows() ? "lane" : "li"));
  }
  std::string in_row() const { return s_.n % lanes_ == 0 ? "" : fmt::format("e < {}", s_.n); }

  // Element t of this invocation's share of the row: from memory, or from the registers an
  // earlier pass filled (SIMD-group rows).
  std::string x_at() const {
    return loaded_ ? "rlx_x[t]" : load(s_.x_buffer, s_.x_dtype, x_base() + " + e");
  }

  // `part` = the sum of term(x) over this invocation's elements of the row.
  template <class Term>
  void row_sum(const std::string& part, Term term) {
    declare_mutable(f32_, part, f32_literal(0.0));
    loop("t", steps());
    element_index();
    const std::string x = x_at();
    if (in_row().empty()) {
      declare(f32_, "x", x);
      line(fmt::format("{} = {} + {};", part, part, term("x")));
    } else {  // past the row: no read (WGSL's select reads both, and WebGPU clamps the read)
      declare(f32_, "x", choose(in_row(), x, f32_literal(0.0)));
      line(fmt::format("{} = {} + {};", part, part, choose(in_row(), term("x"), f32_literal(0.0))));
    }
    if (simd_rows() && !loaded_) line("rlx_x[t] = x;");
    close();
    loaded_ = simd_rows();
  }

  void group_sum(const std::string& part, const std::string& total, int64_t slots) {
    if (simd_rows())
      declare(f32_, total, simd_sum(part));
    else
      KernelText::group_sum(part, total, slots, "rlx_red", kGroup, int_);
  }

  // out = value(x) * scale + bias over the row, stored by the rows that exist.
  template <class Value>
  void write(Value value) {
    loop("t", steps());
    element_index();
    std::string y = value(x_at());
    if (s_.scale_buffer >= 0)
      y = fmt::format("({}) * {}", y, load(s_.scale_buffer, s_.scale_dtype, "e"));
    if (s_.bias_buffer >= 0) y = fmt::format("{} + {}", y, load(s_.bias_buffer, s_.bias_dtype, "e"));
    std::string ok = fmt::format("{} < {}", simd_rows() ? "ri" : "gi", s_.rows);
    if (!in_row().empty()) ok += " && " + in_row();
    line(fmt::format("if ({}) {{", ok));
    line("  " + store(s_.out_buffer, s_.out_dtype, "base + e", y));
    line("}");
    close();
  }
};

}  // namespace

NormKernel render_norm(const NormShape& shape, const Dialect& dialect) {
  return NormWriter(shape, dialect).render();
}

}  // namespace rlx::sdk
