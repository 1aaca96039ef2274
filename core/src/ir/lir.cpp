#include "rlx/core/lir.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <string_view>

#include "ir/text_cursor.h"
#include "rlx/core/error.h"

namespace rlx::lir {

int64_t Buffer::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t Buffer::nbytes() const {
  return numel() * static_cast<int64_t>(dtype_size(dtype));
}

int32_t Program::storage_of(int32_t b) const {
  while (buffers.at(b).kind == BufferKind::kAlias) b = buffers[b].alias_of;
  return b;
}

std::vector<int64_t> plan_arena(const Program& p, const std::vector<int32_t>& first_use,
                                int64_t* arena_bytes) {
  struct Slot {
    int64_t offset, size;
    int32_t busy_until;
  };
  std::vector<Slot> slots;
  std::vector<int32_t> order;
  for (auto& b : p.buffers)
    if (b.kind == BufferKind::kTemp) order.push_back(b.id);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return first_use[a] < first_use[b]; });
  std::vector<int64_t> offsets(p.buffers.size(), -1);
  int64_t arena = 0;
  for (int32_t id : order) {
    const Buffer& b = p.buffers[id];
    int64_t need = (std::max<int64_t>(b.nbytes(), 1) + 63) / 64 * 64;
    Slot* best = nullptr;
    // Strictly earlier lifetimes only: a kernel may read an operand after writing its result.
    for (Slot& s : slots)
      if (s.busy_until < first_use[id] && s.size >= need && (!best || s.size < best->size))
        best = &s;
    if (!best) {
      slots.push_back(Slot{arena, need, -1});
      arena += need;
      best = &slots.back();
    }
    offsets[id] = best->offset;
    best->busy_until = std::max(b.last_use, first_use[id]);
  }
  if (arena_bytes) *arena_bytes = arena;
  return offsets;
}

void plan_buffers(Program& p) {
  std::vector<int32_t> first_use;
  for (const Buffer& b : p.buffers) first_use.push_back(b.first_use);
  const std::vector<int64_t> offsets = plan_arena(p, first_use, &p.arena_bytes);
  for (Buffer& b : p.buffers)
    if (b.kind == BufferKind::kTemp) b.arena_offset = offsets[b.id];
}

namespace {

// The textual form (parsed back by parse_program in lir_text.cpp):
//
//   lir.program arena 128 {
//     inputs(%x = b0, %"odd name" = b1)
//     outputs(%y = b4)
//     b0 = input %x : f32[4,8] live [0, 0]
//     b1 = input %"odd name" : i64[] live [0, 0]
//     b2 = constant %w : f32[8,2] live [1, 1] = dense<f32[8,2]: [1.0, 2.0, ...]>
//       (or, printed with ExternalData: = external<"model.lir.safetensors": "b2">)
//     b3 = temp %t : f32[4,8] at 0 live [0, 1]
//     b4 = output %y : f32[4,2] live [1, 2]
//     k0 = loop @k0_add_exp domain [4, 8] parallel 2 {
//       e0 = load b0 offset 0 strides [8, 1] : f32
//       e1 = load b1 offset 0 strides [0, 0] where 0 <= i1 < 4 : i64
//       e2 = convert(e1) : f32
//       e3 = add(e0, e2) : f32
//       e4 = exp(e3) : f32
//       store b3 <- e4
//     }
//     k1 = call dot_general(b3, b2) -> (b4) {lhs_batch = [], ...} loc("fc1")
//     k2 = call while(b4) -> (b4) [
//       lir.program arena 0 { ... },
//       lir.program arena 0 { ... }
//     ]
//   }
//
// Buffer ids, kernel numbers and expression numbers equal their positions; loads, stores and
// calls refer to buffers by id and expressions refer to earlier expressions of their kernel.
//
// Optional buffer fields (of, at, live, data) are printed whenever they differ from their
// defaults, so nothing is lost even for buffers of an unusual kind. Each expression prints the
// fields its kind uses; the others keep their defaults when parsed.

const char* kind_name(BufferKind k) {
  switch (k) {
    case BufferKind::kInput:
      return "input";
    case BufferKind::kOutput:
      return "output";
    case BufferKind::kConstant:
      return "constant";
    case BufferKind::kTemp:
      return "temp";
    case BufferKind::kAlias:
      return "alias";
  }
  return "?";
}

bool name_chars(const std::string& s, std::string_view extra) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && extra.find(c) == extra.npos)
      return false;
  return true;
}

using text::quote;

// Names print bare when the graph printer would print them bare, quoted otherwise.
std::string name_str(const std::string& s) {
  return name_chars(s, ".") ? s : quote(s);
}

// ':' may appear in a bare callee so "native:MatMul" stays readable; the parser reads callees
// with ':' as a name character.
std::string callee_str(const std::string& s) {
  return name_chars(s, ".:") ? s : quote(s);
}

// An elementwise op whose name collides with an expression keyword is quoted so the parser
// cannot read it as that keyword's form.
std::string op_str(const std::string& op) {
  static const std::set<std::string, std::less<>> kKeywords = {"load",     "const",  "index",
                                                               "in_range", "select", "convert"};
  return name_chars(op, ".") && !kKeywords.count(op) ? op : quote(op);
}

std::string int_list(const std::vector<int64_t>& v) {
  return fmt::format("[{}]", fmt::join(v, ", "));
}

std::string type_str(DType t, const std::vector<int64_t>& shape) {
  return fmt::format("{}[{}]", dtype_name(t), fmt::join(shape, ","));
}

// Integral immediates of integer and bool expressions print as integers for readability; the
// rest use the attribute printer's shortest round-trip form.
std::string const_str(double v, DType t) {
  bool integral = is_integer(t) || t == DType::kBool;
  if (integral && std::isfinite(v) && v == std::trunc(v) && std::fabs(v) < 0x1p53)
    return std::to_string(static_cast<int64_t>(v));
  return attr_str(AttrValue{v});
}

std::string guards_str(const std::vector<Guard>& guards) {
  std::string out;
  for (size_t i = 0; i < guards.size(); ++i)
    out += fmt::format("{}{} <= i{} < {}", i ? ", " : " where ", guards[i].lo, guards[i].dim,
                       guards[i].hi);
  return out;
}

std::string args_str(const std::vector<int32_t>& args) {
  std::string out;
  for (size_t i = 0; i < args.size(); ++i) out += fmt::format("{}e{}", i ? ", " : "", args[i]);
  return out;
}

std::string expr_body(const Expr& e) {
  switch (e.kind) {
    case ExprKind::kLoad:
      return fmt::format("load b{} offset {} strides {}{}", e.load.buffer, e.load.offset,
                         int_list(e.load.strides), guards_str(e.load.guards));
    case ExprKind::kConst:
      return "const " + const_str(e.value, e.dtype);
    case ExprKind::kIndex:
      return fmt::format("index offset {} strides {}", e.load.offset, int_list(e.load.strides));
    case ExprKind::kInRange:
      return fmt::format("in_range {} <= i{} < {}", e.lo, e.dim, e.hi);
    case ExprKind::kUnary:
    case ExprKind::kBinary:
      return fmt::format("{}({})", op_str(e.op), args_str(e.args));
    case ExprKind::kSelect:
      return fmt::format("select({})", args_str(e.args));
    case ExprKind::kConvert:
      return fmt::format("convert({})", args_str(e.args));
  }
  return "?";
}

// `key`: where the data goes when `external` takes it (the text then names file and key).
std::string buffer_line(const Buffer& b, ExternalData* external, const std::string& key) {
  std::string out = fmt::format("b{} = {} %{} : {}", b.id, kind_name(b.kind), name_str(b.name),
                                type_str(b.dtype, b.shape));
  if (b.alias_of != -1) out += fmt::format(" of b{}", b.alias_of);
  if (b.arena_offset != -1) out += fmt::format(" at {}", b.arena_offset);
  if (b.first_use != -1 || b.last_use != -1)
    out += fmt::format(" live [{}, {}]", b.first_use, b.last_use);
  if (!b.data.data()) return out;
  if (external && static_cast<int64_t>(b.data.nbytes()) > kInlineConstantBytes) {
    if (external->locate)
      if (auto at = external->locate(b.data))
        return out + fmt::format(" = external<{}: {}>", quote(at->first), quote(at->second));
    external->tensors[key] = b.data;
    return out + fmt::format(" = external<{}: {}>", quote(external->file), quote(key));
  }
  return out + " = " + attr_str(AttrValue{b.data});
}

std::string bindings_str(const std::vector<std::pair<std::string, int32_t>>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i)
    out += fmt::format("{}%{} = b{}", i ? ", " : "", name_str(v[i].first), v[i].second);
  return out;
}

void print_into(const Program& p, int indent, ExternalData* external, const std::string& prefix,
                std::string& out);

void print_loop(const LoopKernel& l, size_t k, const std::string& pad, std::string& out) {
  out += fmt::format("{}k{} = loop @{} domain {} parallel {}", pad, k, name_str(l.name),
                     int_list(l.domain), l.num_parallel);
  if (!l.reduce.empty()) out += " reduce " + name_str(l.reduce);
  out += " {\n";
  for (size_t i = 0; i < l.exprs.size(); ++i)
    out += fmt::format("{}  e{} = {} : {}\n", pad, i, expr_body(l.exprs[i]),
                       dtype_name(l.exprs[i].dtype));
  for (const Store& s : l.stores)
    out += fmt::format("{}  store b{} <- e{}\n", pad, s.buffer, s.expr);
  out += pad + "}\n";
}

std::string buffer_list(const std::vector<int32_t>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) out += fmt::format("{}b{}", i ? ", " : "", ids[i]);
  return out;
}

void print_call(const CallKernel& c, size_t k, const std::string& pad, ExternalData* external,
                const std::string& prefix, std::string& out) {
  out += fmt::format("{}k{} = call {}({}) -> ({})", pad, k, callee_str(c.callee),
                     buffer_list(c.inputs), buffer_list(c.outputs));
  if (!c.attrs.empty()) {
    std::string attrs;
    for (const auto& [key, v] : c.attrs)
      attrs += fmt::format("{}{} = {}", attrs.empty() ? "" : ", ", name_str(key), attr_str(v));
    out += " {" + attrs + "}";
  }
  if (!c.loc.empty()) out += " loc(" + quote(c.loc) + ")";
  if (!c.regions.empty()) {
    out += " [\n";
    for (size_t r = 0; r < c.regions.size(); ++r) {
      print_into(*c.regions[r], static_cast<int>(pad.size()) + 2, external,
                 fmt::format("{}k{}.r{}.", prefix, k, r), out);
      out += r + 1 < c.regions.size() ? ",\n" : "\n";
    }
    out += pad + "]";
  }
  out += "\n";
}

void print_into(const Program& p, int indent, ExternalData* external, const std::string& prefix,
                std::string& out) {
  std::string pad(indent, ' '), inner(indent + 2, ' ');
  out += fmt::format("{}lir.program arena {} {{\n", pad, p.arena_bytes);
  out += fmt::format("{}inputs({})\n", inner, bindings_str(p.inputs));
  out += fmt::format("{}outputs({})\n", inner, bindings_str(p.outputs));
  for (const Buffer& b : p.buffers)
    out += inner + buffer_line(b, external, fmt::format("{}b{}", prefix, b.id)) + "\n";
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    if (auto* l = std::get_if<LoopKernel>(&p.kernels[k]))
      print_loop(*l, k, inner, out);
    else
      print_call(std::get<CallKernel>(p.kernels[k]), k, inner, external, prefix, out);
  }
  out += pad + "}";
}

}  // namespace

std::string print_program(const Program& p, ExternalData* external) {
  std::string out;
  print_into(p, 0, external, "", out);
  return out + "\n";
}

}  // namespace rlx::lir
