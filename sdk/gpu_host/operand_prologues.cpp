#include "operand_prologues.h"

#include <algorithm>

namespace rlx::gpu_host {

namespace {

// What `producer` reads, as (storage, dtype as it loads it), each storage once, in the order of
// its loads; where `norm` is computed by the prologue, the norm's x, scale and bias stand for its
// output. nullopt when the norm's output is loaded other than as f32.
std::optional<std::vector<std::pair<int32_t, DType>>> prologue_reads(
    const lir::LoopKernel& producer, const lir::Program& p, const NormCall* norm) {
  std::vector<std::pair<int32_t, DType>> reads;
  auto add = [&](int32_t storage, DType dtype) {
    for (const auto& [r, t] : reads)
      if (r == storage) return;
    reads.emplace_back(storage, dtype);
  };
  for (const lir::Expr& e : producer.exprs) {
    if (e.kind != lir::ExprKind::kLoad) continue;
    const int32_t r = p.storage_of(e.load.buffer);
    if (norm && r == norm->buffers[norm->shape.out_buffer]) {
      if (e.dtype != DType::kF32) return std::nullopt;
      const sdk::NormShape& s = norm->shape;
      add(norm->buffers[s.x_buffer], s.x_dtype);
      if (s.scale_buffer >= 0) add(norm->buffers[s.scale_buffer], s.scale_dtype);
      if (s.bias_buffer >= 0) add(norm->buffers[s.bias_buffer], s.bias_dtype);
      continue;
    }
    add(r, p.buffers[e.load.buffer].dtype);
  }
  return reads;
}

// `producer` as a prologue over `params` (storage ids, by position) whose store, to `computed`,
// lands one past them; nullptr where the positional kernel stores elsewhere. With `norm`, the
// norm's output is a buffer past that, computed where it is loaded (sdk::NormedRead).
std::shared_ptr<const sdk::OperandPrologue> prologue_over(const lir::LoopKernel& producer,
                                                          const std::vector<int32_t>& params,
                                                          int32_t computed,
                                                          const PositionalKernel& positional,
                                                          const NormCall* norm) {
  auto prologue = std::make_shared<sdk::OperandPrologue>();
  std::vector<int32_t> ids = params;
  ids.push_back(computed);
  if (norm) ids.push_back(norm->buffers[norm->shape.out_buffer]);
  prologue->program = positional(producer, ids);
  prologue->params = static_cast<int32_t>(params.size());
  const auto& k = std::get<lir::LoopKernel>(prologue->program.kernels[0]);
  if (k.stores[0].buffer != prologue->params) return nullptr;
  if (norm) {
    const sdk::NormShape& s = norm->shape;
    auto position = [&](int32_t at) {
      if (at < 0) return -1;
      return static_cast<int32_t>(std::find(params.begin(), params.end(), norm->buffers[at]) -
                                  params.begin());
    };
    prologue->norm = sdk::NormedRead{s.name,
                                     prologue->params + 1,
                                     position(s.x_buffer),
                                     position(s.scale_buffer),
                                     position(s.bias_buffer),
                                     s.rms,
                                     s.epsilon,
                                     s.n,
                                     s.x_offset,
                                     s.x_rows_per_block,
                                     s.x_block_stride,
                                     s.out_dtype};
  }
  return prologue;
}

}  // namespace

std::optional<BoundPrologue> bind_operand_prologue(const lir::LoopKernel& producer,
                                                   const lir::Program& p,
                                                   std::vector<int32_t> buffers, int32_t position,
                                                   const PositionalKernel& positional,
                                                   const NormCall* norm) {
  // The operand itself is never stored, so it is not a parameter (WebGPU derives a shader's
  // bindings from what it reads, and the operand would not be among them): its position binds
  // the first buffer the kernel reads that is not a parameter already (an attention may read
  // another operand in place from the buffer this kernel slices), and the kernel's store goes to
  // a buffer past the parameters.
  const int32_t operand = buffers.at(position);
  const auto reads = prologue_reads(producer, p, norm);
  if (!reads) return std::nullopt;
  BoundPrologue b;
  bool first = true;
  for (const auto& [r, t] : *reads) {
    if (r == operand) return std::nullopt;  // reads what it writes
    if (std::find(buffers.begin(), buffers.end(), r) != buffers.end()) continue;
    if (first) {
      if (t != DType::kF32 && t != DType::kF16 && t != DType::kBF16) return std::nullopt;
      buffers[position] = r;
      b.operand_dtype = t;
      first = false;
      continue;
    }
    buffers.push_back(r);
  }
  if (first) return std::nullopt;  // reads nothing: a constant operand, not worth a prologue
  b.prologue = prologue_over(producer, buffers, operand, positional, norm);
  if (!b.prologue) return std::nullopt;
  b.buffers = std::move(buffers);
  return b;
}

std::optional<size_t> sole_reader_after(const lir::Program& p, size_t i,
                                        const std::vector<int>& readers) {
  const auto& producer = std::get<lir::LoopKernel>(p.kernels[i]);
  if (producer.stores.size() != 1) return std::nullopt;
  const int32_t u = p.storage_of(producer.stores[0].buffer);
  if (readers[u] != 1) return std::nullopt;
  for (const auto& [name, id] : p.outputs)
    if (p.storage_of(id) == u) return std::nullopt;
  std::vector<int32_t> reads;
  for (const lir::Expr& e : producer.exprs)
    if (e.kind == lir::ExprKind::kLoad) reads.push_back(p.storage_of(e.load.buffer));
  auto read = [&](int32_t b) {
    return std::find(reads.begin(), reads.end(), p.storage_of(b)) != reads.end();
  };
  for (size_t j = i + 1; j < p.kernels.size(); ++j) {
    if (const auto* k = std::get_if<lir::LoopKernel>(&p.kernels[j])) {
      for (const lir::Expr& e : k->exprs)
        if (e.kind == lir::ExprKind::kLoad && p.storage_of(e.load.buffer) == u) return j;
      for (const lir::Store& st : k->stores)
        if (read(st.buffer)) return std::nullopt;
      continue;
    }
    const auto& c = std::get<lir::CallKernel>(p.kernels[j]);
    for (int32_t b : c.inputs)
      if (p.storage_of(b) == u) return j;
    // A call's outputs, and a scatter's operand (the runtime may update it in place).
    if (c.callee == "while" || (c.callee == "scatter" && read(c.inputs.at(0)))) return std::nullopt;
    for (int32_t b : c.outputs)
      if (read(b)) return std::nullopt;
  }
  return std::nullopt;
}

std::optional<size_t> sole_loop_reader(const NormCall& n, size_t from, const lir::Program& p,
                                       const std::vector<int>& readers) {
  const int32_t out = n.buffers[n.shape.out_buffer];
  for (const auto& [name, id] : p.outputs)
    if (p.storage_of(id) == out) return std::nullopt;
  auto reads = [&](int32_t b) {
    return std::find(n.buffers.begin(), n.buffers.end(), p.storage_of(b)) != n.buffers.end();
  };
  for (size_t j = from; j < p.kernels.size(); ++j) {
    if (const auto* k = std::get_if<lir::LoopKernel>(&p.kernels[j])) {
      int loads = 0;
      for (const lir::Expr& e : k->exprs)
        loads += e.kind == lir::ExprKind::kLoad && p.storage_of(e.load.buffer) == out;
      if (loads > 0) return loads == readers[out] ? std::optional<size_t>(j) : std::nullopt;
      for (const lir::Store& st : k->stores)
        if (reads(st.buffer)) return std::nullopt;
      continue;
    }
    // A call that reads the output, writes what the norm reads or may update it in place.
    const auto& c = std::get<lir::CallKernel>(p.kernels[j]);
    for (int32_t b : c.inputs)
      if (p.storage_of(b) == out || (c.callee == "scatter" && reads(b))) return std::nullopt;
    for (int32_t b : c.outputs)
      if (c.callee == "while" || reads(b)) return std::nullopt;
  }
  return std::nullopt;
}

std::optional<MatmulCall> with_norm_prologue(const MatmulCall& mm, const sdk::NormShape& norm,
                                             const std::vector<int32_t>& norm_buffers,
                                             DType out_dtype) {
  const sdk::MatmulShape& s = mm.shape;
  if (s.m != 1 || s.a_k != 1 || s.b_k != 1 || s.k != norm.n) return std::nullopt;
  // An epilogue's parameters are the first positions; scale and bias follow them.
  if (s.epilogue && static_cast<int32_t>(mm.buffers.size()) != s.epilogue->params)
    return std::nullopt;
  if (s.batch != norm.rows || (s.batch > 1 && s.a_batch != s.k)) return std::nullopt;
  if (s.a_dtype != out_dtype || norm.x_rows_per_block != 0 || norm.x_offset != 0)
    return std::nullopt;
  MatmulCall f = mm;
  const int32_t x = norm_buffers.at(norm.x_buffer);
  // x takes A's place; it must not be B or C, and scale and bias are parameters of their own
  // (or already one with the same dtype).
  for (size_t j = 0; j < f.buffers.size(); ++j)
    if (static_cast<int32_t>(j) != s.a_buffer && f.buffers[j] == x) return std::nullopt;
  f.buffers[s.a_buffer] = x;
  f.shape.a_dtype = norm.x_dtype;
  sdk::MatmulNormPrologue p;
  p.rms = norm.rms;
  p.epsilon = norm.epsilon;
  p.out_dtype = out_dtype;
  auto position = [&](int32_t at, DType dtype, int32_t* into, DType* dtype_into) {
    if (at < 0) return true;
    const int32_t storage = norm_buffers.at(at);
    auto it = std::find(f.buffers.begin(), f.buffers.end(), storage);
    if (it != f.buffers.end()) return false;  // an operand of the product: never, in practice
    *into = static_cast<int32_t>(f.buffers.size());
    *dtype_into = dtype;
    f.buffers.push_back(storage);
    return true;
  };
  if (!position(norm.scale_buffer, norm.scale_dtype, &p.scale_buffer, &p.scale_dtype) ||
      !position(norm.bias_buffer, norm.bias_dtype, &p.bias_buffer, &p.bias_dtype))
    return std::nullopt;
  f.shape.a_norm = p;
  return f;
}

std::optional<MatmulCall> with_loop_prologue(const MatmulCall& mm, const lir::LoopKernel& producer,
                                             const lir::Program& p,
                                             const PositionalKernel& positional) {
  const sdk::MatmulShape& s = mm.shape;
  if (s.a_norm || s.a_loop || s.m != 1 || s.a_k != 1 || s.b_k != 1) return std::nullopt;
  if (s.batch > 1 && s.a_batch != s.k) return std::nullopt;
  if (!producer.reduce.empty() ||
      producer.num_parallel != static_cast<int32_t>(producer.domain.size()) ||
      producer.stores.size() != 1)
    return std::nullopt;
  const lir::Store& st = producer.stores[0];
  const int32_t a = mm.buffers[s.a_buffer];
  if (p.storage_of(st.buffer) != a || p.buffers[st.buffer].dtype != s.a_dtype) return std::nullopt;
  // The store walks A's elements in row-major order: the element index is the loop's flat index.
  int64_t elements = 1;
  for (int64_t d : producer.domain) elements *= d;
  if (elements != s.batch * s.k) return std::nullopt;
  auto bound = bind_operand_prologue(producer, p, mm.buffers, s.a_buffer, positional, nullptr);
  if (!bound) return std::nullopt;
  MatmulCall f = mm;
  f.buffers = std::move(bound->buffers);
  f.shape.a_dtype = bound->operand_dtype;
  f.shape.a_loop = std::move(bound->prologue);
  return f;
}

std::optional<ComputedUpdates> with_update_prologue(const lir::LoopKernel& producer,
                                                    const lir::CallKernel& scatter,
                                                    const lir::Program& p,
                                                    const PositionalKernel& positional,
                                                    const NormCall* norm) {
  if (scatter.callee != "scatter" || scatter.inputs.size() != 3 || scatter.outputs.size() != 1)
    return std::nullopt;
  if (!producer.reduce.empty() ||
      producer.num_parallel != static_cast<int32_t>(producer.domain.size()) ||
      producer.stores.size() != 1)
    return std::nullopt;
  const int32_t u = p.storage_of(scatter.inputs[2]);
  const lir::Buffer& updates = p.buffers[scatter.inputs[2]];
  const lir::Store& st = producer.stores[0];
  if (p.storage_of(st.buffer) != u || p.buffers[st.buffer].dtype != updates.dtype)
    return std::nullopt;
  if (updates.dtype != DType::kF32 && updates.dtype != DType::kF16 && updates.dtype != DType::kBF16)
    return std::nullopt;
  // The store walks the updates' elements in row-major order: the element is the flat index.
  int64_t elements = 1;
  for (int64_t d : producer.domain) elements *= d;
  if (elements != updates.numel()) return std::nullopt;
  const int32_t operand = p.storage_of(scatter.inputs[0]), out = p.storage_of(scatter.outputs[0]);
  ComputedUpdates c;
  const auto reads = prologue_reads(producer, p, norm);
  if (!reads) return std::nullopt;
  for (const auto& [b, t] : *reads) {
    if (b == u || b == operand || b == out) return std::nullopt;
    c.buffers.push_back(b);
  }
  if (c.buffers.empty()) return std::nullopt;  // a constant row: not worth a prologue
  c.prologue = prologue_over(producer, c.buffers, u, positional, norm);
  if (!c.prologue) return std::nullopt;
  return c;
}

std::optional<std::pair<size_t, ComputedUpdates>> scatter_computing(
    const lir::Program& p, size_t i, const std::vector<int>& readers, const KernelLibrary& library,
    const PositionalKernel& positional, const NormCall* norm) {
  if (!library.computes_updates()) return std::nullopt;
  const std::optional<size_t> j = sole_reader_after(p, i, readers);
  if (!j) return std::nullopt;
  const auto* c = std::get_if<lir::CallKernel>(&p.kernels[*j]);
  if (!c || c->callee != "scatter" || !library.has_call(c->callee) ||
      !library.vendor_call(*c).empty())
    return std::nullopt;
  auto computed =
      with_update_prologue(std::get<lir::LoopKernel>(p.kernels[i]), *c, p, positional, norm);
  if (!computed) return std::nullopt;
  return std::pair{*j, std::move(*computed)};
}

}  // namespace rlx::gpu_host
