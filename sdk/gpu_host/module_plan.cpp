#include "module_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>

#include "attention_form.h"
#include "attention_layouts.h"
#include "dot_general_form.h"
#include "epilogue_fusion.h"
#include "host_collective.h"
#include "norm_form.h"
#include "once_launches.h"
#include "operand_prologues.h"
#include "rlx/core/error.h"

namespace rlx::gpu_host {

namespace {

// Invocations per group of a cooperative kernel (render.h): a launch of G groups asks for G * 64
// work-items.
constexpr int64_t kGroupSize = 64;

std::string where(const lir::CallKernel& c) {
  return c.loc.empty() ? c.callee : fmt::format("{} ('{}')", c.callee, c.loc);
}

// `k` alone, its storage buffers `ids` renumbered 0, 1, ... (aliases resolved), so its
// parameters are named by position; `anonymous` also drops the kernel's and buffers' names.
lir::Program positional_program(const lir::LoopKernel& k, const lir::Program& p,
                                const std::vector<int32_t>& ids, bool anonymous) {
  lir::Program local;
  std::map<int32_t, int32_t> index;
  // A storage is declared as the kernel views it: a c64 buffer read or written through its f32
  // view (split-complex) is an f32 array to the kernel.
  std::map<int32_t, int32_t> view;
  for (const lir::Expr& e : k.exprs)
    if (e.kind == lir::ExprKind::kLoad) view.emplace(p.storage_of(e.load.buffer), e.load.buffer);
  for (const lir::Store& st : k.stores) view.emplace(p.storage_of(st.buffer), st.buffer);
  for (int32_t id : ids) {
    const auto seen = view.find(id);
    const lir::Buffer& as = p.buffers[seen == view.end() ? id : seen->second];
    lir::Buffer b;
    b.id = static_cast<int32_t>(local.buffers.size());
    b.name = anonymous ? "" : p.buffers[id].name;
    b.dtype = as.dtype;
    b.shape = as.dtype == p.buffers[id].dtype ? p.buffers[id].shape : as.shape;
    index[id] = b.id;
    local.buffers.push_back(std::move(b));
  }
  lir::LoopKernel c = k;
  if (anonymous) c.name = "k";
  for (lir::Expr& e : c.exprs)
    if (e.kind == lir::ExprKind::kLoad) e.load.buffer = index.at(p.storage_of(e.load.buffer));
  for (lir::Store& s : c.stores) s.buffer = index.at(p.storage_of(s.buffer));
  local.kernels.push_back(std::move(c));
  return local;
}

// Operand slots that read each storage buffer, over every kernel (loop loads, call inputs).
std::vector<int> readers_of(const lir::Program& p) {
  std::vector<int> n(p.buffers.size(), 0);
  for (const lir::Kernel& k : p.kernels) {
    if (const auto* l = std::get_if<lir::LoopKernel>(&k)) {
      for (const lir::Expr& e : l->exprs)
        if (e.kind == lir::ExprKind::kLoad) ++n[p.storage_of(e.load.buffer)];
    } else {
      for (int32_t b : std::get<lir::CallKernel>(k).inputs) ++n[p.storage_of(b)];
    }
  }
  return n;
}

// Whether kernel `j` converts the norm's output, which nothing else reads, to f32, f16 or bf16
// element by element (AMP narrowing a norm's result for the products after it); if so the norm
// stores the converted value itself and `j` is not launched.
bool converts_norm_output(const lir::CallKernel& c, const lir::Program& p, size_t j,
                          const std::vector<int>& readers) {
  if (j >= p.kernels.size()) return false;
  const auto* k = std::get_if<lir::LoopKernel>(&p.kernels[j]);
  const int32_t out = p.storage_of(c.outputs[0]);
  if (!k || !k->reduce.empty() || k->exprs.size() != 2 || k->stores.size() != 1 ||
      k->stores[0].expr != 1 || readers[out] != 1 || p.buffers[out].kind != lir::BufferKind::kTemp)
    return false;
  const lir::Expr &load = k->exprs[0], &convert = k->exprs[1];
  const lir::Buffer& to = p.buffers[p.storage_of(k->stores[0].buffer)];
  const DType t = to.dtype;
  return load.kind == lir::ExprKind::kLoad && p.storage_of(load.load.buffer) == out &&
         load.load.offset == 0 && load.load.guards.empty() && k->domain == p.buffers[out].shape &&
         same_walk(k->domain, load.load.strides, row_major_strides(k->domain)) &&
         convert.kind == lir::ExprKind::kConvert && convert.args == std::vector<int32_t>{0} &&
         to.shape == p.buffers[out].shape &&
         (t == DType::kF32 || t == DType::kF16 || t == DType::kBF16);
}

// Kernel `j` when it only converts a buffer of x's size into `t`, a norm's x that nothing else
// reads (AMP widening a product's result for the norm after it): the storage it reads, which the
// norm then reads itself in its own dtype (f32, f16 or bf16); -1 otherwise.
int32_t converts_norm_input(const lir::Program& p, size_t j, int32_t t,
                            const std::vector<int>& readers) {
  const auto* k = std::get_if<lir::LoopKernel>(&p.kernels[j]);
  const lir::Buffer& x = p.buffers[t];
  if (!k || !k->reduce.empty() || k->exprs.size() != 2 || k->stores.size() != 1 ||
      k->stores[0].expr != 1 || p.storage_of(k->stores[0].buffer) != t || readers[t] != 1 ||
      x.kind != lir::BufferKind::kTemp || k->domain != x.shape)
    return -1;
  const lir::Expr &load = k->exprs[0], &convert = k->exprs[1];
  if (load.kind != lir::ExprKind::kLoad || load.load.offset != 0 || !load.load.guards.empty() ||
      !same_walk(k->domain, load.load.strides, row_major_strides(k->domain)) ||
      convert.kind != lir::ExprKind::kConvert || convert.args != std::vector<int32_t>{0})
    return -1;
  const int32_t from = p.storage_of(load.load.buffer);
  const DType d = p.buffers[from].dtype;
  // The same elements in the same order (a reshape between them is only an alias).
  if (p.buffers[from].numel() != x.numel() ||
      (d != DType::kF32 && d != DType::kF16 && d != DType::kBF16))
    return -1;
  return from;
}

// Where a norm finds its rows of n elements in the buffer a slice copied them from.
struct SlicedRows {
  int32_t from = -1;  // -1: not a slice the norm can read through
  int64_t offset = 0, rows_per_block = 0, block_stride = 0;
};

// Kernel `j` when it copies (and maybe widens) a slice of another buffer into `t`, nothing else
// reads `t`, and each n-element row of `t` is contiguous in the source (the slice's last dim is
// a whole number of rows, read with stride 1; its outer dims walk the source as one strided
// dim): the source and where row r starts there (NormShape::x_offset...), which the norm then
// reads itself.
SlicedRows slices_norm_input(const lir::Program& p, size_t j, int32_t t, int64_t n,
                             const std::vector<int>& readers) {
  const auto* k = std::get_if<lir::LoopKernel>(&p.kernels[j]);
  const lir::Buffer& x = p.buffers[t];
  const size_t exprs = k ? k->exprs.size() : 0;
  if (!k || !k->reduce.empty() || exprs < 1 || exprs > 2 || k->stores.size() != 1 ||
      k->stores[0].expr != static_cast<int32_t>(exprs) - 1 ||
      p.storage_of(k->stores[0].buffer) != t || readers[t] != 1 ||
      x.kind != lir::BufferKind::kTemp || k->domain != x.shape || k->domain.empty() || n <= 0)
    return {};
  // A slice, or a slice that also converts (the norm converts every element it loads anyway).
  if (exprs == 2 &&
      (k->exprs[1].kind != lir::ExprKind::kConvert || k->exprs[1].args != std::vector<int32_t>{0}))
    return {};
  const lir::Expr& e = k->exprs[0];
  const std::vector<int64_t>& dom = k->domain;
  const std::vector<int64_t>& st = e.load.strides;
  if (e.kind != lir::ExprKind::kLoad || !e.load.guards.empty() || st.size() != dom.size() ||
      dom.back() % n != 0 || (dom.back() > 1 && st.back() != 1))
    return {};
  // The outer dims of more than one element must nest, from the innermost out: each one's
  // stride is the next inner one's stride times that one's size. The innermost one's stride is
  // the step from a block of rows to the next.
  int64_t block_stride = 0, expected = -1;
  for (size_t d = dom.size() - 1; d-- > 0;) {
    if (dom[d] == 1) continue;
    if (expected < 0)
      block_stride = st[d];
    else if (st[d] != expected)
      return {};
    expected = st[d] * dom[d];
  }
  const int32_t from = p.storage_of(e.load.buffer);
  const DType d = p.buffers[from].dtype;
  for (DType t : {d, x.dtype})
    if (t != DType::kF32 && t != DType::kF16 && t != DType::kBF16) return {};
  // Only a widening convert is exact: a narrowed slice's rounding would be lost.
  if (d != x.dtype && x.dtype != DType::kF32) return {};
  SlicedRows r{from, e.load.offset, dom.back() / n, block_stride};
  return r;
}

}  // namespace

ModulePlan plan_module(const lir::Program& p, const KernelLibrary& library) {
  const sdk::Dialect& d = library.dialect();
  ModulePlan plan;
  plan.source = d.prelude + "\n";
  // Kernels are rendered over their own buffers numbered by position, so the layers of a model
  // render to the same text but for names; each distinct body is compiled once and the other
  // kernels launch it with their own buffers (a device compiler's time is per kernel).
  std::map<std::string, std::string> bodies;  // anonymous text -> symbol
  auto add_loop = [&](const lir::LoopKernel& k) {
    std::vector<int32_t> ids = sdk::kernel_buffers(k, p);
    lir::Program local = positional_program(k, p, ids, false);
    lir::LoopKernel& lk = std::get<lir::LoopKernel>(local.kernels[0]);
    std::string symbol = sdk::kernel_symbol(k);
    lir::Program anonymous = positional_program(k, p, ids, true);
    auto [it, fresh] = bodies.try_emplace(
        sdk::render_kernel(std::get<lir::LoopKernel>(anonymous.kernels[0]), anonymous, d), symbol);
    if (fresh) plan.source += sdk::render_kernel(lk, local, d) + "\n";
    Launch l;
    l.symbol = it->second;
    l.buffers = std::move(ids);
    for (const lir::Store& st : k.stores) l.writes.push_back(p.storage_of(st.buffer));
    // Lanes per output: 1, or a SIMD group's width where the dialect reduces across one; or
    // several outputs per work-item (Dialect::max_outputs_per_item).
    l.work_items = sdk::work_items(k) * sdk::lanes_per_output(k, d) / sdk::outputs_per_item(k, d);
    plan.steps.emplace_back(std::move(l));
  };
  // A kernel rendered from a shape (render_matmul, render_attention): rendered once under the
  // name "k" to find an identical body already in the module, as loop kernels are.
  auto add_shaped = [&](auto shape, const std::vector<int32_t>& buffers, auto render,
                        auto work_items) {
    const std::string symbol = sdk::kernel_symbol(shape.name);
    auto anonymous = shape;
    anonymous.name = "k";
    auto body = render(anonymous, d);
    auto [it, fresh] = bodies.try_emplace(body.source, symbol);
    if (fresh) plan.source += render(shape, d).source + "\n";
    Launch l{it->second, buffers, work_items(body), {}, -1};
    if constexpr (requires { body.scratch_bytes; }) l.scratch_bytes = body.scratch_bytes;
    plan.steps.emplace_back(std::move(l));
  };
  auto add_matmul = [&](const MatmulCall& mm) {
    auto render = [&library](const sdk::MatmulShape& s, const sdk::Dialect& dialect) {
      if (std::optional<sdk::MatmulKernel> own = library.own_matmul(s)) return *own;
      return sdk::render_matmul(s, dialect);
    };
    add_shaped(mm.shape, mm.buffers, render,
               [](const sdk::MatmulKernel& k) { return k.groups * kGroupSize; });
  };
  auto add_attention = [&](const AttentionCall& a) {
    auto render = [&library](const sdk::AttentionShape& s, const sdk::Dialect& dialect) {
      if (std::optional<sdk::AttentionKernel> own = library.own_attention(s)) return *own;
      return sdk::render_attention(s, dialect);
    };
    add_shaped(a.shape, a.buffers, render,
               [](const sdk::AttentionKernel& k) { return k.groups * kGroupSize; });
  };
  const std::vector<int> readers = readers_of(p);
  // Product `j` (with the kernels its epilogue took) as a kernel that computes norm `n` first,
  // when nothing else reads the norm's output and the kernel the product gets takes the norm: the
  // SDK's GEMV does, a library's own where it says so (if it declines, the norm keeps its launch).
  auto norm_in_product = [&](const NormCall& n,
                             size_t j) -> std::optional<std::pair<MatmulCall, size_t>> {
    if (d.shared_array.empty() || j >= p.kernels.size()) return std::nullopt;
    const auto* c = std::get_if<lir::CallKernel>(&p.kernels[j]);
    if (!c || c->callee != "dot_general") return std::nullopt;
    const int32_t out = n.buffers[n.shape.out_buffer];
    if (readers[out] != 1) return std::nullopt;
    for (const auto& [name, id] : p.outputs)
      if (p.storage_of(id) == out) return std::nullopt;
    std::optional<MatmulCall> mm = matmul_form(*c, p, fmt::format("k{}_dot_general", j));
    if (!mm || mm->buffers[mm->shape.a_buffer] != out || !library.vendor_matmul(mm->shape).empty())
      return std::nullopt;
    const size_t epilogue = fuse_epilogue(*mm, p, j, readers);
    std::optional<MatmulCall> fused =
        with_norm_prologue(*mm, n.shape, n.buffers, n.shape.out_dtype);
    if (!fused) return std::nullopt;
    if (!library.own_matmul(fused->shape) && library.own_matmul(mm->shape)) return std::nullopt;
    return std::pair{*fused, epilogue};
  };
  auto positional = [&](const lir::LoopKernel& k, const std::vector<int32_t>& ids) {
    lir::Program local = positional_program(k, p, ids, false);
    for (lir::Buffer& b : local.buffers) b.name.clear();
    return local;
  };
  // Product `i + 1` with loop kernel `i` computing its A (operand_prologues.h), its epilogue
  // fused as the product would fuse it (how many kernels that took: .second), when nothing else
  // reads A and the kernel the product gets takes the prologue, as above.
  auto loop_in_product = [&](size_t i) -> std::optional<std::pair<MatmulCall, size_t>> {
    if (d.shared_array.empty() || i + 1 >= p.kernels.size()) return std::nullopt;
    const auto& producer = std::get<lir::LoopKernel>(p.kernels[i]);
    const auto* c = std::get_if<lir::CallKernel>(&p.kernels[i + 1]);
    if (!c || c->callee != "dot_general" || producer.stores.size() != 1) return std::nullopt;
    const int32_t a = p.storage_of(producer.stores[0].buffer);
    if (readers[a] != 1) return std::nullopt;
    for (const auto& [name, id] : p.outputs)
      if (p.storage_of(id) == a) return std::nullopt;
    std::optional<MatmulCall> mm = matmul_form(*c, p, fmt::format("k{}_dot_general", i + 1));
    if (!mm || mm->buffers[mm->shape.a_buffer] != a || !library.vendor_matmul(mm->shape).empty())
      return std::nullopt;
    const size_t epilogue = fuse_epilogue(*mm, p, i + 1, readers);
    std::optional<MatmulCall> fused = with_loop_prologue(*mm, producer, p, positional);
    if (!fused) return std::nullopt;
    if (!library.own_matmul(fused->shape) && library.own_matmul(mm->shape)) return std::nullopt;
    return std::pair{std::move(*fused), epilogue};
  };
  // Scatters that compute their updates themselves: scatter kernel index -> what computes them.
  std::map<size_t, ComputedUpdates> computes_updates;
  // Norms put off until the loop kernel that alone reads them: that kernel's index -> the norm.
  // Where a scatter computes the loop kernel, it computes the norm too (a decode step's k norm
  // before the key's rotation); else the norm runs right before it.
  std::map<size_t, NormCall> norm_into;
  auto norm_of = [&](size_t i) -> const NormCall* {
    auto it = norm_into.find(i);
    return it == norm_into.end() ? nullptr : &it->second;
  };
  // Attention `a` with loop kernel `i` computing its q (AttentionShape::q_loop), when the kernel
  // the attention gets takes that (a library's own kernel that declines it keeps the loop
  // kernel's launch); else nullopt.
  auto with_q_prologue = [&](size_t i, AttentionCall a) -> std::optional<AttentionCall> {
    auto bound = bind_operand_prologue(std::get<lir::LoopKernel>(p.kernels[i]), p, a.buffers,
                                       a.shape.q_buffer, positional, nullptr);
    if (!bound) return std::nullopt;
    const bool own = library.own_attention(a.shape).has_value();
    a.buffers = std::move(bound->buffers);
    a.shape.q_dtype = bound->operand_dtype;
    a.shape.q_loop = std::move(bound->prologue);
    if (own && !library.own_attention(a.shape)) return std::nullopt;
    return a;
  };
  // Transposes that split heads for an attention, which reads their input instead: kernel index
  // -> (attention index, operand 0..2, the storage the attention reads).
  std::map<size_t, std::pair<size_t, std::pair<int, SplitHeads>>> split;
  // The attention after loop kernel `i` that may compute its q itself: its index. It is asked
  // with the operands it may read in place read so (the transposes in `split`, filled before
  // this is called), as they change its parameters.
  auto attention_computing_q = [&](size_t i) -> std::optional<size_t> {
    const std::optional<size_t> j = sole_reader_after(p, i, readers);
    const auto* c = j ? std::get_if<lir::CallKernel>(&p.kernels[*j]) : nullptr;
    const auto& producer = std::get<lir::LoopKernel>(p.kernels[i]);
    if (!c || c->callee != "native:Attention" ||
        p.storage_of(c->inputs.at(0)) != p.storage_of(producer.stores[0].buffer))
      return std::nullopt;
    AttentionCall a = attention_call(*c, p, fmt::format("k{}_attention", *j));
    std::vector<std::pair<int, SplitHeads>> splits;
    for (const auto& [kernel, use] : split)
      if (use.first == *j) splits.push_back(use.second);
    read_split_heads(a, splits);
    if (!with_q_prologue(i, std::move(a))) return std::nullopt;
    return j;
  };
  // Attentions that compute their q: attention kernel index -> the loop kernel computing it.
  std::map<size_t, size_t> computes_q;
  // Products that compute their A themselves: product kernel index -> (the call, epilogue size).
  std::map<size_t, std::pair<MatmulCall, size_t>> computes_a;
  // Buffers a fused kernel writes before their own first kernel: storage -> the writing kernel.
  std::map<int32_t, int32_t> written_early;
  // Buffers read after their own last kernel (an attention reading what a skipped transpose
  // read): storage -> the reading kernel.
  std::map<int32_t, int32_t> read_late;
  // What loop kernel `k` reads (and the norm put off until it) is read until kernel `j`, which
  // computes k's output itself.
  auto read_until = [&](const lir::LoopKernel& k, size_t j, const NormCall* norm) {
    std::vector<int32_t> reads = norm ? norm->buffers : std::vector<int32_t>{};
    for (const lir::Expr& e : k.exprs)
      if (e.kind == lir::ExprKind::kLoad) reads.push_back(p.storage_of(e.load.buffer));
    for (int32_t b : reads) read_late[b] = std::max(read_late[b], static_cast<int32_t>(j));
  };
  auto add_norm = [&](const NormCall& n) {
    add_shaped(n.shape, n.buffers, sdk::render_norm,
               [](const sdk::NormKernel& k) { return k.groups * kGroupSize; });
  };
  // Converts that only change a norm's x dtype, which the norm reads unconverted instead: kernel
  // index -> (norm index, the storage the norm reads).
  std::map<size_t, std::pair<size_t, int32_t>> widen;
  // Slices a norm reads through instead (slices_norm_input): kernel index -> (norm index, rows).
  std::map<size_t, std::pair<size_t, SlicedRows>> sliced;
  {
    std::map<int32_t, size_t> writer;  // storage -> the loop kernel storing it
    for (size_t i = 0; i < p.kernels.size(); ++i) {
      if (const auto* k = std::get_if<lir::LoopKernel>(&p.kernels[i])) {
        for (const lir::Store& st : k->stores) writer[p.storage_of(st.buffer)] = i;
        continue;
      }
      const auto& c = std::get<lir::CallKernel>(p.kernels[i]);
      if (c.callee == "native:LayerNorm" || c.callee == "native:RMSNorm") {
        const int32_t t = p.storage_of(c.inputs.at(0));
        auto w = writer.find(t);
        if (w == writer.end()) continue;
        // x is a slice, a widened slice, or widened: the norm reads the slice's source or the
        // convert's input itself.
        const lir::Buffer& x = p.buffers.at(c.inputs[0]);  // the norm's view: rows of n
        const int64_t n = x.shape.empty() ? 0 : x.shape.back();
        size_t slice_kernel = w->second;
        SlicedRows rows;
        const int32_t widened = converts_norm_input(p, w->second, t, readers);
        if (widened >= 0) {
          if (auto v = writer.find(widened); v != writer.end()) {
            slice_kernel = v->second;
            rows = slices_norm_input(p, v->second, widened, n, readers);
          }
        } else {
          rows = slices_norm_input(p, w->second, t, n, readers);
        }
        auto distinct = [&](int32_t from) {  // not the norm's scale or bias
          for (size_t j = 1; j < c.inputs.size(); ++j)
            if (p.storage_of(c.inputs[j]) == from) return false;
          return from >= 0;
        };
        if (widened >= 0 && distinct(widened)) widen[w->second] = {i, widened};
        if (rows.from >= 0 && distinct(rows.from) && (widened < 0 || widen.count(w->second)))
          sliced[slice_kernel] = {i, rows};
        continue;
      }
      if (c.callee != "native:Attention") continue;
      for (int operand = 0; operand < 3 && operand < static_cast<int>(c.inputs.size()); ++operand) {
        const int32_t t = p.storage_of(c.inputs[operand]);
        auto w = writer.find(t);
        if (w == writer.end()) continue;
        const SplitHeads heads = splits_heads(p, w->second, t, readers);
        if (heads.from >= 0) split[w->second] = {i, {operand, heads}};
      }
    }
  }
  // Attention -> the operands it reads unsplit: filled when the loop below reaches a candidate
  // transpose as a kernel of its own (one that a product fused into its epilogue never is).
  std::map<size_t, std::vector<std::pair<int, SplitHeads>>> split_for;
  // Norm -> the storage it reads as x instead of a skipped convert's output (filled likewise).
  std::map<size_t, int32_t> widened_for;
  std::map<size_t, SlicedRows> sliced_for;
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    if (auto it = split.find(i); it != split.end()) {
      split_for[it->second.first].push_back(it->second.second);  // the attention reads its input
      continue;
    }
    if (auto it = sliced.find(i); it != sliced.end()) {
      sliced_for[it->second.first] = it->second.second;  // the norm reads the slice's source
      const int32_t from = it->second.second.from;
      read_late[from] = std::max(read_late[from], static_cast<int32_t>(it->second.first));
      continue;
    }
    if (auto it = widen.find(i); it != widen.end()) {
      widened_for[it->second.first] = it->second.second;  // the norm reads the unconverted x
      read_late[it->second.second] =
          std::max(read_late[it->second.second], static_cast<int32_t>(it->second.first));
      continue;
    }
    if (auto* k = std::get_if<lir::LoopKernel>(&p.kernels[i])) {
      // A later scatter may compute it (no launch), and the norm put off until it.
      if (auto taken = scatter_computing(p, i, readers, library, positional, norm_of(i))) {
        read_until(*k, taken->first, norm_of(i));
        computes_updates.emplace(taken->first, std::move(taken->second));
        continue;
      }
      // Else the norm put off until it runs here: an attention computes the rotated queries
      // but not the norm before them (the SDK's attention evaluates its q prologue once per
      // element of the row, and a row sum in each made llvmpipe's compiler take minutes).
      if (const NormCall* n = norm_of(i)) add_norm(*n);
      // Or a later attention, as its q.
      if (auto j = attention_computing_q(i)) {
        read_until(*k, *j, nullptr);
        computes_q.emplace(*j, i);
        continue;
      }
      if (auto taken = loop_in_product(i)) {  // the next product computes it (no launch)
        read_until(*k, i + 1, nullptr);
        computes_a.emplace(i + 1, std::move(*taken));
        continue;
      }
      add_loop(*k);
      continue;
    }
    const auto& c = std::get<lir::CallKernel>(p.kernels[i]);
    if (auto it = computes_a.find(i); it != computes_a.end()) {
      const auto& [mm, fused] = it->second;
      if (fused > 0) written_early[mm.buffers[mm.shape.c_buffer]] = static_cast<int32_t>(i);
      add_matmul(mm);
      i += fused;
      continue;
    }
    if (c.callee == "dot_general") {
      const std::string name = fmt::format("k{}_dot_general", i);
      // Matrix products get a tiled kernel where the dialect has cooperative groups; f64, integer
      // and non-affine products (rare) keep the per-output loop: a different kernel on the same
      // device at the same dtype, not a fallback.
      std::optional<MatmulCall> mm;
      if (!d.shared_array.empty()) mm = matmul_form(c, p, name);
      const std::string vendor = mm ? library.vendor_matmul(mm->shape) : "";
      if (!vendor.empty()) {
        // The vendor product stores C; the kernels after it (bias, activation) run as they are.
        plan.source += fmt::format("// {}: {} C[{}, {}, {}] = A x B (k = {})\n", name, vendor,
                                   mm->shape.batch, mm->shape.m, mm->shape.n, mm->shape.k);
        LibraryMatmul lm{mm->shape, mm->buffers, vendor};
        const size_t fused =
            library.vendor_adds_bias_and_residual() ? fuse_vendor_epilogue(lm, p, i, readers) : 0;
        if (fused > 0) written_early[lm.buffers[lm.shape.c_buffer]] = static_cast<int32_t>(i);
        if (lm.bias >= 0 || lm.residual >= 0)
          plan.source += fmt::format(
              "//   adding {}{} before the store, for kernel {}\n",
              lm.bias >= 0 ? "a bias row" : "",
              lm.residual >= 0 ? (lm.bias >= 0 ? " and a residual" : "a residual") : "", i + 1);
        plan.steps.emplace_back(std::move(lm));
        i += fused;
      } else if (mm) {
        const size_t fused = fuse_epilogue(*mm, p, i, readers);
        if (fused > 0) written_early[mm->buffers.back()] = static_cast<int32_t>(i);
        add_matmul(*mm);
        i += fused;
      } else
        add_loop(dot_general_kernel(c, p, name));
    } else if (c.callee == "native:Attention") {
      const size_t attention = i;  // i moves past a transpose it takes (below)
      AttentionCall a = attention_call(c, p, fmt::format("k{}_attention", i));
      read_split_heads(a, split_for[i]);
      for (const auto& entry : split_for[i])
        read_late[entry.second.from] =
            std::max(read_late[entry.second.from], static_cast<int32_t>(i));
      if (merges_heads(a, c, p, i + 1, readers)) {
        const auto& transpose = std::get<lir::LoopKernel>(p.kernels[i + 1]);
        a.buffers[a.shape.out_buffer] = p.storage_of(transpose.stores[0].buffer);
        a.shape.merge_heads = true;
        written_early[a.buffers[a.shape.out_buffer]] = static_cast<int32_t>(i);
        ++i;
      }
      if (auto q = computes_q.find(attention); q != computes_q.end()) {
        std::optional<AttentionCall> computing = with_q_prologue(q->second, a);
        if (!computing)
          throw_internal_error(fmt::format("{}: its q prologue was refused", where(c)));
        a = std::move(*computing);
        computes_q.erase(q);
      }
      add_attention(a);
    } else if (c.callee == "native:LayerNorm" || c.callee == "native:RMSNorm") {
      NormCall n = norm_call(c, p, fmt::format("k{}_{}", i, c.callee.substr(7)));
      if (auto it = widened_for.find(i); it != widened_for.end()) {
        n.buffers[n.shape.x_buffer] = it->second;
        n.shape.x_dtype = p.buffers[it->second].dtype;
      }
      if (auto it = sliced_for.find(i); it != sliced_for.end()) {
        n.buffers[n.shape.x_buffer] = it->second.from;
        n.shape.x_dtype = p.buffers[it->second.from].dtype;
        n.shape.x_offset = it->second.offset;
        n.shape.x_rows_per_block = it->second.rows_per_block;
        n.shape.x_block_stride = it->second.block_stride;
      }
      const bool converted = converts_norm_output(c, p, i + 1, readers);
      if (converted) {
        const auto& convert = std::get<lir::LoopKernel>(p.kernels[i + 1]);
        const int32_t to = p.storage_of(convert.stores[0].buffer);
        n.buffers[n.shape.out_buffer] = to;
        n.shape.out_dtype = p.buffers[to].dtype;
      }
      // The product after it may normalise its A itself (operand_prologues.h): one launch fewer.
      const size_t j = i + (converted ? 2 : 1);
      if (auto fused = norm_in_product(n, j)) {
        const int32_t x = fused->first.buffers[fused->first.shape.a_buffer];
        read_late[x] = std::max(read_late[x], static_cast<int32_t>(j));
        if (fused->second > 0)
          written_early[fused->first.buffers[fused->first.shape.c_buffer]] =
              static_cast<int32_t>(j);
        add_matmul(fused->first);
        i = j + fused->second;
        continue;
      }
      // Put off until its reader (norm_into), where the library's prologues compute norms.
      auto reader = library.computes_norms() ? sole_loop_reader(n, j, p, readers) : std::nullopt;
      if (reader && !norm_into.count(*reader)) {
        for (int32_t b : n.buffers)
          read_late[b] = std::max(read_late[b], static_cast<int32_t>(*reader));
        norm_into.emplace(*reader, std::move(n));
        i += converted ? 1 : 0;
        continue;
      }
      if (converted) {
        written_early[n.buffers[n.shape.out_buffer]] = static_cast<int32_t>(i);
        ++i;
      }
      add_norm(n);
    } else if (c.callee == "while") {
      Step loop = HostWhile{static_cast<int32_t>(i)};
      plan.steps.push_back(std::move(loop));
    } else if (host_staged(c.attrs)) {
      // A collective the user allowed to stage through the host (host_collective.h).
      LibraryCall call{static_cast<int32_t>(i), {}, kHostStagingVendor};
      for (const auto* list : {&c.inputs, &c.outputs})
        for (int32_t b : *list) call.buffers.push_back(p.storage_of(b));
      plan.source += fmt::format("// k{}: {} through {}\n", i, where(c), kHostStagingVendor);
      plan.steps.emplace_back(std::move(call));
    } else if (std::string vendor = library.vendor_call(c); !vendor.empty()) {
      LibraryCall call{static_cast<int32_t>(i), {}, vendor};
      for (const auto* list : {&c.inputs, &c.outputs})
        for (int32_t b : *list) call.buffers.push_back(p.storage_of(b));
      plan.source += fmt::format("// k{}: {} through {}\n", i, where(c), vendor);
      plan.steps.emplace_back(std::move(call));
    } else if (library.has_call(c.callee)) {
      int32_t slot = static_cast<int32_t>(plan.checks.size());
      auto computed = computes_updates.find(i);
      NativeKernel n =
          library.call_kernel(c, p, static_cast<int32_t>(i), slot,
                              computed == computes_updates.end() ? nullptr : &computed->second);
      if (computed != computes_updates.end()) computes_updates.erase(computed);
      plan.source += n.source + "\n";
      Launch l{n.symbol, n.buffers, n.work_items, n.copies_before, -1};
      if (n.checks_indices) {
        l.status_slot = slot;
        plan.checks.push_back({n.where.empty() ? where(c) : n.where, n.axis_size});
      }
      plan.steps.emplace_back(std::in_place_type<Launch>, std::move(l));
    } else {
      throw Error(ErrorKind::kCompile,
                  fmt::format("the {} kernel library has no kernel for the library call {}", d.name,
                              where(c)));
    }
  }
  // A skipped kernel's output is computed by its reader, which must have taken it.
  if (!computes_q.empty() || !computes_updates.empty())
    throw_internal_error("a kernel whose reader computes its output was never computed");
  if (!written_early.empty() || !read_late.empty()) {
    // The temporaries' sizes and lifetimes only (plan_arena reads nothing else), without the
    // constants' data.
    lir::Program lifetimes;
    std::vector<int32_t> first_use;
    for (const lir::Buffer& b : p.buffers) {
      lir::Buffer c;
      if (b.kind == lir::BufferKind::kTemp) c = b;
      c.id = b.id;
      c.kind = b.kind;
      lifetimes.buffers.push_back(std::move(c));
      first_use.push_back(b.first_use);
    }
    for (auto [storage, kernel] : written_early)
      first_use[storage] = std::min(first_use[storage], kernel);
    for (auto [storage, kernel] : read_late) {
      lir::Buffer& b = lifetimes.buffers[storage];
      b.last_use = std::max(b.last_use, kernel);
    }
    plan.arena_offsets = lir::plan_arena(lifetimes, first_use, nullptr);
  }
  mark_once_launches(p, plan);
  return plan;
}

}  // namespace rlx::gpu_host
