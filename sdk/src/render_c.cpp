// The C-family kernel renderer: one LIR loop kernel -> one function in a Dialect. How the text
// looks comes from the dialect table; what it computes (the semantics listed in render.h) is
// decided here, once for every language.
//
// Every expression becomes one immutable local (e<i> = ...), so operands are always plain names
// and a formula may mention one twice without evaluating anything twice. Loop index d is i<d>,
// the pointer to storage buffer b is b<b>, the accumulator of store s is acc<s>.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "render_c_values.h"
#include "render_parts.h"
#include "rlx/core/error.h"
#include "rlx/sdk/render.h"

namespace rlx::sdk {

namespace {

using detail::buffer_uses;
using detail::BufferUse;
using detail::float_text;
using detail::int_limits;
using detail::is_signed_int;
using detail::join;
using detail::row_major_strides;
using detail::single_float;
using lir::Expr;
using lir::ExprKind;

class KernelRenderer : detail::CValues {
 public:
  KernelRenderer(const lir::LoopKernel& k, const lir::Program& p, const Dialect& d,
                 const NormedRead* norm = nullptr)
      : CValues(d, k.name), k_(k), p_(p), norm_(norm), index_type_(detail::index_type(d, k)) {}

  std::string render() {
    const int64_t rank = static_cast<int64_t>(k_.domain.size());
    if (k_.num_parallel < 0 || k_.num_parallel > rank)
      fail(fmt::format("num_parallel {} is outside [0, {}]", k_.num_parallel, rank));
    if (k_.reduce.empty() && k_.num_parallel != rank)
      fail("the domain has reduced dims but the kernel names no reduction");
    auto uses = buffer_uses(k_, p_);
    std::vector<BufferParam> params;
    for (auto& [id, u] : uses) params.push_back({id, u.dtype, u.written});
    for (size_t j = 0; j < params.size(); ++j)
      local_[params[j].storage] = positional() ? static_cast<int32_t>(j) : params[j].storage;
    line(d_.comment + detail::describe_kernel(k_, p_, uses, local_, positional()));
    std::optional<std::string> sig;
    if (d_.render_signature) sig = d_.render_signature(d_, kernel_symbol(k_), params);
    const int64_t lanes = lanes_per_output(k_, d_);  // > 1: a SIMD group per output
    std::string signature = sig ? *sig : default_signature(params);
    if (lanes > 1) signature = detail::with_simd_params(d_, signature);
    line(signature + " {");
    ++indent_;
    if (!d_.kernel_entry.empty()) line(d_.kernel_entry);
    if (d_.buffer_params == BufferParams::kPointerTable || positional())
      for (const BufferParam& b : params) {
        std::string ptr = fmt::format("{}{}*", b.written ? "" : "const ", storage_type(b.dtype));
        line(fmt::format("{} {}{} = ({}){}[{}];", ptr, restrict_space(), pointer(b.storage), ptr,
                         positional() ? "args" : "buffers", local_.at(b.storage)));
      }
    std::vector<int64_t> par(k_.domain.begin(), k_.domain.begin() + k_.num_parallel);
    std::vector<int64_t> out_strides = row_major_strides(par);
    std::string out_index;
    int opened = 0;
    if (d_.mapping == DomainMapping::kSerialLoops) {
      for (int32_t d = 0; d < k_.num_parallel; ++d) opened += open_loop(d);
      out_index = affine(0, out_strides);
    } else if (d_.mapping == DomainMapping::kPointRange) {
      if (reduces_down_columns(par, lanes)) {
        reduce_down_columns(par, affine(0, out_strides));
        --indent_;
        line("}");
        return out_;
      }
      opened += open_point_range(par);
      out_index = affine(0, out_strides);
    } else {
      const int64_t n = work_items(k_), per = outputs_per_item(k_, d_);
      // With SIMD lanes, output gid is SIMD group `simd_group` of group `group_index`, counted
      // by the hardware's own grouping (the host launched lanes * n work-items, 64 a group).
      const std::string item = per > 1 ? "rlx_item" : "gid";
      line(declare(index_type_, item,
                   lanes > 1
                       ? fmt::format("{} * {} + {}", d_.group_index, d_.simd_groups, d_.simd_group)
                       : global_id()));
      line(fmt::format("if ({} >= {}) {{ return; }}", item, n / per));
      auto index_of = [&](int32_t d, const std::string& at) {
        std::string v = out_strides[d] == 1 ? at : fmt::format("{} / {}", at, out_strides[d]);
        if (d > 0) v = fmt::format("({}) % {}", v, par[d]);
        line(declare(index_type_, fmt::format("i{}", d), v));
      };
      // A dim whose index repeats every n / per outputs is the same for all of an item's
      // outputs: computed once, before their loop, with what it reads (a bias row's element).
      std::vector<bool> same(k_.num_parallel, false);
      if (per > 1) {  // Dialect::max_outputs_per_item; every gid is in range (per divides n)
        for (int32_t d = 1; d < k_.num_parallel; ++d)
          if ((n / per) % (out_strides[d] * par[d]) == 0) {
            same[d] = true;
            index_of(d, "rlx_item");
          }
        line("#pragma unroll");
        opened += open_loop_over("rlx_j", per);
        line(declare(index_type_, "gid", fmt::format("rlx_item + rlx_j * {}", n / per)));
      }
      gid_strides_ = out_strides;
      for (int32_t d = 0; d < k_.num_parallel; ++d)
        if (!same[d]) index_of(d, "gid");
      out_index = "gid";
    }
    if (k_.reduce.empty()) {
      body();
      for (const lir::Store& s : k_.stores) store_value(s, out_index);
    } else {
      for (size_t s = 0; s < k_.stores.size(); ++s)
        line(declare(type(acc_dtype(s)), fmt::format("acc{}", s), reduce_init(acc_dtype(s)), true));
      int inner = 0;
      if (lanes > 1)
        inner += open_lane_loop(lanes);
      else
        for (int32_t d = k_.num_parallel; d < rank; ++d) inner += open_loop(d);
      body();
      for (size_t s = 0; s < k_.stores.size(); ++s) {
        std::string acc = fmt::format("acc{}", s);
        line(fmt::format("{} = {};", acc,
                         binary(reduce_op(), acc_dtype(s), acc,
                                convert(value(k_.stores[s].expr), root(s).dtype, acc_dtype(s)))));
      }
      close_loops(inner);
      if (lanes > 1) combine_lanes();  // every lane now holds the output; lane 0 stores it
      for (size_t s = 0; s < k_.stores.size(); ++s)
        store_sum(k_.stores[s], out_index, fmt::format("acc{}", s), acc_dtype(s));
      if (lanes > 1) close_loops(1);
    }
    close_loops(opened);
    --indent_;
    line("}");
    return out_;
  }

  // The kernel evaluated at one element inside another kernel (render_epilogue): indices from
  // element `index`, loads of `input` reading `input_value` (of dtype `value_dtype`), names
  // prefixed with `names`. The result is stored when `write`, else declared as `result` or, when
  // that is empty, <names>r (the next epilogue's value). Buffers are named by their ids.
  // `from`: the strides through which the kernel reads `input` when they permute its dims (the
  // loop indices come from `index` through them, and the store goes to the kernel's row-major
  // index); empty for the identity.
  std::string epilogue(const std::string& names, const std::string& index, int32_t input,
                       const std::string& input_value, DType value_dtype, bool write, int indent,
                       const std::vector<int64_t>& from, const std::string& result = "") {
    if (!k_.reduce.empty() || k_.num_parallel != static_cast<int32_t>(k_.domain.size()))
      fail("an epilogue is elementwise: no reduced dims");
    if (k_.stores.size() != 1) fail("an epilogue stores one value");
    for (const lir::Buffer& b : p_.buffers) local_[b.id] = b.id;
    names_ = names, input_ = input, input_value_ = input_value, input_dtype_ = value_dtype;
    indent_ = indent;
    const std::vector<int64_t> own = row_major_strides(k_.domain);
    const std::vector<int64_t>& strides = from.empty() ? own : from;
    if (strides.size() != k_.domain.size())
      fail("an epilogue's read strides do not fit its domain");
    for (size_t d = 0; d < k_.domain.size(); ++d) {
      std::string v = k_.domain[d] == 1 ? "0"
                      : strides[d] == 1 ? index
                                        : fmt::format("{} / {}", index, strides[d]);
      if (k_.domain[d] != 1 && strides[d] * k_.domain[d] < work_items(k_))
        v = fmt::format("({}) % {}", v, k_.domain[d]);
      line(declare(d_.index_type, fmt::format("{}i{}", names_, d), v));
    }
    body();
    const lir::Store& st = k_.stores[0];
    if (write)
      store_value(st, from.empty() ? index : affine(0, own));
    else
      line(declare(type(k_.exprs.at(st.expr).dtype), result.empty() ? names_ + "r" : result,
                   value(st.expr)));
    return out_;
  }

 private:
  const lir::LoopKernel& k_;
  const lir::Program& p_;
  std::string out_;
  int indent_ = 0;
  std::map<int32_t, int32_t> local_;  // storage buffer id -> the number in its pointer's name
  // As a fused epilogue (epilogue() below): a prefix for the names of values and indices, and
  // the buffer whose loads read `input_value_` (of dtype input_dtype_) instead of memory.
  std::string names_;
  int32_t input_ = -1;
  std::string input_value_;
  DType input_dtype_ = DType::kF32;
  const NormedRead* norm_ = nullptr;  // a prologue's computed norm (render_prologue)
  std::string index_type_;            // the dialect's, or its narrow one where offsets fit
  // A 16-bit float expression's f32 value before its rounding (body()), by expression: a store
  // to a buffer of that type rounds it once instead of rounding, widening and rounding again.
  std::map<int32_t, std::string> unrounded_;
  // kWorkItemPerOutput: the row-major strides of the parallel dims `gid` walks; else empty.
  std::vector<int64_t> gid_strides_;

  bool positional() const { return d_.buffer_params == BufferParams::kPositionalTable; }
  std::string pointer(int32_t storage) const { return fmt::format("b{}", local_.at(storage)); }

  void line(const std::string& s) { out_ += std::string(2 * indent_, ' ') + s + "\n"; }

  // --- index space
  std::string global_id() const {
    if (!d_.global_id.empty()) return d_.global_id;
    if (d_.group_id[0].empty() || d_.group_size[0].empty() || d_.local_id[0].empty())
      fail("the dialect maps work-items but names no global_id or group/local ids");
    return fmt::format("{} * {} + {}", cast_to(index_type_, d_.group_id[0]), d_.group_size[0],
                       d_.local_id[0]);
  }

  int open_loop(int32_t d) { return open_loop_over(fmt::format("i{}", d), k_.domain[d]); }
  int open_loop_over(const std::string& var, int64_t end) {
    line(fmt::format(fmt::runtime(d_.loop), fmt::arg("type", index_type_), fmt::arg("var", var),
                     fmt::arg("end", end)));
    ++indent_;
    return 1;
  }
  // kPointRange: rows of the points space (every parallel dim but the innermost) decomposed
  // into indices once per row, then a counted loop over the innermost parallel dim, clipped to
  // [begin, end). Returns how many loops it opened.
  int open_point_range(const std::vector<int64_t>& par) {
    const std::string& t = d_.index_type;
    if (par.empty()) {  // one point: the whole (reduced or scalar) domain
      line(fmt::format("for ({0} p = begin; p < end; ++p) {{", t));
      ++indent_;
      return 1;
    }
    open_point_rows(par);
    line(fmt::format("for ({0} i{1} = lo; i{1} < hi; ++i{1}) {{", t, par.size() - 1));
    ++indent_;
    return 2;
  }
  // The row loop of kPointRange (opened, 1 loop) with every index but the innermost parallel
  // one declared, and [lo, hi): the innermost index's range in this row.
  void open_point_rows(const std::vector<int64_t>& par) {
    const std::string& t = d_.index_type;
    const size_t last = par.size() - 1;
    const int64_t n = par[last];
    line(fmt::format("for ({0} row = begin / {1}; row * {1} < end; ++row) {{", t, n));
    ++indent_;
    std::vector<int64_t> rows(par.begin(), par.begin() + static_cast<int64_t>(last));
    std::vector<int64_t> row_strides = row_major_strides(rows);
    for (size_t d = 0; d < last; ++d) {
      std::string v = row_strides[d] == 1 ? "row" : fmt::format("row / {}", row_strides[d]);
      if (d > 0) v = fmt::format("({}) % {}", v, par[d]);
      line(declare(t, fmt::format("i{}", d), par[d] == 1 ? "0" : v));
    }
    line(declare(t, "lo", fmt::format("row * {0} < begin ? begin - row * {0} : 0", n)));
    line(declare(t, "hi", fmt::format("end - row * {0} < {0} ? end - row * {0} : {0}", n)));
  }

  // A reduction over dims its inputs are strided in while they are contiguous along the
  // innermost output dim (a bias gradient: column sums of [batch, features]). Reduced
  // point by point, each sum is a dependent chain of scalar adds reading one element a cache
  // line (11 us for a 128 x 128 column sum on the 2-core machine); with the loops exchanged,
  // a row of accumulators advances one input row at a time, contiguous, and vectorises. Every
  // output still combines its inputs in the same order, so the bits are the same.
  bool reduces_down_columns(const std::vector<int64_t>& par, int64_t lanes) const {
    constexpr int64_t kMaxRow = 2048;  // accumulators on the stack: 16 KB of doubles at most
    if (k_.reduce.empty() || lanes > 1 || par.empty() || par.back() < 2 || par.back() > kMaxRow)
      return false;
    const size_t inner = par.size() - 1, last = k_.domain.size() - 1;
    bool pays = false;
    for (const Expr& e : k_.exprs) {
      if (e.kind != ExprKind::kLoad) continue;
      const std::vector<int64_t>& st = e.load.strides;
      if (st.size() != k_.domain.size() || (st[inner] != 0 && st[inner] != 1)) return false;
      pays = pays || (st[inner] == 1 && st[last] != 1);
    }
    return pays;
  }
  void reduce_down_columns(const std::vector<int64_t>& par, const std::string& out_index) {
    const std::string& t = d_.index_type;
    const int64_t n = par.back();
    const std::string iv = fmt::format("i{}", par.size() - 1);
    auto over_row = [&] {
      line(fmt::format("for ({0} {1} = lo; {1} < hi; ++{1}) {{", t, iv));
      ++indent_;
    };
    open_point_rows(par);
    for (size_t s = 0; s < k_.stores.size(); ++s)
      line(fmt::format("{} acc{}[{}];", type(acc_dtype(s)), s, n));
    over_row();
    for (size_t s = 0; s < k_.stores.size(); ++s)
      line(fmt::format("acc{}[{}] = {};", s, iv, reduce_init(acc_dtype(s))));
    close_loops(1);
    int loops = 0;
    for (int32_t d = k_.num_parallel; d < static_cast<int32_t>(k_.domain.size()); ++d)
      loops += open_loop(d);
    over_row();
    body();
    for (size_t s = 0; s < k_.stores.size(); ++s) {
      const std::string acc = fmt::format("acc{}[{}]", s, iv);
      line(fmt::format("{} = {};", acc,
                       binary(reduce_op(), acc_dtype(s), acc,
                              convert(value(k_.stores[s].expr), root(s).dtype, acc_dtype(s)))));
    }
    close_loops(1 + loops);
    over_row();
    for (size_t s = 0; s < k_.stores.size(); ++s)
      store_sum(k_.stores[s], out_index, fmt::format("acc{}[{}]", s, iv), acc_dtype(s));
    close_loops(2);  // the row loop too
  }

  // A SIMD group's lanes split the reduced dims, flattened row-major: lane l takes elements l,
  // l + lanes, ..., so the group reads `lanes` neighbouring elements at a time. C's for: only
  // C-family dialects have SIMD-group reductions (MSL).
  int open_lane_loop(int64_t lanes) {
    const std::vector<int64_t> red(k_.domain.begin() + k_.num_parallel, k_.domain.end());
    const std::vector<int64_t> strides = row_major_strides(red);
    line(fmt::format("for ({0} r = {1}; r < {2}; r += {3}) {{", index_type_,
                     cast_to(index_type_, d_.simd_lane), strides[0] * red[0], lanes));
    ++indent_;
    for (size_t j = 0; j < red.size(); ++j) {
      std::string v = strides[j] == 1 ? "r" : fmt::format("r / {}", strides[j]);
      if (j > 0) v = fmt::format("({}) % {}", v, red[j]);
      line(declare(index_type_, fmt::format("i{}", k_.num_parallel + j), red[j] == 1 ? "0" : v));
    }
    return 1;
  }
  // Each accumulator becomes the reduction over the lanes' partial ones, then `if (lane == 0) {`
  // (closed by the caller). A max or min stays NaN when any lane's is (render.h's rule, which
  // the SIMD-group functions do not promise): a lane holding NaN is counted with simd_max first.
  void combine_lanes() {
    const std::string& fn = detail::simd_reduction(d_, k_.reduce);
    auto reduce = [](const std::string& f, const std::string& x) {
      return fmt::format(fmt::runtime(f), fmt::arg("x", x));
    };
    for (size_t s = 0; s < k_.stores.size(); ++s) {
      const std::string acc = fmt::format("acc{}", s), t = type(acc_dtype(s));
      if (k_.reduce != "max" && k_.reduce != "min") {
        line(fmt::format("{} = {};", acc, reduce(fn, acc)));
        continue;
      }
      line(declare(t, acc + "_all", reduce(fn, acc)));
      line(declare(t, acc + "_nan",
                   reduce(d_.simd_max,
                          choose(is_nan(acc), literal(1, DType::kF32), literal(0, DType::kF32)))));
      line(fmt::format("{} = {};", acc,
                       choose(acc + "_nan > " + literal(0, DType::kF32), literal(NAN, DType::kF32),
                              acc + "_all")));
    }
    line(fmt::format("if ({} == 0) {{", d_.simd_lane));
    ++indent_;
  }

  void close_loops(int n) {
    for (; n > 0; --n) {
      --indent_;
      line("}");
    }
  }

  // offset + sum strides[d] * i<d>, zero terms left out.
  std::string affine(int64_t offset, const std::vector<int64_t>& strides) const {
    if (strides.size() > k_.domain.size())
      fail(fmt::format("an affine map has {} strides for a domain of rank {}", strides.size(),
                       k_.domain.size()));
    // A read in the output's own order is the work-item's flat index: no index arithmetic for
    // the device compiler to see through (the divisions that make i0, i1, ... then often go).
    if (reads_in_output_order(strides))
      return offset == 0 ? "gid"
                         : fmt::format("gid {} {}", offset < 0 ? '-' : '+', std::abs(offset));
    std::string s;
    for (size_t d = 0; d < strides.size(); ++d) {
      int64_t c = strides[d];
      if (c == 0) continue;
      std::string term = std::abs(c) == 1 ? fmt::format("{}i{}", names_, d)
                                          : fmt::format("{} * {}i{}", std::abs(c), names_, d);
      s += s.empty() ? (c < 0 ? "-" + term : term) : (c < 0 ? " - " : " + ") + term;
    }
    if (offset != 0 || s.empty())
      s += s.empty() ? std::to_string(offset)
                     : fmt::format(" {} {}", offset < 0 ? '-' : '+', std::abs(offset));
    return s;
  }

  bool reads_in_output_order(const std::vector<int64_t>& strides) const {
    if (gid_strides_.empty() || !names_.empty() || strides.size() != k_.domain.size()) return false;
    for (size_t d = 0; d < strides.size(); ++d) {
      const bool parallel = d < gid_strides_.size();
      if (parallel ? (k_.domain[d] != 1 && strides[d] != gid_strides_[d]) : strides[d] != 0)
        return false;
    }
    return true;
  }

  std::string in_range(int32_t dim, int64_t lo, int64_t hi) const {
    if (dim < 0 || dim >= static_cast<int32_t>(k_.domain.size()))
      fail(
          fmt::format("a range test names loop dim {} of a rank-{} domain", dim, k_.domain.size()));
    return fmt::format("({} <= {}i{} && {}i{} < {})", lo, names_, dim, names_, dim, hi);
  }

  // --- expressions
  const Expr& root(size_t store) const { return k_.exprs.at(k_.stores[store].expr); }
  std::string value(int32_t e) const { return fmt::format("{}e{}", names_, e); }

  void body() {
    for (size_t i = 0; i < k_.exprs.size(); ++i) {
      const Expr& e = k_.exprs[i];
      for (int32_t a : e.args)
        if (a < 0 || a >= static_cast<int32_t>(i))
          fail(fmt::format("e{} uses e{}, which is not an earlier expression", i, a));
      if (norm_ && e.kind == ExprKind::kLoad && p_.storage_of(e.load.buffer) == norm_->buffer) {
        if (e.dtype != DType::kF32) fail("a computed norm is loaded as f32");
        out_ += detail::normed_read(*norm_, p_, d_, affine(e.load.offset, e.load.strides),
                                    guard(e.load), value(static_cast<int32_t>(i)), indent_);
      } else if (std::optional<std::string> wide = unrounded(e)) {
        const std::string name = value(static_cast<int32_t>(i));
        if (e.kind == ExprKind::kConvert) {
          unrounded_[static_cast<int32_t>(i)] = *wide;
        } else {
          line(declare(type(DType::kF32), name + "_w", *wide));
          unrounded_[static_cast<int32_t>(i)] = name + "_w";
        }
        line(declare(type(e.dtype), name,
                     convert(unrounded_[static_cast<int32_t>(i)], DType::kF32, e.dtype)));
      } else {
        line(declare(type(e.dtype), value(static_cast<int32_t>(i)), expr(e)));
      }
    }
  }

  // The f32 value that a 16-bit float op (expr()'s, computed in f32) or a narrowing convert of
  // an f32 rounds, where the dialect renders the op the shared way. A 16-bit result is rounded
  // after every op, as the graph defines it: fusing a chain must not change its bits (the cpu
  // target does the same).
  std::optional<std::string> unrounded(const Expr& e) const {
    if (e.dtype != DType::kF16 && e.dtype != DType::kBF16) return std::nullopt;
    if (e.kind != ExprKind::kUnary && e.kind != ExprKind::kBinary && e.kind != ExprKind::kConvert)
      return std::nullopt;
    std::vector<std::string> args;
    for (int32_t a : e.args) args.push_back(value(a));
    DType operand = e.args.empty() ? e.dtype : k_.exprs[e.args[0]].dtype;
    if (d_.render_op && d_.render_op(d_, OpView{e, operand, args})) return std::nullopt;
    if (e.kind == ExprKind::kConvert)
      return operand == DType::kF32 && args.size() == 1 ? std::optional(args[0]) : std::nullopt;
    return expr(e);
  }

  std::string expr(const Expr& e) const {
    std::vector<std::string> args;
    for (int32_t a : e.args) args.push_back(value(a));
    auto need = [&](size_t n) {
      if (args.size() != n)
        fail(fmt::format("a {} expression has {} operands, not {}", e.op, args.size(), n));
    };
    switch (e.kind) {
      case ExprKind::kLoad:
        return load(e);
      case ExprKind::kConst:
        return literal(e.value, e.dtype);
      case ExprKind::kIndex: {
        // Lowering fills an affine map (iota through transposes and slices); a bare index
        // expression with no strides is loop index `dim` plus the offset.
        std::vector<int64_t> strides = e.load.strides;
        if (strides.empty()) {
          strides.assign(k_.domain.size(), 0);
          if (e.dim < 0 || e.dim >= static_cast<int32_t>(strides.size()))
            fail(fmt::format("an index expression names loop dim {}", e.dim));
          strides[e.dim] = 1;
        }
        return convert(affine(e.load.offset, strides), d_.index_dtype, e.dtype);
      }
      case ExprKind::kInRange:
        return in_range(e.dim, e.lo, e.hi);
      default:
        break;
    }
    DType operand = e.args.empty() ? e.dtype : k_.exprs[e.args[0]].dtype;
    if (e.kind == ExprKind::kSelect) operand = e.dtype;
    if (d_.render_op)
      if (auto s = d_.render_op(d_, OpView{e, operand, args})) return *s;
    // A 16-bit float op's value is its f32 value here; body() rounds it (unrounded()).
    switch (e.kind) {
      case ExprKind::kUnary:
        need(1);
        return unary(e.op, operand, args[0]);
      case ExprKind::kBinary:
        need(2);
        return binary(e.op, operand, args[0], args[1]);
      case ExprKind::kSelect:
        need(3);
        return choose(args[0], args[1], args[2]);
      case ExprKind::kConvert:
        need(1);
        return convert(args[0], operand, e.dtype);
      default:
        fail("unknown expression kind");
    }
  }

  std::string load(const Expr& e) const {
    const lir::AffineLoad& l = e.load;
    DType dt = p_.buffers.at(l.buffer).dtype;
    // The previous result, rounded to the buffer's dtype as its store would have.
    if (input_ >= 0 && p_.storage_of(l.buffer) == input_)
      return convert(convert(input_value_, input_dtype_, dt), dt, e.dtype);
    std::string element =
        detail::read_element(d_, pointer(p_.storage_of(l.buffer)), affine(l.offset, l.strides), dt);
    std::string v = convert(
        fmt::format(fmt::runtime(entry(d_.load, dt, "load conversion")), fmt::arg("x", element)),
        dt, e.dtype);
    // The conditional operator evaluates only the chosen branch, so nothing is read outside.
    return l.guards.empty() ? v : choose(guard(l), v, literal(0, e.dtype));
  }
  std::string guard(const lir::AffineLoad& l) const {  // where a load reads; "" everywhere
    std::vector<std::string> inside;
    for (const lir::Guard& g : l.guards) inside.push_back(in_range(g.dim, g.lo, g.hi));
    return join(inside, " && ");
  }

  // Store `s`'s expression; a 16-bit result kept in f32 before its rounding is rounded once by
  // the store itself (the same bits).
  void store_value(const lir::Store& s, const std::string& index) {
    auto wide = unrounded_.find(s.expr);
    if (wide != unrounded_.end() && p_.buffers.at(s.buffer).dtype == k_.exprs.at(s.expr).dtype)
      store(s, index, wide->second, DType::kF32);
    else
      store(s, index, value(s.expr), k_.exprs.at(s.expr).dtype);
  }
  // Store a reduction's accumulator `acc` (of dtype `acc_type`) as `s`'s expression.
  void store_sum(const lir::Store& s, const std::string& index, const std::string& acc,
                 DType acc_type) {
    const DType t = k_.exprs.at(s.expr).dtype;
    if (acc_type == DType::kF32 && p_.buffers.at(s.buffer).dtype == t)
      store(s, index, acc, acc_type);
    else
      store(s, index, convert(acc, acc_type, t), t);
  }

  // Store `v` (of dtype `from`) to `s`'s buffer, converted to its dtype. An f32 value stored as
  // f16/bf16 is rounded once by the store conversion.
  void store(const lir::Store& s, const std::string& index, const std::string& v, DType from) {
    DType dt = p_.buffers.at(s.buffer).dtype;
    if ((dt == DType::kF16 || dt == DType::kBF16) && from == DType::kF32) {
      line(detail::write_element(
          d_, pointer(p_.storage_of(s.buffer)), index, dt,
          fmt::format(fmt::runtime(entry(d_.store, dt, "store conversion")), fmt::arg("x", v))));
      return;
    }
    std::string x = convert(v, from, dt);
    const std::string& exact = d_.store_exact[static_cast<int>(dt)];
    std::string bits = fmt::format(
        fmt::runtime(from == dt && !exact.empty() ? exact
                                                  : entry(d_.store, dt, "store conversion")),
        fmt::arg("x", x));
    line(detail::write_element(d_, pointer(p_.storage_of(s.buffer)), index, dt, bits));
  }

  // --- reductions
  const std::string& reduce_op() const {
    static const std::map<std::string, std::string, std::less<>> kOps = {
        {"sum", "add"}, {"prod", "mul"}, {"max", "max"}, {"min", "min"}};
    auto it = kOps.find(k_.reduce);
    if (it == kOps.end()) fail(fmt::format("unknown reduction '{}'", k_.reduce));
    return it->second;
  }
  // The accumulator's dtype: the reduced value's, or the dialect's float_accumulator for
  // 16/32-bit float sums and products.
  DType acc_dtype(size_t store) const {
    DType t = root(store).dtype;
    const std::string& op = reduce_op();
    if (d_.float_accumulator && single_float(t) && (op == "add" || op == "mul"))
      return *d_.float_accumulator;
    return t;
  }

  std::string reduce_init(DType t) const {
    const std::string& op = reduce_op();
    if (op == "add") return literal(0, t);
    if (op == "mul") return literal(1, t);
    if (is_float(t)) return literal(op == "max" ? -INFINITY : INFINITY, t);
    // u64's range is past int64's: its maximum is all ones, -1 converted (modular, as C says).
    if (t == DType::kU64)
      return op == "max" ? literal(0, t) : cast(t, fmt::format("-1{}", d_.int64_suffix));
    auto [lo, hi] = int_limits(t);
    return literal(static_cast<double>(op == "max" ? lo : hi), t);
  }

  // --- signature and header
  std::string default_signature(const std::vector<BufferParam>& params) const {
    std::vector<std::string> ps;
    if (d_.buffer_params == BufferParams::kPointerTable) {
      ps.push_back("char* const* buffers");
    } else if (positional()) {
      ps.push_back("char* const* args");
    } else {
      for (const BufferParam& b : params)
        ps.push_back(detail::buffer_param(d_, storage_type(b.dtype), b.written,
                                          fmt::format("b{}", b.storage)));
    }
    if (d_.mapping == DomainMapping::kPointRange) {
      ps.push_back(d_.index_type + " begin");
      ps.push_back(d_.index_type + " end");
    }
    ps.insert(ps.end(), d_.extra_params.begin(), d_.extra_params.end());
    return fmt::format("{} {}({})", d_.kernel_prefix, kernel_symbol(k_), join(ps, ", "));
  }
};

}  // namespace

std::string render_kernel(const lir::LoopKernel& kernel, const lir::Program& program,
                          const Dialect& dialect) {
  return KernelRenderer(kernel, program, dialect).render();
}

std::string render_prologue(const OperandPrologue& prologue, const Dialect& dialect,
                            const std::string& index, const std::string& name, int indent) {
  const lir::LoopKernel& k = prologue_kernel(prologue);
  // A 16-bit stored value is rounded by the op that makes it, as the store would round it.
  return KernelRenderer(k, prologue.program, dialect, prologue.norm ? &*prologue.norm : nullptr)
      .epilogue(name + "_", "(" + index + ")", -1, "", DType::kF32, false, indent, {}, name);
}

std::string render_epilogue(const MatmulEpilogue& e, const Dialect& dialect,
                            const std::string& index, const std::string& value, int indent) {
  const std::string pad(2 * static_cast<size_t>(indent), ' ');
  std::string out = pad + "{\n";
  std::string in = value;
  DType in_dtype = DType::kF32;
  const size_t n = e.program.kernels.size();
  if (e.inputs.size() != n) throw_internal_error("an epilogue names one input per kernel");
  for (size_t j = 0; j < n; ++j) {
    const auto& k = std::get<lir::LoopKernel>(e.program.kernels[j]);
    const std::string names = fmt::format("x{}", j);
    out += KernelRenderer(k, e.program, dialect)
               .epilogue(names, index, e.inputs[j], in, in_dtype, j + 1 == n, indent + 1,
                         j + 1 == n ? e.last_strides : std::vector<int64_t>{});
    in = names + "r";
    in_dtype = k.exprs.at(k.stores[0].expr).dtype;
  }
  return out + pad + "}\n";
}

}  // namespace rlx::sdk
