#include "gemm_epilogue_fusion.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <sstream>
#include <vector>

#include "attention_layout_fusion.h"
#include "lir_kernel_uses.h"
#include "rlx/core/error.h"

namespace rlx::cpu {

namespace {

struct OpName {
  const char* name;
  EpOp op;
  int arity;
};
constexpr OpName kOps[] = {
    {"neg", EpOp::kNeg, 1},   {"abs", EpOp::kAbs, 1},     {"exp", EpOp::kExp, 1},
    {"tanh", EpOp::kTanh, 1}, {"erf", EpOp::kErf, 1},     {"sqrt", EpOp::kSqrt, 1},
    {"rsqrt", EpOp::kRsqrt, 1}, {"logistic", EpOp::kLogistic, 1},
    {"add", EpOp::kAdd, 2},   {"sub", EpOp::kSub, 2},     {"mul", EpOp::kMul, 2},
    {"div", EpOp::kDiv, 2},   {"max", EpOp::kMax, 2},     {"min", EpOp::kMin, 2},
};
const OpName* find_op(const std::string& n) {
  for (const auto& o : kOps)
    if (n == o.name) return &o;
  return nullptr;
}

bool is_gemm_call(const lir::CallKernel& c) {
  return c.callee == "native:MatMul" || c.callee == "native:Linear" || c.callee == "dot_general" ||
         c.callee == "native:DequantMatMul" || c.callee == "native:QMatMul";
}

// Row stride of a load over `domain` whose last dim is the column: strides of the leading dims
// must be rs times the row-major strides of the leading dims (size-1 dims are free).
std::optional<int64_t> row_stride(const std::vector<int64_t>& domain, const std::vector<int64_t>& strides) {
  const size_t r = domain.size();
  if (r <= 1) return 0;
  std::vector<int64_t> lead(domain.begin(), domain.end() - 1);
  auto rm = row_major(lead);
  std::optional<int64_t> rs;
  for (size_t d = 0; d + 1 < r; ++d) {
    if (domain[d] == 1) continue;
    if (strides[d] % rm[d] != 0) return std::nullopt;
    int64_t s = strides[d] / rm[d];
    if (rs && *rs != s) return std::nullopt;
    rs = s;
  }
  return rs.value_or(0);
}

// The epilogue text for loop kernel `l` consuming GEMM result storage `g` (inputs appended to
// `inputs`), or nullopt when `l` does not qualify.
std::optional<std::string> encode(const lir::Program& p, const lir::LoopKernel& l, int32_t g,
                                  std::vector<int32_t>& inputs) {
  const auto& domain = l.domain;
  const auto rm = row_major(domain);
  const auto first_input = static_cast<std::ptrdiff_t>(inputs.size());
  std::string text;
  int loads = 0;
  for (size_t i = 0; i < l.exprs.size(); ++i) {
    const lir::Expr& e = l.exprs[i];
    if (e.dtype != DType::kF32) return std::nullopt;
    std::string step;
    switch (e.kind) {
      case lir::ExprKind::kConst: step = fmt::format("const {:.9g}", static_cast<float>(e.value)); break;
      case lir::ExprKind::kLoad: {
        const lir::AffineLoad& ld = e.load;
        if (!ld.guards.empty() || ld.strides.size() != domain.size()) return std::nullopt;
        if (p.buffers[ld.buffer].dtype != DType::kF32) return std::nullopt;
        if (p.storage_of(ld.buffer) == g) {
          if (ld.offset != 0) return std::nullopt;
          for (size_t d = 0; d < domain.size(); ++d)
            if (domain[d] != 1 && ld.strides[d] != rm[d]) return std::nullopt;
          step = "acc";
          break;
        }
        auto rs = row_stride(domain, ld.strides);
        if (!rs) return std::nullopt;
        int64_t cs = domain.empty() || domain.back() == 1 ? 0 : ld.strides.back();
        // A buffer read again (a recomputed bias add) is one operand of the call.
        const auto seen = std::find(inputs.begin() + first_input, inputs.end(), ld.buffer);
        const size_t index = static_cast<size_t>(seen - inputs.begin());
        if (seen == inputs.end()) {
          if (++loads > GemmEpilogue::kMaxLoads) return std::nullopt;
          inputs.push_back(ld.buffer);
        }
        step = fmt::format("load {} {} {} {}", index - first_input, ld.offset, *rs, cs);
        break;
      }
      case lir::ExprKind::kUnary:
      case lir::ExprKind::kBinary: {
        const OpName* op = find_op(e.op);
        if (!op || static_cast<size_t>(op->arity) != e.args.size()) return std::nullopt;
        step = e.op;
        for (int32_t a : e.args) step += fmt::format(" {}", a);
        break;
      }
      default: return std::nullopt;
    }
    text += (text.empty() ? "" : "; ") + step;
  }
  // The stored value must be the last expression (registers are evaluated in order and the
  // last one is written); append a copy step otherwise.
  const int32_t root = l.stores[0].expr;
  if (root != static_cast<int32_t>(l.exprs.size()) - 1) text += fmt::format("; max {} {}", root, root);
  if (static_cast<int>(l.exprs.size()) + 4 > GemmEpilogue::kMaxSteps) return std::nullopt;
  return text;
}

// encode()'s text with `load <i>` (an index into its `extra`) made an index into the merged
// call's inputs, where the extra operands start at `first`.
std::string renumber_loads(const std::string& text, int64_t first) {
  std::string fixed;
  std::istringstream in(text);
  std::string step;
  while (std::getline(in, step, ';')) {
    std::istringstream s(step);
    std::string word;
    s >> word;
    if (word == "load") {
      int64_t i, off, rs, cs;
      s >> i >> off >> rs >> cs;
      step = fmt::format(" load {} {} {} {}", first + i, off, rs, cs);
    }
    fixed += (fixed.empty() ? "" : ";") + step;
  }
  return fixed;
}

// QMatMul prologues: a loop kernel whose one result is read by nothing but a QMatMul's
// activations (SmoothQuant's Mul by a per-channel vector, rlx quantize --smooth) merges into the
// call, which then reads the loop's own operand and computes the loop's value row by row just
// before rounding it: the product of x and the vector is never written to memory and read back.
// The loop must be elementwise over the activations' shape, f32, with one operand read at the
// same element it writes (the `acc` of the program) and the others affine in (row, column).
int fuse_qmatmul_prologues(lir::Program& p) {
  const KernelUses u = kernel_uses(p);
  const auto& writer = u.writer;
  std::vector<bool> erase(p.kernels.size(), false);
  int fused = 0;
  for (int32_t ci = 0; ci < static_cast<int32_t>(p.kernels.size()); ++ci) {
    auto* c = std::get_if<lir::CallKernel>(&p.kernels[ci]);
    if (!c || c->callee != "native:QMatMul" || c->inputs.empty() || c->attrs.count("prologue") ||
        c->attrs.count("epilogue"))
      continue;
    const int32_t x = p.storage_of(c->inputs[0]);
    const lir::Buffer& xb = p.buffers[c->inputs[0]];
    if (p.buffers[x].kind != lir::BufferKind::kTemp || xb.dtype != DType::kF32 || u.is_output[x] ||
        u.readers[x] != std::vector<int32_t>{ci} || writer[x] < 0 || writer[x] >= ci)
      continue;
    const int32_t li = writer[x];
    auto* l = std::get_if<lir::LoopKernel>(&p.kernels[li]);
    if (!l || !l->reduce.empty() || l->num_parallel != static_cast<int32_t>(l->domain.size()) ||
        l->stores.size() != 1 || l->domain != xb.shape || l->domain.empty())
      continue;
    // The operand read at the element written: the rows the call reads instead of x.
    const auto rm = row_major(l->domain);
    int32_t acc = -1;
    for (const lir::Expr& e : l->exprs) {
      if (e.kind != lir::ExprKind::kLoad || !e.load.guards.empty() || e.load.offset != 0 ||
          p.buffers[e.load.buffer].dtype != DType::kF32 ||
          p.buffers[e.load.buffer].shape != l->domain)
        continue;
      bool identity = e.load.strides.size() == l->domain.size();
      for (size_t d = 0; identity && d < l->domain.size(); ++d)
        identity = l->domain[d] == 1 || e.load.strides[d] == rm[d];
      if (identity) {
        acc = e.load.buffer;
        break;
      }
    }
    if (acc < 0) continue;
    // The call writes its result while other rows are still being read: no operand of the loop
    // may share the result's storage (the planner keeps them apart once the lifetimes change).
    bool clash = false;
    for (const lir::Expr& e : l->exprs)
      clash |= e.kind == lir::ExprKind::kLoad &&
               p.storage_of(e.load.buffer) == p.storage_of(c->outputs[0]);
    if (clash) continue;
    std::vector<int32_t> extra;
    auto text = encode(p, *l, p.storage_of(acc), extra);
    if (!text) continue;
    lir::CallKernel merged = *c;
    const int64_t first = static_cast<int64_t>(merged.inputs.size());
    merged.inputs[0] = acc;
    merged.inputs.insert(merged.inputs.end(), extra.begin(), extra.end());
    merged.attrs["prologue"] = renumber_loads(*text, first);
    merged.attrs["prologue_inputs_from"] = first;
    if (!l->name.empty()) merged.loc += (merged.loc.empty() ? "" : " ") + (l->name + " +");
    p.kernels[ci] = std::move(merged);
    erase[li] = true;
    ++fused;
  }
  if (fused) drop_kernels(p, erase);
  return fused;
}

}  // namespace

int fuse_gemm_epilogues(lir::Program& p) {
  const int layouts = fold_attention_layouts(p);
  const int prologues = fuse_qmatmul_prologues(p);
  const KernelUses u = kernel_uses(p);
  const auto& readers = u.readers;
  const auto& is_output = u.is_output;

  std::vector<bool> erase(p.kernels.size(), false);
  int fused = 0;
  for (int32_t ci = 0; ci < static_cast<int32_t>(p.kernels.size()); ++ci) {
    auto* c = std::get_if<lir::CallKernel>(&p.kernels[ci]);
    if (!c || !is_gemm_call(*c) || c->outputs.size() != 1 || c->attrs.count("epilogue")) continue;
    const int32_t g = c->outputs[0];
    const lir::Buffer& gb = p.buffers[g];
    if (gb.kind != lir::BufferKind::kTemp || gb.dtype != DType::kF32 || is_output[g]) continue;
    if (readers[g].size() != 1 || readers[g][0] <= ci) continue;
    const int32_t li = readers[g][0];
    auto* l = std::get_if<lir::LoopKernel>(&p.kernels[li]);
    if (!l || !l->reduce.empty() || l->num_parallel != static_cast<int32_t>(l->domain.size()) ||
        l->stores.size() != 1 || l->domain != gb.shape)
      continue;
    const int32_t y = l->stores[0].buffer;
    const lir::Buffer& yb = p.buffers[y];
    if (yb.dtype != DType::kF32 || yb.shape != gb.shape) continue;
    bool clash = false;
    for (int32_t in : c->inputs) clash |= p.storage_of(in) == p.storage_of(y);
    if (clash) continue;
    std::vector<int32_t> extra;
    auto text = encode(p, *l, g, extra);
    if (!text) continue;
    lir::CallKernel merged = *c;
    const int64_t first = static_cast<int64_t>(merged.inputs.size());
    merged.inputs.insert(merged.inputs.end(), extra.begin(), extra.end());
    merged.outputs = {y};
    merged.attrs["epilogue"] = renumber_loads(*text, first);
    merged.attrs["epilogue_inputs_from"] = first;
    if (!l->name.empty()) merged.loc += (merged.loc.empty() ? "" : " ") + ("+ " + l->name);
    p.kernels[li] = std::move(merged);
    erase[ci] = true;
    ++fused;
  }
  if (fused) drop_kernels(p, erase);
  return layouts + prologues + fused;
}

void decode_epilogue(const std::string& text, int acc_reg, GemmEpilogue& ep,
                     const std::function<void(int32_t, int64_t, int64_t, int64_t)>& on_load) {
  std::vector<int> reg;  // decoded step -> register of ep
  // A load decoded before, by operand and addressing: its register again (simplify() then sees
  // the steps that read it as repeats).
  std::vector<std::pair<std::array<int64_t, 4>, int>> loaded;
  std::istringstream in(text);
  std::string step;
  auto bad = [&](const std::string& why) {
    throw_internal_error(fmt::format("cpu GEMM: bad epilogue step '{}' ({})", step, why));
  };
  auto arg = [&](std::istringstream& s) {
    size_t a;
    if (!(s >> a) || a >= reg.size()) bad("argument is not an earlier step");
    return reg[a];
  };
  while (std::getline(in, step, ';')) {
    std::istringstream s(step);
    std::string word;
    if (!(s >> word)) bad("empty");
    if (word == "acc") {
      reg.push_back(acc_reg >= 0 ? acc_reg : ep.acc());
    } else if (word == "const") {
      double v;
      if (!(s >> v)) bad("no value");
      reg.push_back(ep.constant(static_cast<float>(v)));
    } else if (word == "load") {
      int32_t input;
      int64_t off, rs, cs;
      if (!(s >> input >> off >> rs >> cs)) bad("needs input, offset, row and column stride");
      const std::array<int64_t, 4> key{input, off, rs, cs};
      auto same =
          std::find_if(loaded.begin(), loaded.end(), [&](const auto& l) { return l.first == key; });
      if (same != loaded.end()) {
        reg.push_back(same->second);
        continue;
      }
      on_load(input, off, rs, cs);
      reg.push_back(ep.load(nullptr, rs, cs));
      loaded.emplace_back(key, reg.back());
    } else {
      const OpName* op = find_op(word);
      if (!op) bad("unknown op");
      int a = arg(s);
      reg.push_back(op->arity == 1 ? ep.unary(op->op, a) : ep.binary(op->op, a, arg(s)));
    }
  }
  if (reg.empty() || reg.back() != ep.num_steps - 1) bad("the last step must compute a value");
  ep.simplify();
}

}  // namespace rlx::cpu
