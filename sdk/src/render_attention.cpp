// Attention kernels for the GPU-style dialects (render.h: render_attention), written once from the
// dialect table.
//
// One work-item per query row: it keeps its q row and its output row in private arrays and walks
// the keys once, folding each score into a running maximum and sum (online softmax), so the
// [B, H, Sq, Sk] scores of the decomposition are never written to memory and the four kernels it
// takes (two products, a max and a sum pass) become one launch. Neighbouring work-items are
// neighbouring queries of one head: they read the same key and value rows at the same time, which
// a GPU's caches serve once. Rows of up to kMaxDim elements: beyond that the private arrays would
// spill out of registers, and a target claims Attention natively only up to it.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "render_parts.h"
#include "rlx/core/error.h"
#include "rlx/sdk/render.h"

namespace rlx::sdk {

namespace {

class AttentionWriter {
 public:
  AttentionWriter(const AttentionShape& s, const Dialect& d)
      : s_(s), t_(d, fmt::format("attention {}", s.name)) {
    if (s_.batch <= 0 || s_.heads <= 0 || s_.kv_heads <= 0 || s_.q_len <= 0 || s_.kv_len <= 0 ||
        s_.head_dim <= 0 || s_.v_dim <= 0 || s_.heads % s_.kv_heads)
      t_.fail("the shape does not fit one attention");
    for (DType dt : {s_.q_dtype, s_.k_dtype, s_.v_dtype, s_.out_dtype})
      if (!detail::single_float(dt))
        t_.fail(fmt::format("{} is not f16, bf16 or f32", dtype_name(dt)));
    if (s_.mask != "none" && s_.mask != "causal" && s_.mask != "padding")
      t_.fail(fmt::format("unknown mask \"{}\"", s_.mask));
    if (s_.mask == "padding" &&
        (s_.mask_buffer < 0 || (s_.mask_batch != 1 && s_.mask_batch != s_.batch) ||
         (s_.mask_len != 1 && s_.mask_len != s_.kv_len)))
      t_.fail(fmt::format("the padding mask [{}, {}] does not fit [{}, {}]", s_.mask_batch,
                          s_.mask_len, s_.batch, s_.kv_len));
    f32_ = t_.entry(d.compute_type, DType::kF32, "compute type");
  }

  AttentionKernel render() {
    const int64_t rows = s_.batch * s_.heads * s_.q_len;
    const int64_t group = s_.heads / s_.kv_heads;
    const std::string lowest = t_.f32_literal(std::numeric_limits<float>::lowest());
    t_.open(
        kernel_symbol(s_.name), params(),
        fmt::format(
            "{}: attention q [{}, {}, {}, {}] k, v [{}, {}, {}, {}|{}], mask {}, scale {}, online "
            "softmax in f32",
            kernel_symbol(s_.name), s_.batch, s_.heads, s_.q_len, s_.head_dim, s_.batch,
            s_.kv_heads, s_.kv_len, s_.head_dim, s_.v_dim, s_.mask, s_.scale));
    t_.work_item("row", rows);
    t_.let("qi", fmt::format("row % {}", s_.q_len));
    t_.let("bh", fmt::format("row / {}", s_.q_len));
    t_.let("bi", fmt::format("bh / {}", s_.heads));
    t_.let("kvh", fmt::format("bi * {} + (bh % {}) / {}", s_.kv_heads, s_.heads, group));
    t_.let("kbase", fmt::format("kvh * {}", s_.kv_len * s_.head_dim));
    t_.let("vbase", fmt::format("kvh * {}", s_.kv_len * s_.v_dim));
    t_.array(f32_, "qrow", s_.head_dim);
    t_.loop("d", s_.head_dim);
    t_.line(fmt::format("qrow[d] = {};", t_.load(s_.q_buffer, s_.q_dtype,
                                                 fmt::format("row * {} + d", s_.head_dim))));
    t_.close();
    t_.array(f32_, "acc", s_.v_dim);
    t_.loop("d", s_.v_dim);
    t_.line(fmt::format("acc[d] = {};", zero()));
    t_.close();
    t_.declare_mutable(f32_, "run_max", lowest);
    t_.declare_mutable(f32_, "run_sum", zero());
    const std::string scale = t_.f32_literal(static_cast<float>(s_.scale));

    t_.loop("j", s_.kv_len);
    t_.declare_mutable(f32_, "dot", zero());
    t_.loop("d", s_.head_dim);
    t_.line(fmt::format("dot = {};",
                        t_.multiply_add("qrow[d]",
                                        t_.load(s_.k_buffer, s_.k_dtype,
                                                fmt::format("kbase + j * {} + d", s_.head_dim)),
                                        "dot")));
    t_.close();
    // Scaled after the product, as the decomposition multiplies the scores by an f32 constant.
    t_.declare(f32_, "score", fmt::format("dot * {}", scale));
    const std::string keep = keep_condition();
    t_.declare(f32_, "kept", keep.empty() ? "score" : t_.choose(keep, "score", lowest));
    t_.declare(f32_, "new_max", t_.choose("kept > run_max", "kept", "run_max"));
    t_.declare(f32_, "rescale", fmt::format("{}(run_max - new_max)", t_.math("exp")));
    t_.declare(f32_, "weight", fmt::format("{}(kept - new_max)", t_.math("exp")));
    t_.line(fmt::format("run_sum = {};", t_.multiply_add("run_sum", "rescale", "weight")));
    t_.loop("d", s_.v_dim);
    t_.line(fmt::format(
        "acc[d] = {};",
        t_.multiply_add(
            "weight", t_.load(s_.v_buffer, s_.v_dtype, fmt::format("vbase + j * {} + d", s_.v_dim)),
            "acc[d] * rescale")));
    t_.close();
    t_.line("run_max = new_max;");
    t_.close();

    t_.loop("d", s_.v_dim);
    t_.line(t_.store(s_.out_buffer, s_.out_dtype, fmt::format("row * {} + d", s_.v_dim),
                     "acc[d] / run_sum"));
    t_.close();
    return {t_.finish(), rows};
  }

 private:
  const AttentionShape& s_;
  detail::KernelText t_;
  std::string f32_;

  std::string zero() const { return t_.f32_literal(0.0); }

  // q, k, v (and the mask) may share a buffer, as in Attention(x, x, x); out is its own.
  std::vector<BufferParam> params() const {
    std::vector<std::pair<int32_t, DType>> used = {{s_.q_buffer, s_.q_dtype},
                                                   {s_.k_buffer, s_.k_dtype},
                                                   {s_.v_buffer, s_.v_dtype},
                                                   {s_.out_buffer, s_.out_dtype}};
    if (s_.mask == "padding") used.push_back({s_.mask_buffer, s_.mask_dtype});
    int32_t count = 0;
    for (auto& [position, dtype] : used) {
      if (position < 0) t_.fail("a buffer has no parameter position");
      count = std::max(count, position + 1);
    }
    std::vector<BufferParam> ps(count);
    std::vector<bool> seen(count, false);
    for (auto& [position, dtype] : used) {
      const bool out = position == s_.out_buffer;
      if (seen[position] && (out || ps[position].dtype != dtype))
        t_.fail("the output must be its own buffer, and one buffer has one dtype");
      seen[position] = true;
      ps[position] = {position, dtype, out};
    }
    for (bool b : seen)
      if (!b) t_.fail("buffer positions must be numbered from 0 without gaps");
    return ps;
  }

  // Whether key j is visible to the row's query ("" when every key is).
  std::string keep_condition() const {
    if (s_.mask == "causal") return fmt::format("j <= qi + {}", s_.kv_len - s_.q_len);
    if (s_.mask != "padding") return "";
    std::string at =
        fmt::format("{}{}", s_.mask_batch == 1 ? "" : fmt::format("bi * {}", s_.mask_len),
                    s_.mask_len == 1 ? "" : (s_.mask_batch == 1 ? "j" : " + j"));
    if (at.empty()) at = "0";
    const Dialect& d = t_.dialect();
    std::string value = t_.load(s_.mask_buffer, s_.mask_dtype, at);
    if (s_.mask_dtype == DType::kBool) return value;
    const std::string& type = t_.entry(d.compute_type, s_.mask_dtype, "compute type");
    // Non-zero keeps (a NaN float too, as the decomposition's `ne 0`).
    return fmt::format("{} != {}", value, t_.cast(type, "0"));
  }
};

}  // namespace

AttentionKernel render_attention(const AttentionShape& shape, const Dialect& dialect) {
  return AttentionWriter(shape, dialect).render();
}

}  // namespace rlx::sdk
