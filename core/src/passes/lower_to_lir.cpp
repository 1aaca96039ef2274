// MIR -> LIR. Values are either materialised (they own a buffer) or inlined into the loop kernel
// of their single consumer. Index maps (broadcast_in_dim, transpose, slice) compose into the
// affine maps of loads, so they never move data unless their result is a graph output or feeds a
// library call. reshape and bitcast reinterpret a materialised buffer (an alias, no kernel); a
// reshape that only splits dims composes into loads like the index maps where its operand is not
// a buffer (a slice of a fused product split into heads: one copy instead of two).
#include <fmt/format.h>

#include <optional>

#include "passes/passes_util.h"
#include "passes/product_layouts.h"
#include "passes/split_reduction.h"
#include "rlx/core/error.h"
#include "rlx/core/op_registry.h"
#include "rlx/core/passes.h"

namespace rlx {

namespace {

using lir::BufferKind;
using lir::Expr;
using lir::ExprKind;
using lir::LoopKernel;

// value index d = off[d] + sum_j coef[d][j] * i_j over the kernel's loop indices i.
struct IMap {
  std::vector<std::vector<int64_t>> coef;
  std::vector<int64_t> off;
  static IMap identity(size_t rank, size_t loops) {
    IMap m;
    m.coef.assign(rank, std::vector<int64_t>(loops, 0));
    m.off.assign(rank, 0);
    for (size_t d = 0; d < rank; ++d) m.coef[d][d] = 1;
    return m;
  }
};

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * shape[d + 1];
  return s;
}

bool fusible(const OpDef* def) {
  return def && def->level == OpLevel::kMir &&
         (def->cls == OpClass::kElementwise || def->cls == OpClass::kIndexMap ||
          def->cls == OpClass::kReduce) &&
         def->name != "reshape";
}

// For a reshape that only splits dims (and adds or drops size-1 ones), the output dims each
// non-unit input dim becomes, in order: reading the input at an output index is then affine in
// it (input index = the run's indices weighted by row-major strides), so the reshape composes into
// loads as a transpose does. A reshape that merges dims (a row index / a width) is not affine.
std::optional<std::vector<std::vector<size_t>>> split_runs(const Node& n, const Graph& g) {
  if (n.op != "reshape") return std::nullopt;
  const Shape &in = g.type(n.inputs[0]).shape, &out = g.type(n.outputs[0]).shape;
  for (const Shape* s : {&in, &out})
    for (const Dim& d : *s)
      if (!d.is_static()) return std::nullopt;
  std::vector<std::vector<size_t>> runs(in.size());
  size_t o = 0;
  for (size_t a = 0; a < in.size(); ++a) {
    if (in[a].value == 1) continue;
    int64_t product = 1;
    while (product < in[a].value && o < out.size()) {
      if (out[o].value != 1) {
        product *= out[o].value;
        runs[a].push_back(o);
      }
      ++o;
    }
    if (product != in[a].value) return std::nullopt;
  }
  for (; o < out.size(); ++o)
    if (out[o].value != 1) return std::nullopt;
  return runs;
}

// A float concat computes its operands' element-wise chains in its own kernel, each under the
// guard of its range along the axis (a rotary embedding's two halves: one kernel instead of
// five). Integer chains stay apart: the other operands' arithmetic runs on guarded zeros, and an
// integer division by zero is undefined in the kernel languages.
bool fuses_into_concat(const Node& n, const Graph& g) {
  if (n.op != "concat") return false;
  const DType t = g.type(n.outputs[0]).dtype;
  return t == DType::kF32 || t == DType::kF64 || t == DType::kF16 || t == DType::kBF16;
}

// Whether node n computes into its reader's loop kernel when unmaterialised.
bool fusible(const Node& n, const Graph& g) {
  return fusible(OpRegistry::instance().find(n.op)) || split_runs(n, g).has_value();
}

class Lowering {
 public:
  Lowering(const Graph& g, const LoweringOptions& options)
      : g_(g), options_(options), buf_(g.values.size(), -1) {}

  lir::Program run() {
    decide();
    for (ValueId v : g_.inputs) buf_[v] = add_buffer(v, BufferKind::kInput);
    for (ValueId v : g_.params) {
      auto it = g_.weights.find(g_.values[v].name);
      if (it == g_.weights.end())
        throw_user_error(fmt::format("param %{} has no weight data", g_.values[v].name));
      buf_[v] = add_buffer(v, BufferKind::kConstant);
      p_.buffers[buf_[v]].data = it->second;
    }
    for (int32_t i = 0; i < static_cast<int32_t>(g_.nodes.size()); ++i) emit(i);
    bind_outputs();
    lifetimes();
    lir::plan_buffers(p_);
    return std::move(p_);
  }

 private:
  const Graph& g_;
  LoweringOptions options_;
  lir::Program p_;
  std::vector<int32_t> buf_;
  std::vector<bool> mat_;
  std::vector<int> uses_;

  bool forced_by_graph(ValueId v) const {
    return std::find(g_.outputs.begin(), g_.outputs.end(), v) != g_.outputs.end();
  }

  const OpDef* def_of(ValueId v) const {
    int32_t p = g_.values[v].producer;
    return p < 0 ? nullptr : OpRegistry::instance().find(g_.nodes[p].op);
  }
  const Node* producer(ValueId v) const {
    int32_t p = g_.values[v].producer;
    return p < 0 ? nullptr : &g_.nodes[p];
  }

  // Which values own a buffer.
  void decide() {
    uses_ = passes::use_counts(g_);
    std::vector<bool> forced(g_.values.size(), false), fusible_use(g_.values.size(), true);
    for (ValueId v : g_.outputs) forced[v] = true;
    for (const Node& n : g_.nodes) {
      bool f = fusible(n, g_) || fuses_into_concat(n, g_);
      for (ValueId v : n.inputs) {
        if (!f) forced[v] = true;
        if (!f) fusible_use[v] = false;
      }
    }
    mat_.assign(g_.values.size(), true);
    // Index maps of a buffer (a slice, a transpose, a slice of a transpose...) are only other
    // addresses of it, and a convert of it costs what a load costs: every reader computes them
    // itself, however many readers there are (AMP's widened product outputs read twice by a
    // SiLU, a rotary embedding's halves).
    std::vector<bool> view(g_.values.size(), false), is_param(g_.values.size(), false);
    for (ValueId p : g_.params) is_param[p] = true;
    for (const Node& n : g_.nodes) {
      const OpDef* d = OpRegistry::instance().find(n.op);
      if (!fusible(n, g_) || d->cls == OpClass::kReduce)
        continue;  // calls and reductions write buffers
      ValueId v = n.outputs[0];
      if (forced[v]) continue;
      bool over_buffer = (d->cls == OpClass::kIndexMap || n.op == "convert") && !n.inputs.empty() &&
                         (mat_[n.inputs[0]] || view[n.inputs[0]]);
      view[v] = over_buffer;
      mat_[v] = !(uses_[v] == 1 || over_buffer);
      // A convert of a weight (an f16-stored bias or norm scale of an f32 run) reads only
      // constants, so it is computed once, not per run (the cpu's hoisting, gpu_host's
      // once_launches.h), and its readers read a plain buffer of the wide type: a bias then
      // goes into a vendor product's epilogue instead of keeping an add kernel of its own.
      if (n.op == "convert" && !n.inputs.empty() && is_param[n.inputs[0]]) {
        view[v] = false;
        mat_[v] = true;
      }
    }
    // A float concat whose only reader is a convert that writes a buffer (AMP narrowing a rotary
    // embedding for the attention) is computed in the convert's kernel, which then stores the
    // narrow values directly: no wide copy is written and read back.
    for (const Node& n : g_.nodes) {
      if (n.op != "convert" || !mat_[n.outputs[0]]) continue;
      const ValueId in = n.inputs[0];
      const Node* c = producer(in);
      if (c && fuses_into_concat(*c, g_) && uses_[in] == 1 && !forced_by_graph(in)) mat_[in] = false;
    }
    keep_product_layouts(g_, uses_, mat_);
    // Scalar constants inline as immediates; other constants are buffers.
    for (const Node& n : g_.nodes)
      if (n.op == "constant" && !forced[n.outputs[0]] && n.attr_tensor("value").numel() == 1 &&
          n.attr_tensor("value").dtype() != DType::kC64)
        mat_[n.outputs[0]] = false;
    inline_shared_values(forced, fusible_use);
    if (options_.max_buffers_per_kernel > 0) cap_kernel_buffers(options_.max_buffers_per_kernel);
    // After the buffer cap: cutting an operand out never makes a kernel read more buffers.
    if (options_.max_ops_per_kernel > 0) cap_kernel_ops(options_.max_ops_per_kernel);
  }

  // A small element-wise value read more than once, where every read lands in the same loop
  // kernel, is computed at each read instead of being written and read back: a bias add read
  // twice by the erf GELU after it (x * 0.5 and x / sqrt 2) made a kernel of its own, a pass
  // that wrote the whole tensor for the next one to read. A tree of at most kMaxOps operations
  // is recomputed (the C compiler merges the repeats; the interpreter and the GEMM epilogues
  // compute them twice or merge them too). Nodes go in reverse order, so every reader's kernel
  // is known when its operand is looked at.
  void inline_shared_values(const std::vector<bool>& forced, const std::vector<bool>& fusible_use) {
    constexpr uint32_t kMaxOps = 4;
    const size_t count = g_.values.size();
    std::vector<std::vector<int32_t>> readers(count);
    for (int32_t i = 0; i < static_cast<int32_t>(g_.nodes.size()); ++i)
      for (ValueId v : g_.nodes[i].inputs)
        if (readers[v].empty() || readers[v].back() != i) readers[v].push_back(i);
    // The operations an unmaterialised value brings into its reader's kernel.
    std::vector<uint32_t> ops(count, 0);
    for (const Node& n : g_.nodes) {
      if (!fusible(n, g_) && !fuses_into_concat(n, g_)) continue;
      uint32_t size = 1;
      for (ValueId in : n.inputs) size += mat_[in] ? 0 : ops[in];
      for (ValueId out : n.outputs) ops[out] = size;
    }
    // The value whose loop kernel computes v (v itself when it owns a buffer), -1 for none.
    std::vector<ValueId> kernel(count, -1);
    for (int32_t i = static_cast<int32_t>(g_.nodes.size()) - 1; i >= 0; --i) {
      const Node& n = g_.nodes[i];
      if ((!fusible(n, g_) && !fuses_into_concat(n, g_)) || n.outputs.size() != 1) continue;
      const ValueId v = n.outputs[0];
      // The one kernel all of v's readers compute in, or -1.
      ValueId common = -1;
      bool one = !readers[v].empty();
      for (int32_t r : readers[v]) {
        const Node& u = g_.nodes[r];
        const ValueId k = u.outputs.size() == 1 ? kernel[u.outputs[0]] : -1;
        if (k < 0 || (common >= 0 && k != common)) one = false;
        common = k;
      }
      if (!mat_[v]) {
        kernel[v] = one ? common : -1;
        continue;
      }
      const OpDef* d = OpRegistry::instance().find(n.op);
      const bool cheap =
          d && d->cls == OpClass::kElementwise && n.op != "constant" && ops[v] <= kMaxOps;
      if (one && cheap && uses_[v] > 1 && !forced[v] && fusible_use[v]) {
        mat_[v] = false;
        kernel[v] = common;
      } else {
        kernel[v] = v;
      }
    }
  }

  // A fused value brings its whole unmaterialised expression tree into its consumer's kernel. A
  // tree of more than `cap` ops is cut like a kernel with too many buffers: its largest fused
  // operands become buffers of their own, each computed by a kernel that fits, until it fits too
  // (nodes come in topological order, so every operand already fits).
  void cap_kernel_ops(uint32_t cap) {
    std::vector<uint64_t> ops(g_.values.size(), 1);  // of a fused value: its tree; else its load
    for (const Node& n : g_.nodes) {
      if (!fusible(n, g_) && !fuses_into_concat(n, g_)) continue;
      auto tree = [&] {
        uint64_t s = 1;
        for (ValueId in : n.inputs) s += mat_[in] ? 1 : ops[in];
        return s;
      };
      uint64_t size = tree();
      while (size > cap) {
        ValueId largest = -1;
        for (ValueId in : n.inputs)
          if (!mat_[in] && ops[in] > 1 && (largest < 0 || ops[in] > ops[largest])) largest = in;
        if (largest < 0) break;  // one op with more than `cap` - 1 operands: it stays whole
        mat_[largest] = true;
        size = tree();
      }
      ops[n.outputs[0]] = size;
    }
  }

  // Fusion makes one loop kernel read every buffer its fused chain reaches. On a device that
  // binds at most `cap` buffers per kernel (its output included), a chain that would read more
  // is cut: the widest fused operands become buffers of their own, each computed by a kernel that
  // fits, until the consumer fits too. Nodes come in topological order, so every operand's set
  // has been made to fit before its consumer is looked at. An op that alone reads more than
  // `cap` - 1 buffers cannot be cut here; the device refuses it, naming the kernel.
  void cap_kernel_buffers(uint32_t cap) {
    std::vector<std::vector<ValueId>> reads(g_.values.size());  // of a fused (unmaterialised) value
    auto reads_of = [&](ValueId v) -> std::vector<ValueId> {
      if (mat_[v]) return {v};
      return reads[v];
    };
    for (const Node& n : g_.nodes) {
      // A non-materialised constant is an immediate.
      if ((!fusible(n, g_) && !fuses_into_concat(n, g_)) || n.op == "constant") continue;
      auto gather = [&] {
        std::vector<ValueId> all;
        for (ValueId in : n.inputs)
          for (ValueId r : reads_of(in))
            if (std::find(all.begin(), all.end(), r) == all.end()) all.push_back(r);
        return all;
      };
      std::vector<ValueId> all = gather();
      while (all.size() + 1 > cap) {
        ValueId widest = -1;
        for (ValueId in : n.inputs)
          if (!mat_[in] && reads[in].size() > 1 && (widest < 0 || reads[in].size() > reads[widest].size())) widest = in;
        if (widest < 0) break;
        mat_[widest] = true;
        all = gather();
      }
      reads[n.outputs[0]] = std::move(all);
    }
  }

  int32_t add_buffer(ValueId v, BufferKind kind) {
    lir::Buffer b;
    b.id = static_cast<int32_t>(p_.buffers.size());
    b.name = g_.values[v].name;
    b.dtype = g_.type(v).dtype;
    b.shape = static_dims(g_.type(v).shape);
    b.kind = kind;
    p_.buffers.push_back(std::move(b));
    return p_.buffers.back().id;
  }

  int32_t add_expr(LoopKernel& k, Expr e) {
    k.exprs.push_back(std::move(e));
    return static_cast<int32_t>(k.exprs.size() - 1);
  }

  int32_t load(LoopKernel& k, int32_t buffer, const IMap& m, std::vector<lir::Guard> guards = {}) {
    const lir::Buffer& b = p_.buffers[buffer];
    auto strides = row_major_strides(b.shape);
    Expr e;
    e.kind = ExprKind::kLoad;
    e.dtype = b.dtype;
    e.load.buffer = buffer;
    e.load.strides.assign(k.domain.size(), 0);
    for (size_t d = 0; d < b.shape.size(); ++d) {
      if (b.shape[d] == 1) continue;  // size-1 dims never move the address
      e.load.offset += strides[d] * m.off[d];
      for (size_t j = 0; j < k.domain.size(); ++j) e.load.strides[j] += strides[d] * m.coef[d][j];
    }
    e.load.guards = std::move(guards);
    return add_expr(k, std::move(e));
  }

  // The expression computing value v at map m inside kernel k.
  // `root`: v is the value this kernel computes, so it is built even though it owns a buffer.
  // `guards`: every load reads only inside them (a concat operand's range), else zero.
  int32_t build(LoopKernel& k, ValueId v, const IMap& m, std::string* name, bool root = false,
                const std::vector<lir::Guard>& guards = {}) {
    if (mat_[v] && !root) return load(k, buf_[v], m, guards);
    const Node& n = *producer(v);
    const TensorType& t = g_.type(v);
    if (name->size() < 48) *name += "_" + n.op;
    if (n.op == "constant") {
      Expr e;
      e.kind = ExprKind::kConst;
      e.dtype = t.dtype;
      e.value = n.attr_tensor("value").scalar_at(0);
      return add_expr(k, e);
    }
    if (n.op == "broadcast_in_dim") {
      const IntList& dims = n.attr_ints("dims");
      const TensorType& in = g_.type(n.inputs[0]);
      IMap im;
      for (size_t i = 0; i < dims.size(); ++i) {
        bool stretched = in.shape[i].value == 1 && t.shape[dims[i]].value != 1;
        im.coef.push_back(stretched ? std::vector<int64_t>(k.domain.size(), 0) : m.coef[dims[i]]);
        im.off.push_back(stretched ? 0 : m.off[dims[i]]);
      }
      return build(k, n.inputs[0], im, name, false, guards);
    }
    if (n.op == "transpose") {
      const IntList& perm = n.attr_ints("perm");
      IMap im = m;
      for (size_t i = 0; i < perm.size(); ++i) im.coef[perm[i]] = m.coef[i], im.off[perm[i]] = m.off[i];
      return build(k, n.inputs[0], im, name, false, guards);
    }
    if (n.op == "reshape") {  // splits only (fusible): each input dim is a run of output dims
      const auto runs = *split_runs(n, g_);
      IMap im;
      im.coef.assign(runs.size(), std::vector<int64_t>(k.domain.size(), 0));
      im.off.assign(runs.size(), 0);
      for (size_t a = 0; a < runs.size(); ++a) {
        int64_t stride = 1;
        for (auto o = runs[a].rbegin(); o != runs[a].rend(); ++o) {
          for (size_t j = 0; j < k.domain.size(); ++j) im.coef[a][j] += stride * m.coef[*o][j];
          im.off[a] += stride * m.off[*o];
          stride *= t.shape[*o].value;
        }
      }
      return build(k, n.inputs[0], im, name, false, guards);
    }
    if (n.op == "concat") return build_concat(k, n, m, name, guards);
    if (n.op == "slice") {
      const IntList& start = n.attr_ints("start");
      IntList strides = n.has_attr("strides") ? n.attr_ints("strides") : IntList(start.size(), 1);
      IMap im = m;
      for (size_t d = 0; d < start.size(); ++d) {
        for (auto& c : im.coef[d]) c *= strides[d];
        im.off[d] = start[d] + strides[d] * m.off[d];
      }
      return build(k, n.inputs[0], im, name, false, guards);
    }
    Expr e;
    e.dtype = t.dtype;
    if (n.op == "iota") {
      int64_t dim = n.attr_int("dim");
      if (dim < 0) dim += t.rank();
      e.kind = ExprKind::kIndex;
      e.load.offset = m.off[dim];
      e.load.strides = m.coef[dim];
      return add_expr(k, e);
    }
    for (ValueId in : n.inputs) e.args.push_back(build(k, in, m, name, false, guards));
    if (n.op == "convert") e.kind = ExprKind::kConvert;
    else if (n.op == "select") e.kind = ExprKind::kSelect;
    else e.kind = n.inputs.size() == 1 ? ExprKind::kUnary : ExprKind::kBinary, e.op = n.op;
    return add_expr(k, e);
  }

  void emit(int32_t idx) {
    const Node& n = g_.nodes[idx];
    const OpDef* d = OpRegistry::instance().find(n.op);
    if (n.op == "constant") {
      ValueId v = n.outputs[0];
      if (!mat_[v]) return;
      buf_[v] = add_buffer(v, BufferKind::kConstant);
      p_.buffers[buf_[v]].data = n.attr_tensor("value");
      return;
    }
    // A reshape of a buffer is another name for it; one that only splits dims, of an
    // unmaterialised value, is computed where it is read (or by a kernel of its own, below).
    const bool splits = split_runs(n, g_).has_value();
    if (splits && !mat_[n.outputs[0]] && !mat_[n.inputs[0]]) return;
    if (n.op == "bitcast" || (n.op == "reshape" && (!splits || mat_[n.inputs[0]]))) {
      ValueId v = n.outputs[0];
      buf_[v] = add_buffer(v, BufferKind::kAlias);
      p_.buffers[buf_[v]].alias_of = buf_[n.inputs[0]];
      return;
    }
    if (n.op == "dim_size") throw_internal_error("dim_size survived specialisation");
    if (fusible(n, g_)) {
      ValueId v = n.outputs[0];
      if (!mat_[v]) return;
      buf_[v] = add_buffer(v, BufferKind::kTemp);
      LoopKernel k;
      std::string name;
      const TensorType& t = g_.type(v);
      if (d->cls == OpClass::kReduce) {
        const TensorType& in = g_.type(n.inputs[0]);
        IntList axes = n.attr_ints("axes");
        for (auto& a : axes) a = a < 0 ? a + in.rank() : a;
        std::vector<int64_t> kept, red;
        for (int64_t i = 0; i < in.rank(); ++i)
          (std::find(axes.begin(), axes.end(), i) != axes.end() ? red : kept).push_back(i);
        for (int64_t i : kept) k.domain.push_back(in.shape[i].value);
        for (int64_t i : red) k.domain.push_back(in.shape[i].value);
        k.num_parallel = static_cast<int32_t>(kept.size());
        k.reduce = n.op.substr(std::string("reduce_").size());
        IMap m;
        m.coef.assign(in.rank(), std::vector<int64_t>(k.domain.size(), 0));
        m.off.assign(in.rank(), 0);
        for (size_t j = 0; j < kept.size(); ++j) m.coef[kept[j]][j] = 1;
        for (size_t j = 0; j < red.size(); ++j) m.coef[red[j]][kept.size() + j] = 1;
        name = n.op;
        int32_t root = build(k, n.inputs[0], m, &name);
        k.stores.push_back({buf_[v], root});
        k.name = fmt::format("k{}_{}", p_.kernels.size(), name);
        const auto partial = static_cast<int32_t>(p_.buffers.size());
        if (auto split = split_reduction(k, t.dtype, partial)) {
          lir::Buffer b;
          b.id = partial;
          b.name = g_.values[v].name + ".partials";
          b.dtype = t.dtype;
          b.shape = split->partial_shape;
          b.kind = BufferKind::kTemp;
          p_.buffers.push_back(std::move(b));
          p_.kernels.push_back(std::move(split->partials));
          split->combine.name = fmt::format("k{}_{}_combine", p_.kernels.size(), name);
          p_.kernels.push_back(std::move(split->combine));
          return;
        }
      } else {
        k.domain = static_dims(t.shape);
        k.num_parallel = static_cast<int32_t>(k.domain.size());
        int32_t root = build(k, v, IMap::identity(k.domain.size(), k.domain.size()), &name, true);
        if (name.empty()) name = "_copy";
        name = name.substr(1);
        k.stores.push_back({buf_[v], root});
      }
      k.name = fmt::format("k{}_{}", p_.kernels.size(), name);
      p_.kernels.push_back(std::move(k));
      return;
    }
    if (n.op == "concat" && !mat_[n.outputs[0]]) return;  // computed by its reader
    for (ValueId v : n.outputs) buf_[v] = add_buffer(v, BufferKind::kTemp);
    if (n.op == "pad") return emit_pad(n);
    if (n.op == "concat") return emit_concat(n);
    lir::CallKernel c;
    c.callee = d && d->level == OpLevel::kMir ? n.op : "native:" + n.op;
    for (ValueId v : n.inputs) c.inputs.push_back(buf_[v]);
    for (ValueId v : n.outputs) c.outputs.push_back(buf_[v]);
    c.attrs = n.attrs;
    c.loc = n.loc;
    for (auto& r : n.regions) c.regions.push_back(std::make_shared<lir::Program>(lower_to_lir(*r, options_)));
    p_.kernels.push_back(std::move(c));
  }

  void emit_pad(const Node& n) {
    LoopKernel k;
    k.domain = static_dims(g_.type(n.outputs[0]).shape);
    k.num_parallel = static_cast<int32_t>(k.domain.size());
    const IntList& low = n.attr_ints("low");
    IMap m = IMap::identity(k.domain.size(), k.domain.size());
    std::vector<lir::Guard> guards;
    auto in_dims = static_dims(g_.type(n.inputs[0]).shape);
    for (size_t d = 0; d < k.domain.size(); ++d) {
      m.off[d] = -low[d];
      if (in_dims[d] != k.domain[d]) guards.push_back({static_cast<int32_t>(d), low[d], low[d] + in_dims[d]});
    }
    int32_t val = load(k, buf_[n.inputs[0]], m, guards);
    int32_t inside = -1;
    for (auto& gd : guards) {
      Expr r;
      r.kind = ExprKind::kInRange, r.dtype = DType::kBool, r.dim = gd.dim, r.lo = gd.lo, r.hi = gd.hi;
      int32_t e = add_expr(k, r);
      if (inside >= 0) {
        Expr a;
        a.kind = ExprKind::kBinary, a.op = "and", a.dtype = DType::kBool, a.args = {inside, e};
        e = add_expr(k, a);
      }
      inside = e;
    }
    int32_t root = val;
    if (inside >= 0) {
      int32_t padv = load(k, buf_[n.inputs[1]], IMap{});
      Expr s;
      s.kind = ExprKind::kSelect, s.dtype = p_.buffers[buf_[n.inputs[0]]].dtype, s.args = {inside, val, padv};
      root = add_expr(k, s);
    }
    k.stores.push_back({buf_[n.outputs[0]], root});
    k.name = fmt::format("k{}_pad", p_.kernels.size());
    p_.kernels.push_back(std::move(k));
  }

  void emit_concat(const Node& n) {
    LoopKernel k;
    k.domain = static_dims(g_.type(n.outputs[0]).shape);
    k.num_parallel = static_cast<int32_t>(k.domain.size());
    std::string name;  // "_concat" and the fused chains' ops, from build()
    const int32_t root = build(k, n.outputs[0], IMap::identity(k.domain.size(), k.domain.size()),
                               &name, true);
    k.stores.push_back({buf_[n.outputs[0]], root});
    k.name = fmt::format("k{}_{}", p_.kernels.size(), name.substr(1, 55));
    p_.kernels.push_back(std::move(k));
  }

  // Concat node `n` at map m: each operand's expression under the guard of its range along the
  // axis, chosen by a select. The axis must be one loop dim plus an offset (a concat is built at
  // the identity of its own kernel or of the convert that reads it), so the ranges are guards on
  // that dim.
  int32_t build_concat(LoopKernel& k, const Node& n, const IMap& m, std::string* name,
                       const std::vector<lir::Guard>& guards) {
    const TensorType& t = g_.type(n.outputs[0]);
    int64_t axis = n.attr_int("axis");
    if (axis < 0) axis += t.rank();
    int32_t dim = -1;
    for (size_t j = 0; j < m.coef[axis].size(); ++j) {
      if (m.coef[axis][j] == 0) continue;
      if (m.coef[axis][j] != 1 || dim >= 0) throw_internal_error("concat read through a non-unit map");
      dim = static_cast<int32_t>(j);
    }
    if (dim < 0) throw_internal_error("concat read through a non-unit map");
    std::vector<int32_t> parts;
    std::vector<std::pair<int64_t, int64_t>> ranges;  // along `dim`
    int64_t at = 0;
    for (ValueId v : n.inputs) {
      const int64_t len = g_.type(v).shape[axis].value;
      IMap mi = m;
      mi.off[axis] = m.off[axis] - at;
      const std::pair<int64_t, int64_t> range{at - m.off[axis], at + len - m.off[axis]};
      std::vector<lir::Guard> inner = guards;
      inner.push_back({dim, range.first, range.second});
      parts.push_back(build(k, v, mi, name, false, inner));
      ranges.push_back(range);
      at += len;
    }
    int32_t e = parts.back();
    for (int64_t i = static_cast<int64_t>(parts.size()) - 2; i >= 0; --i) {
      Expr r;
      r.kind = ExprKind::kInRange, r.dtype = DType::kBool, r.dim = dim;
      r.lo = ranges[i].first, r.hi = ranges[i].second;
      const int32_t cond = add_expr(k, r);
      Expr sel;
      sel.kind = ExprKind::kSelect, sel.dtype = t.dtype, sel.args = {cond, parts[i], e};
      e = add_expr(k, sel);
    }
    return e;
  }

  // Graph outputs get buffers of kind kOutput: a temp written by a kernel becomes the output
  // itself; anything else (an input, a constant, an alias, a repeated output) is copied.
  void bind_outputs() {
    std::vector<bool> taken(p_.buffers.size(), false);
    for (ValueId v : g_.outputs) {
      int32_t b = buf_[v];
      const std::string& name = g_.values[v].name;
      if (b >= 0 && p_.buffers[b].kind == BufferKind::kTemp && !taken[b]) {
        p_.buffers[b].kind = BufferKind::kOutput;
        taken[b] = true;
        p_.outputs.emplace_back(name, b);
        continue;
      }
      int32_t out = add_buffer(v, BufferKind::kOutput);
      taken.push_back(true);
      // A 64-bit output (c64, i64, u64) is copied as 32-bit pairs, the same bytes: the target
      // may have no kernel type for the whole (split-complex, split-i64).
      const DType dt = g_.type(v).dtype;
      if (b >= 0 && (dt == DType::kC64 || dt == DType::kI64 || dt == DType::kU64)) {
        copy_pairs(b, out);
        p_.outputs.emplace_back(name, out);
        continue;
      }
      LoopKernel k;
      k.domain = p_.buffers[out].shape;
      k.num_parallel = static_cast<int32_t>(k.domain.size());
      std::string kname;
      int32_t root = b >= 0 ? load(k, b, IMap::identity(k.domain.size(), k.domain.size()))
                            : build(k, v, IMap::identity(k.domain.size(), k.domain.size()), &kname);
      k.stores.push_back({out, root});
      k.name = fmt::format("k{}_output_copy", p_.kernels.size());
      p_.kernels.push_back(std::move(k));
      p_.outputs.emplace_back(name, out);
    }
    for (ValueId v : g_.inputs) p_.inputs.emplace_back(g_.values[v].name, buf_[v]);
  }

  // Copies a 64-bit output that is not written in place (a view of split parts, an input, a
  // constant) as the 32-bit pairs it holds: no kernel language has a complex type, and some
  // targets no 64-bit integers.
  void copy_pairs(int32_t from, int32_t out) {
    const DType whole = p_.buffers[out].dtype;
    const DType half = whole == DType::kC64 ? DType::kF32 : whole == DType::kI64 ? DType::kI32 : DType::kU32;
    auto pair_view = [&](int32_t of) {
      lir::Buffer b = p_.buffers[of];
      b.id = static_cast<int32_t>(p_.buffers.size());
      b.name += "_pairs";
      b.dtype = half;
      b.shape.push_back(2);
      b.kind = BufferKind::kAlias;
      b.alias_of = of;
      b.data = {};
      p_.buffers.push_back(std::move(b));
      return p_.buffers.back().id;
    };
    RLX_CHECK(from >= 0, "a 64-bit output has no buffer to copy from");
    const int32_t src = pair_view(from), dst = pair_view(out);
    LoopKernel k;
    k.domain = p_.buffers[dst].shape;
    k.num_parallel = static_cast<int32_t>(k.domain.size());
    k.stores.push_back({dst, load(k, src, IMap::identity(k.domain.size(), k.domain.size()))});
    k.name = fmt::format("k{}_output_copy", p_.kernels.size());
    p_.kernels.push_back(std::move(k));
  }

  void lifetimes() {
    auto touch = [&](int32_t b, int32_t k) {
      lir::Buffer& s = p_.buffers[p_.storage_of(b)];
      if (s.first_use < 0) s.first_use = k;
      s.last_use = std::max(s.last_use, k);
    };
    for (int32_t k = 0; k < static_cast<int32_t>(p_.kernels.size()); ++k) {
      if (auto* l = std::get_if<LoopKernel>(&p_.kernels[k])) {
        for (auto& s : l->stores) touch(s.buffer, k);
        for (auto& e : l->exprs)
          if (e.kind == ExprKind::kLoad) touch(e.load.buffer, k);
      } else {
        auto& c = std::get<lir::CallKernel>(p_.kernels[k]);
        for (int32_t b : c.outputs) touch(b, k);
        for (int32_t b : c.inputs) touch(b, k);
      }
    }
  }
};

}  // namespace

lir::Program lower_to_lir(const Graph& g, const LoweringOptions& options) { return Lowering(g, options).run(); }

}  // namespace rlx
