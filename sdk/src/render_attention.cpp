// Attention kernels for the GPU-style dialects (render.h: render_attention), written once from the
// dialect table.
//
// Both keep a query's q row and output row in private arrays and walk the keys once, folding
// each score into a running maximum and sum (online softmax), so the [B, H, Sq, Sk] scores of the
// decomposition are never written to memory and the four kernels it takes (two products, a max
// and a sum pass) become one launch. Rows of up to kMaxAttentionRow elements (target_plugin.h):
// beyond that the private arrays would spill out of registers.
//
// Rows: one work-item per query row, reading keys and values from global memory. For a decode
// step (a few queries per head) nothing else fills a GPU better, and neighbouring work-items are
// the heads that share a kv head or the next query, so caches serve the repeated reads.
//
// Tiled: a group of 64 invocations owns 64 consecutive queries of one head. A tile of keys and
// values is one contiguous block of k and v ([Sk, D] row-major per kv head), so the group copies
// it into shared memory with consecutive invocations reading consecutive words, waits, and every
// invocation reads the same shared word at the same time (a broadcast, no bank conflicts). Each
// key is read from memory once per 64 queries instead of once per query: on an H200 at MiniLM's
// shape (128 queries, 32-element heads) the rows kernel spent its time waiting on those reads.
// Tiles fill at most 16 KB of shared memory (WebGPU's floor for workgroup storage). Under a causal
// mask a group stops after the last tile any of its queries sees.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "render_parts.h"
#include "rlx/core/error.h"
#include "rlx/sdk/render.h"

namespace rlx::sdk {

namespace {

constexpr int64_t kTiledQueries = 16;

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
    int_ = t_.entry(d.compute_type, DType::kI32, "compute type");
  }

  // One work-item per query row.
  AttentionKernel rows() {
    const int64_t rows = s_.batch * s_.heads * s_.q_len;
    t_.open(kernel_symbol(s_.name), params(), comment("rows"));
    t_.work_item("row", rows);
    t_.let("qi", fmt::format("row % {}", s_.q_len));
    t_.let("bh", fmt::format("row / {}", s_.q_len));
    head_bases();
    row_state("row");
    t_.loop("j", s_.kv_len);
    fold_key(
        [&](const std::string& d) {
          return t_.load(s_.k_buffer, s_.k_dtype,
                         fmt::format("kbase + j * {} + {}", key_stride(false), d));
        },
        [&](const std::string& d) {
          return t_.load(s_.v_buffer, s_.v_dtype,
                         fmt::format("vbase + j * {} + {}", key_stride(true), d));
        });
    t_.close();
    store_row("row", "");
    return {t_.finish(), ceil_div(rows, kGroup), "rows"};
  }

  // A SIMD group per query row (dialects with SIMD-group reductions): lane l folds keys l,
  // l + W, ... into a running maximum, sum and output row of its own, and the lanes' states merge
  // in registers: the row maximum m = simd_max(max_l), then simd_sum of each lane's sum and output
  // row rescaled by exp(max_l - m), as flash decoding merges the splits of a row. A decode step
  // has few rows (one per head), so this puts W lanes, not one, on each. Rows past the end leave
  // as a whole SIMD group, so every lane that reduces has its whole group with it.
  AttentionKernel simd_rows() {
    const Dialect& d = t_.dialect();
    const int64_t rows = s_.batch * s_.heads * s_.q_len, width = d.simd_width;
    const int64_t per_group = kGroup / width, groups = ceil_div(rows, per_group);
    const std::string variant = fmt::format("rows, a SIMD group of {} per row", width);
    t_.open(kernel_symbol(s_.name), params(), comment(variant), "", /*cooperative=*/true,
            /*simd=*/true);
    t_.let("row", fmt::format("{} * {} + {}", d.group_index, per_group,
                              t_.cast(d.index_type, d.simd_group)));
    t_.line(fmt::format("if (row >= {}) {{ return; }}", rows));
    t_.let("lane", t_.cast(d.index_type, d.simd_lane));
    t_.let("qi", fmt::format("row % {}", s_.q_len));
    t_.let("bh", fmt::format("row / {}", s_.q_len));
    head_bases();
    row_state("row");
    t_.loop("t", ceil_div(s_.kv_len, width));
    t_.let("j", fmt::format("t * {} + lane", width));
    if (s_.kv_len % width != 0) t_.if_block(fmt::format("j < {}", s_.kv_len));
    const int64_t k_stride = key_stride(false);
    const int64_t v_stride = key_stride(true);
    fold_key(
        [&](const std::string& e) {
          return t_.load(s_.k_buffer, s_.k_dtype, fmt::format("kbase + j * {} + {}", k_stride, e));
        },
        [&](const std::string& e) {
          return t_.load(s_.v_buffer, s_.v_dtype, fmt::format("vbase + j * {} + {}", v_stride, e));
        });
    if (s_.kv_len % width != 0) t_.close();
    t_.close();
    // A lane that saw no key holds (lowest, 0, zeros): its factor is exp(lowest - m) = 0, or 1
    // when every lane's maximum is lowest (a fully masked row), where its sum and row are 0.
    t_.declare(f32_, "row_max", t_.simd_max("run_max"));
    t_.declare(f32_, "factor", fmt::format("{}(run_max - row_max)", t_.math("exp")));
    t_.declare(f32_, "row_sum", t_.simd_sum("run_sum * factor"));
    t_.loop("d", s_.v_dim);
    t_.declare(f32_, "o", t_.simd_sum("acc[d] * factor"));
    t_.if_block(fmt::format("lane == d % {}", width));  // the lanes store the row's elements
    t_.line(t_.store(s_.out_buffer, s_.out_dtype, out_start("row") + " + d", "o / row_sum"));
    t_.close();
    t_.close();
    return {t_.finish(), groups, variant};
  }

  // 64 queries of one head to a group, keys and values staged in shared memory by tiles.
  AttentionKernel tiled() {
    const int64_t row_bytes = 4 * (s_.head_dim + s_.v_dim);
    int64_t tk = kGroup;  // keys per tile: a power of two, so a tile's copy splits evenly
    while (tk > 1 && tk * row_bytes > kSharedBytes) tk /= 2;
    if (tk * row_bytes > kSharedBytes) t_.fail("a key and value row do not fit in shared memory");
    const int64_t splits = key_splits(tk), per_group = kGroup / splits;
    const int64_t q_tiles = ceil_div(s_.q_len, per_group), groups = s_.batch * s_.heads * q_tiles;
    const int64_t k_tiles = ceil_div(s_.kv_len, tk);
    const std::string variant =
        splits == 1 ? fmt::format("tiled {} keys", tk)
                    : fmt::format("tiled {} keys, {} invocations a query", tk, splits);
    t_.open(kernel_symbol(s_.name), params(), comment(variant),
            t_.shared_array(f32_, "rlx_k", tk * s_.head_dim) +
                t_.shared_array(f32_, "rlx_v", tk * s_.v_dim),
            /*cooperative=*/true);
    t_.group_ids(groups, int_);
    t_.let("bh", fmt::format("g / {}", q_tiles));
    t_.let("q0", fmt::format("(g % {}) * {}", q_tiles, per_group));
    // Invocations past the last query compute a copy of it (every invocation copies tiles and
    // meets every barrier) and store nothing. With splits, invocation li takes query li % per
    // group and the part li / per group of each tile's keys.
    if (splits > 1) {
      t_.declare(int_, "qs", fmt::format("li % {}", per_group));
      t_.declare(int_, "part", fmt::format("li / {}", per_group));
    }
    t_.let("qa",
           fmt::format("q0 + {}", t_.cast(t_.dialect().index_type, splits > 1 ? "qs" : "li")));
    t_.let("qi", t_.choose(fmt::format("qa < {}", s_.q_len), "qa", std::to_string(s_.q_len - 1)));
    head_bases();
    t_.let("row", fmt::format("bh * {} + qi", s_.q_len));
    row_state("row");
    // A causal group's last query sees keys up to q_last + Sk - Sq; the tiles after that hold
    // only keys it masks, and the group skips their work. (With Sk < Sq a query may see no key at
    // all and then averages every value, as the decomposition does: all tiles are needed.) The
    // loop itself runs every tile: barriers stay in control flow that WGSL's uniformity analysis
    // can prove uniform, which a bound computed from the invocation id is not.
    std::string live;
    if (s_.mask == "causal" && s_.kv_len >= s_.q_len) {
      t_.let("q_last",
             t_.choose(fmt::format("q0 + {} < {}", per_group - 1, s_.q_len),
                       fmt::format("q0 + {}", per_group - 1), std::to_string(s_.q_len - 1)));
      t_.let("tiles", fmt::format("(q_last + {}) / {} + 1", s_.kv_len - s_.q_len, tk));
      live = "t < tiles";
    }
    t_.loop("t", k_tiles);
    t_.let("j0", fmt::format("t * {}", tk));
    if (!live.empty()) t_.if_block(live);
    stage("rlx_k", "kbase", s_.head_dim, tk, s_.k_buffer, s_.k_dtype, key_stride(false));
    stage("rlx_v", "vbase", s_.v_dim, tk, s_.v_buffer, s_.v_dtype, key_stride(true));
    if (!live.empty()) t_.close();
    t_.line(t_.dialect().barrier);
    if (!live.empty()) t_.if_block(live);
    fold_tile(tk, splits);
    if (!live.empty()) t_.close();
    // The next tile's copy waits here until every invocation is done with this one.
    t_.line(t_.dialect().barrier);
    t_.close();
    std::string ok = fmt::format("gi < {} && qa < {}", groups, s_.q_len);
    if (splits > 1) {
      merge_parts(splits, per_group);
      ok += " && part == 0";
    }
    store_row("row", ok);
    return {t_.finish(), groups, variant};
  }

 private:
  static constexpr int64_t kGroup = 64;
  static constexpr int64_t kSharedBytes = 16384;
  // Keys a tiled kernel's thread takes at a time (fold_tile).
  static constexpr int64_t kKeysAtOnce = 4;
  // Query rows from which a tiled kernel gives each query one invocation (key_splits).
  static constexpr int64_t kRowsForOne = 65536;

  const AttentionShape& s_;
  detail::KernelText t_;
  std::string f32_, int_;

  static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
  std::string zero() const { return t_.f32_literal(0.0); }
  std::string lowest() const { return t_.f32_literal(std::numeric_limits<float>::lowest()); }

  std::string comment(const std::string& variant) const {
    return fmt::format(
        "{}: attention ({}) q [{}, {}, {}, {}] k, v [{}, {}, {}, {}|{}], mask {}, scale {}, online "
        "softmax in f32{}{}{}",
        kernel_symbol(s_.name), variant, s_.batch, s_.heads, s_.q_len, s_.head_dim, s_.batch,
        s_.kv_heads, s_.kv_len, s_.head_dim, s_.v_dim, s_.mask, s_.scale,
        s_.q_split_heads || s_.k_split_heads || s_.v_split_heads
            ? fmt::format(", {}{}{} read as [B, S, H, D]", s_.q_split_heads ? "q" : "",
                          s_.k_split_heads ? "k" : "", s_.v_split_heads ? "v" : "")
            : "",
        s_.merge_heads ? ", heads merged into out [B, Sq, H, Dv]" : "",
        s_.q_loop ? ", q computed by " + computed_by(*s_.q_loop) : "");
  }

  // bi, the kv head kvh of head bh and where its keys and values start: a block of Sk rows per
  // kv head, or (split heads) the head's slice of row 0 of the batch's [Sk, R] block.
  void head_bases() {
    t_.let("bi", fmt::format("bh / {}", s_.heads));
    t_.let("kvl", fmt::format("(bh % {}) / {}", s_.heads, s_.heads / s_.kv_heads));
    t_.let("kvh", fmt::format("bi * {} + kvl", s_.kv_heads));
    auto base = [&](bool split, int64_t width, int64_t row, int64_t offset) {
      return split ? fmt::format("{} + bi * {} + kvl * {}", offset, s_.kv_len * row, width)
                   : fmt::format("kvh * {}", s_.kv_len * width);
    };
    t_.let("kbase", base(s_.k_split_heads, s_.head_dim, s_.k_row_stride(), s_.k_offset));
    t_.let("vbase", base(s_.v_split_heads, s_.v_dim, s_.v_row_stride(), s_.v_offset));
  }

  // Elements between key j's row and key j + 1's, of k or (`v`) of v.
  int64_t key_stride(bool v) const {
    if (v) return s_.v_split_heads ? s_.v_row_stride() : s_.v_dim;
    return s_.k_split_heads ? s_.k_row_stride() : s_.head_dim;
  }

  // Where query `row`'s q row starts.
  std::string q_start(const std::string& row) const {
    if (!s_.q_split_heads) return fmt::format("{} * {}", row, s_.head_dim);
    return fmt::format("{} + (bi * {} + qi) * {} + bh % {} * {}", s_.q_offset, s_.q_len,
                       s_.q_row_stride(), s_.heads, s_.head_dim);
  }

  // The q row of query `row` in qrow, the output row acc, the running maximum and sum.
  void row_state(const std::string& row) {
    t_.array(f32_, "qrow", s_.head_dim);
    t_.loop("d", s_.head_dim);
    if (s_.q_loop) {  // computed here (AttentionShape::q_loop), rounded as its kernel stores it
      t_.computed(*s_.q_loop, "(" + q_start(row) + " + d)", "qv");
      t_.line("qrow[d] = qv;");
    } else {
      t_.line(fmt::format("qrow[d] = {};", t_.load(s_.q_buffer, s_.q_dtype, q_start(row) + " + d")));
    }
    t_.close();
    t_.array(f32_, "acc", s_.v_dim);
    t_.loop("d", s_.v_dim);
    t_.line(fmt::format("acc[d] = {};", zero()));
    t_.close();
    t_.declare_mutable(f32_, "run_max", lowest());
    t_.declare_mutable(f32_, "run_sum", zero());
  }

  // Folds key j into the row's state; key(d) and value(d) are the elements of its rows.
  template <class Key, class Value>
  void fold_key(Key key, Value value) {
    t_.declare_mutable(f32_, "dot", zero());
    t_.loop("d", s_.head_dim);
    t_.line(fmt::format("dot = {};", t_.multiply_add("qrow[d]", key("d"), "dot")));
    t_.close();
    fold_dot("dot", value);
  }

  // Folds key j, whose q . k is `dot`, into the row's state.
  template <class Value>
  void fold_dot(const std::string& dot, Value value) {
    // Scaled after the product, as the decomposition multiplies the scores by an f32 constant.
    const std::string scale = t_.f32_literal(static_cast<float>(s_.scale));
    t_.declare(f32_, "score", fmt::format("{} * {}", dot, scale));
    const std::string keep = keep_condition();
    t_.declare(f32_, "kept", keep.empty() ? "score" : t_.choose(keep, "score", lowest()));
    t_.declare(f32_, "new_max", t_.choose("kept > run_max", "kept", "run_max"));
    t_.declare(f32_, "rescale", fmt::format("{}(run_max - new_max)", t_.math("exp")));
    t_.declare(f32_, "weight", fmt::format("{}(kept - new_max)", t_.math("exp")));
    t_.line(fmt::format("run_sum = {};", t_.multiply_add("run_sum", "rescale", "weight")));
    t_.loop("d", s_.v_dim);
    t_.line(fmt::format("acc[d] = {};", t_.multiply_add("weight", value("d"), "acc[d] * rescale")));
    t_.close();
    t_.line("run_max = new_max;");
  }

  // Folds the tile's tk keys into the row's state, kKeysAtOnce at a time: their products with q
  // are summed side by side (each in the order fold_key sums it), so a thread keeps that many
  // independent chains of multiply-adds in flight instead of waiting on one, and then folded
  // together (fold_block).
  void fold_tile(int64_t tk, int64_t splits) {
    const int64_t keys = tk / splits;  // of each part
    const int64_t at_once = keys % kKeysAtOnce == 0 ? kKeysAtOnce : 1;
    // Keys past Sk in the last tile are no keys at all (not masked ones, which a fully masked
    // row would average over); the tile holds zeros for them.
    const bool partial = s_.kv_len % tk != 0;
    t_.loop("jq", keys / at_once, int_);
    t_.declare(int_, "jj",
               splits > 1 ? fmt::format("part * {} + jq * {}", keys, at_once)
                          : fmt::format("jq * {}", at_once));
    auto key_row = [&](int64_t k) {
      return k == 0 ? std::string("jj") : fmt::format("(jj + {})", k);
    };
    for (int64_t k = 0; k < at_once; ++k) t_.declare_mutable(f32_, fmt::format("dot{}", k), zero());
    t_.loop("d", s_.head_dim);
    for (int64_t k = 0; k < at_once; ++k) {
      const std::string dot = fmt::format("dot{}", k);
      t_.line(fmt::format(
          "{} = {};", dot,
          t_.multiply_add("qrow[d]", fmt::format("rlx_k[{} * {} + d]", key_row(k), s_.head_dim),
                          dot)));
    }
    t_.close();
    fold_block(at_once, key_row, partial);
    t_.close();
  }

  // Folds keys jj .. jj + n - 1, whose products with q are dot0 ..., into the row's state at once:
  // one new maximum, one rescaling of the sum and the output row, then each key's weight added
  // in key order. (Key by key, each would rescale both and take two exponentials.) Keys past Sk
  // weigh nothing, whatever the state.
  template <class KeyRow>
  void fold_block(int64_t n, KeyRow key_row, bool partial) {
    const std::string& index = t_.dialect().index_type;
    const std::string scale = t_.f32_literal(static_cast<float>(s_.scale));
    for (int64_t k = 0; k < n; ++k) {
      const std::string j = fmt::format("jk{}", k), kept = fmt::format("kept{}", k);
      t_.let(j, fmt::format("j0 + {}", t_.cast(index, key_row(k))));
      const std::string score = fmt::format("dot{} * {}", k, scale);
      // A key past Sk scores lowest, so it cannot raise the maximum, and reads no mask element
      // (its index is clamped; the result is not used).
      std::string keep = keep_condition(partial ? t_.choose(fmt::format("{} < {}", j, s_.kv_len), j,
                                                            std::to_string(s_.kv_len - 1))
                                                : j);
      if (partial)
        keep = fmt::format("{} < {}", j, s_.kv_len) + (keep.empty() ? "" : " && (" + keep + ")");
      t_.declare(f32_, kept, keep.empty() ? score : t_.choose(keep, score, lowest()));
    }
    t_.declare_mutable(f32_, "new_max", "run_max");
    for (int64_t k = 0; k < n; ++k) {
      const std::string kept = fmt::format("kept{}", k);
      t_.line(fmt::format("new_max = {};", t_.choose(kept + " > new_max", kept, "new_max")));
    }
    t_.declare(f32_, "rescale", fmt::format("{}(run_max - new_max)", t_.math("exp")));
    std::string sum = "run_sum * rescale", row = "acc[d] * rescale";
    for (int64_t k = 0; k < n; ++k) {
      const std::string w = fmt::format("w{}", k);
      std::string e = fmt::format("{}(kept{} - new_max)", t_.math("exp"), k);
      if (partial) e = t_.choose(fmt::format("jk{} < {}", k, s_.kv_len), e, zero());
      t_.declare(f32_, w, e);
      sum = fmt::format("{} + {}", sum, w);
      row = t_.multiply_add(w, fmt::format("rlx_v[{} * {} + d]", key_row(k), s_.v_dim), row);
    }
    t_.line(fmt::format("run_sum = {};", sum));
    t_.loop("d", s_.v_dim);
    t_.line(fmt::format("acc[d] = {};", row));
    t_.close();
    t_.line("run_max = new_max;");
  }

  // Invocations a query's keys are split over in a tiled kernel: where a launch would have few
  // invocations (a batch of 8 MiniLM sequences: 12288 query rows, a few per multiprocessor of a
  // GPU), each query's keys are dealt to 2 or 4 of them, so each folds a quarter as many keys in
  // turn and four times as many run; their states are merged at the end through the tiles'
  // shared arrays, which then must hold 64 output rows (a full tile of 64 keys).
  int64_t key_splits(int64_t tk) const {
    const int64_t rows = s_.batch * s_.heads * s_.q_len;
    if (tk != kGroup || s_.head_dim < 2 || rows >= kRowsForOne) return 1;
    return rows >= kRowsForOne / 2 ? 2 : 4;
  }

  // Each part's running maximum, sum and output row through shared memory (rlx_k holds the two
  // statistics of each invocation, rlx_v its row, element d of every invocation's row side by
  // side so that a SIMD group's stores hit distinct banks); part 0 of each query combines them in
  // part order, each scaled by e^(its maximum - the largest), into run_sum and acc.
  void merge_parts(int64_t splits, int64_t per_group) {
    t_.loop("d", s_.v_dim);
    t_.line(fmt::format("rlx_v[d * {} + li] = acc[d];", kGroup));
    t_.close();
    t_.line("rlx_k[li * 2] = run_max;");
    t_.line("rlx_k[li * 2 + 1] = run_sum;");
    t_.line(t_.dialect().barrier);
    t_.if_block("part == 0");
    t_.declare_mutable(f32_, "top", "run_max");
    t_.loop("p", splits, int_);
    t_.declare(f32_, "mp", fmt::format("rlx_k[(p * {} + qs) * 2]", per_group));
    t_.line(fmt::format("top = {};", t_.choose("mp > top", "mp", "top")));
    t_.close();
    t_.line(fmt::format("run_sum = {};", zero()));
    t_.loop("d", s_.v_dim);
    t_.line(fmt::format("acc[d] = {};", zero()));
    t_.close();
    t_.loop("p", splits, int_);
    t_.declare(int_, "slot", fmt::format("p * {} + qs", per_group));
    t_.declare(f32_, "f", fmt::format("{}(rlx_k[slot * 2] - top)", t_.math("exp")));
    t_.line(fmt::format("run_sum = {};", t_.multiply_add("rlx_k[slot * 2 + 1]", "f", "run_sum")));
    t_.loop("d", s_.v_dim);
    t_.line(fmt::format("acc[d] = {};", t_.multiply_add(fmt::format("rlx_v[d * {} + slot]", kGroup),
                                                        "f", "acc[d]")));
    t_.close();
    t_.close();
    t_.close();
  }

  // Copies the tile's `width`-element rows of keys j0 .. j0 + tk (one block of the buffer) into
  // shared array `array`; past Sk the tile holds zeros.
  void stage(const std::string& array, const std::string& base, int64_t width, int64_t tk,
             int32_t position, DType dtype, int64_t key_stride) {
    const int64_t n = tk * width;
    t_.loop("u", ceil_div(n, kGroup), int_);
    t_.declare(int_, "e", fmt::format("u * {} + li", kGroup));
    const std::string& index = t_.dialect().index_type;
    const std::string at = fmt::format("j0 * {} + {}", width, t_.cast(index, "e"));
    // Split heads: element e of the tile is element e % width of key j0 + e / width's row.
    const std::string from =
        key_stride != width
            ? fmt::format("(j0 + {}) * {} + {}", t_.cast(index, fmt::format("e / {}", width)),
                          key_stride, t_.cast(index, fmt::format("e % {}", width)))
            : at;
    // The last tile may run past the kv head's block (into the next head's, or the buffer's end).
    const std::string ok = s_.kv_len % tk == 0 ? "" : fmt::format("{} < {}", at, s_.kv_len * width);
    const std::string v = t_.load(position, dtype, fmt::format("{} + {}", base, from));
    // (WGSL's select reads both sides, and WebGPU clamps such a read: it stays in bounds.)
    const std::string x = ok.empty() ? v : t_.choose(ok, v, zero());
    if (n % kGroup != 0) t_.if_block(fmt::format("e < {}", n));
    t_.line(fmt::format("{}[e] = {};", array, x));
    if (n % kGroup != 0) t_.close();
    t_.close();
  }

  // Where query `row`'s output row starts.
  std::string out_start(const std::string& row) const {
    return s_.merge_heads ? fmt::format("((bi * {0} + qi) * {1} + bh % {1}) * {2}", s_.q_len,
                                        s_.heads, s_.v_dim)
                          : fmt::format("{} * {}", row, s_.v_dim);
  }

  // out[row] = acc / run_sum, where `ok` holds ("" : always).
  void store_row(const std::string& row, const std::string& ok) {
    if (!ok.empty()) t_.if_block(ok);
    t_.loop("d", s_.v_dim);
    t_.line(t_.store(s_.out_buffer, s_.out_dtype, out_start(row) + " + d", "acc[d] / run_sum"));
    t_.close();
    if (!ok.empty()) t_.close();
  }

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
    // What computes q, after the attention's own (q's position binds one of them).
    for (int32_t j = count; s_.q_loop && j < s_.q_loop->params; ++j)
      used.push_back({j, s_.q_loop->program.buffers.at(j).dtype});
    if (s_.q_loop) count = std::max(count, s_.q_loop->params);
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
    if (s_.q_loop && s_.q_loop->program.buffers.at(s_.q_buffer).dtype != s_.q_dtype)
      t_.fail("q's position binds a buffer the kernel computing q reads, at its dtype");
    return ps;
  }

  // Whether key j is visible to the row's query ("" when every key is).
  std::string keep_condition(const std::string& j = "j") const {
    if (s_.mask == "causal") return fmt::format("{} <= qi + {}", j, s_.kv_len - s_.q_len);
    if (s_.mask != "padding") return "";
    std::string at =
        fmt::format("{}{}", s_.mask_batch == 1 ? "" : fmt::format("bi * {}", s_.mask_len),
                    s_.mask_len == 1 ? "" : (s_.mask_batch == 1 ? j : " + " + j));
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
  // Tiles pay once a head has enough queries to share them; a decode step has one or a few.
  if (shape.q_len >= kTiledQueries && !dialect.shared_array.empty())
    return AttentionWriter(shape, dialect).tiled();
  // A decode step's few rows get a SIMD group each where the dialect can merge their lanes.
  if (!dialect.simd_sum.empty() && !dialect.simd_max.empty() && dialect.simd_width > 0 &&
      64 % dialect.simd_width == 0)
    return AttentionWriter(shape, dialect).simd_rows();
  return AttentionWriter(shape, dialect).rows();
}

}  // namespace rlx::sdk
