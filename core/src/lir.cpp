#include "rlx/core/lir.h"

#include <fmt/format.h>

#include <algorithm>

#include "rlx/core/error.h"

namespace rlx::lir {

int64_t Buffer::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t Buffer::nbytes() const { return numel() * static_cast<int64_t>(dtype_size(dtype)); }

int32_t Program::storage_of(int32_t b) const {
  while (buffers.at(b).kind == BufferKind::kAlias) b = buffers[b].alias_of;
  return b;
}

void plan_buffers(Program& p) {
  struct Slot {
    int64_t offset, size;
    int32_t busy_until;
  };
  std::vector<Slot> slots;
  std::vector<int32_t> order;
  for (auto& b : p.buffers)
    if (b.kind == BufferKind::kTemp) order.push_back(b.id);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return p.buffers[a].first_use < p.buffers[b].first_use; });
  int64_t arena = 0;
  for (int32_t id : order) {
    Buffer& b = p.buffers[id];
    int64_t need = (std::max<int64_t>(b.nbytes(), 1) + 63) / 64 * 64;
    Slot* best = nullptr;
    // Strictly earlier lifetimes only: a kernel may read an operand after writing its result.
    for (Slot& s : slots)
      if (s.busy_until < b.first_use && s.size >= need && (!best || s.size < best->size)) best = &s;
    if (!best) {
      slots.push_back(Slot{arena, need, -1});
      arena += need;
      best = &slots.back();
    }
    b.arena_offset = best->offset;
    best->busy_until = std::max(b.last_use, b.first_use);
  }
  p.arena_bytes = arena;
}

namespace {

std::string kind_name(BufferKind k) {
  switch (k) {
    case BufferKind::kInput: return "input";
    case BufferKind::kOutput: return "output";
    case BufferKind::kConstant: return "constant";
    case BufferKind::kTemp: return "temp";
    case BufferKind::kAlias: return "alias";
  }
  return "";
}

std::string ints(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

std::string expr_str(const Expr& e) {
  std::string args;
  for (size_t i = 0; i < e.args.size(); ++i) args += (i ? ", " : "") + fmt::format("e{}", e.args[i]);
  std::string t(dtype_name(e.dtype));
  switch (e.kind) {
    case ExprKind::kLoad: {
      std::string g;
      for (auto& gd : e.load.guards) g += fmt::format(" guard(i{} in [{},{}))", gd.dim, gd.lo, gd.hi);
      return fmt::format("load b{} offset {} strides {}{} : {}", e.load.buffer, e.load.offset,
                         ints(e.load.strides), g, t);
    }
    case ExprKind::kConst: return fmt::format("const {} : {}", e.value, t);
    case ExprKind::kIndex: return fmt::format("index {} + {} . i : {}", e.load.offset, ints(e.load.strides), t);
    case ExprKind::kInRange: return fmt::format("in_range i{} [{},{}) : bool", e.dim, e.lo, e.hi);
    case ExprKind::kUnary: case ExprKind::kBinary: return fmt::format("{}({}) : {}", e.op, args, t);
    case ExprKind::kSelect: return fmt::format("select({}) : {}", args, t);
    case ExprKind::kConvert: return fmt::format("convert({}) : {}", args, t);
  }
  return "";
}

}  // namespace

std::string print_program(const Program& p) {
  std::string out = fmt::format("lir.program arena {} bytes\n", p.arena_bytes);
  for (const Buffer& b : p.buffers) {
    out += fmt::format("  b{} {} {}{} {}", b.id, kind_name(b.kind), dtype_name(b.dtype), ints(b.shape), b.name);
    if (b.kind == BufferKind::kTemp) out += fmt::format(" @{} live [{},{}]", b.arena_offset, b.first_use, b.last_use);
    if (b.kind == BufferKind::kAlias) out += fmt::format(" = b{}", b.alias_of);
    out += "\n";
  }
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    if (auto* l = std::get_if<LoopKernel>(&p.kernels[k])) {
      out += fmt::format("  k{} loop {} domain {} parallel {}{}\n", k, l->name, ints(l->domain),
                         l->num_parallel, l->reduce.empty() ? "" : " reduce " + l->reduce);
      for (size_t i = 0; i < l->exprs.size(); ++i) out += fmt::format("    e{} = {}\n", i, expr_str(l->exprs[i]));
      for (auto& s : l->stores) out += fmt::format("    store b{} <- e{}\n", s.buffer, s.expr);
    } else {
      auto& c = std::get<CallKernel>(p.kernels[k]);
      std::string a;
      for (auto& [key, v] : c.attrs) {
        if (std::holds_alternative<Tensor>(v)) continue;
        a += fmt::format(" {}={}", key, attr_str(v));
      }
      std::vector<int64_t> in(c.inputs.begin(), c.inputs.end()), o(c.outputs.begin(), c.outputs.end());
      out += fmt::format("  k{} call {} in {} out {}{}\n", k, c.callee, ints(in), ints(o), a);
    }
  }
  return out;
}

}  // namespace rlx::lir
