#include "rlx/sdk/legality.h"

#include <fmt/format.h>

#include <algorithm>

#include "rlx/core/error.h"
#include "rlx/core/op_registry.h"

namespace rlx::sdk {

namespace {
constexpr std::string_view kF64Advice =
    "convert the model to f32 first (rlx never narrows f64 silently)";
}  // namespace

bool uses(const NodeSignature& s, DType d) {
  for (const auto* list : {&s.inputs, &s.outputs})
    for (const TensorType& t : *list)
      if (t.dtype == d) return true;
  return false;
}

bool only_uses(const NodeSignature& s, std::initializer_list<DType> ok) {
  auto in = [&](const TensorType& t) {
    return std::find(ok.begin(), ok.end(), t.dtype) != ok.end();
  };
  return std::all_of(s.inputs.begin(), s.inputs.end(), in) &&
         std::all_of(s.outputs.begin(), s.outputs.end(), in);
}

Verdict primitive_only(const NodeSignature& s) {
  const OpDef* def = OpRegistry::instance().find(s.op);
  if (!def || def->level != OpLevel::kMir) return Verdict::no(s.op + " is not a MIR primitive");
  return Verdict::yes();
}

Verdict refuse_complex(const NodeSignature& s, std::string_view language, std::string_view target) {
  // bitcast views a c64 buffer as its f32 pairs: an alias, never a kernel.
  if (!uses(s, DType::kC64) || s.op == "bitcast") return Verdict::yes();
  return Verdict::no(
      fmt::format("{} has no complex type, so {} has no c64 kernel for {}: split complex values "
                  "into real and imaginary parts before compiling",
                  language, target, s.op));
}

Verdict refuse_f64(std::string_view lacks, std::string_view who, std::string_view what) {
  return Verdict::no(
      fmt::format("{}, so {} cannot compute {} in f64; {}", lacks, who, what, kF64Advice));
}

void check_no_f64(const lir::Program& program, std::string_view lacks) {
  if (std::string at = dtype_use(program, DType::kF64); !at.empty())
    throw_unsupported(
        fmt::format("{}, but {} of the compiled program is f64; {}", lacks, at, kF64Advice));
}

std::string dtype_use(const lir::Program& p, DType dt) {
  for (const lir::Buffer& b : p.buffers)
    if (b.dtype == dt && b.kind != lir::BufferKind::kAlias) return fmt::format("buffer {}", b.name);
  for (const lir::Kernel& k : p.kernels) {
    if (auto* l = std::get_if<lir::LoopKernel>(&k)) {
      for (const lir::Expr& e : l->exprs)
        if (e.dtype == dt) return fmt::format("kernel {}", l->name);
      continue;
    }
    for (const auto& r : std::get<lir::CallKernel>(k).regions)
      if (std::string s = dtype_use(*r, dt); !s.empty()) return s;
  }
  return "";
}

Verdict refuse_narrow_integers(const NodeSignature& s, std::string_view language,
                               std::string_view target, std::string_view alternative) {
  for (DType t : {DType::kI8, DType::kU8, DType::kI16})
    if (uses(s, t))
      return Verdict::no(
          fmt::format("{} has no 8- or 16-bit integer types, so {} cannot compute the {} values of "
                      "{}; {}convert them to i32 first (rlx never changes a dtype silently)",
                      language, target, dtype_name(t), s.op, alternative));
  return Verdict::yes();
}

Verdict attention_form(const NodeSignature& s) {
  if (s.inputs.size() < 3 || s.outputs.size() != 1)
    return Verdict::no("needs q, k, v and one output");
  const TensorType &q = s.inputs[0], &k = s.inputs[1], &v = s.inputs[2];
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4)
    return Verdict::no("takes rank-4 q, k, v only");
  for (const TensorType* t : {&q, &k, &v})
    if (!t->shape[1].is_static() || !t->shape[3].is_static())
      return Verdict::no("needs static head counts and head dims");
  const int64_t h = q.shape[1].value, hkv = k.shape[1].value;
  if (hkv <= 0 || h % hkv || v.shape[1].value != hkv || q.shape[3].value != k.shape[3].value)
    return Verdict::no("needs matching head dims and query heads a multiple of kv heads");
  auto attr = [&](const char* key) -> const AttrValue* {
    auto it = s.attrs.find(key);
    return it == s.attrs.end() ? nullptr : &it->second;
  };
  std::string mask = "none";
  if (const AttrValue* m = attr("mask")) {
    const auto* text = std::get_if<std::string>(m);
    if (!text) return Verdict::no("knows the masks none, causal and padding only");
    mask = *text;
  }
  if (mask != "none" && mask != "causal" && mask != "padding")
    return Verdict::no("knows the masks none, causal and padding only");
  if ((mask == "padding") != (s.inputs.size() == 4))
    return Verdict::no("needs a mask input exactly for mask = \"padding\"");
  if (mask == "padding" && s.inputs[3].rank() != 2)
    return Verdict::no("takes a [batch, kv_seq] padding mask only");
  if (const AttrValue* sc = attr("scale");
      sc && !std::holds_alternative<double>(*sc) && !std::holds_alternative<int64_t>(*sc))
    return Verdict::no("needs a numeric scale");
  return Verdict::yes();
}

Verdict norm_form(const NodeSignature& s) {
  if (s.inputs.empty() || s.inputs.size() > (s.op == "RMSNorm" ? 2u : 3u) || s.outputs.size() != 1)
    return Verdict::no("needs an operand, at most a scale and a bias, and one output");
  const TensorType& x = s.inputs[0];
  if (x.rank() < 1 || !x.shape[x.rank() - 1].is_static())
    return Verdict::no("needs a static last dim");
  const int64_t n = x.shape[x.rank() - 1].value;
  for (size_t i = 1; i < s.inputs.size(); ++i) {
    const TensorType& p = s.inputs[i];
    if (p.rank() != 1 || !p.shape[0].is_static() || p.shape[0].value != n)
      return Verdict::no("takes scale and bias of the normalised dim's size only");
  }
  if (auto it = s.attrs.find("epsilon"); it != s.attrs.end() &&
                                         !std::holds_alternative<double>(it->second) &&
                                         !std::holds_alternative<int64_t>(it->second))
    return Verdict::no("needs a numeric epsilon");
  return Verdict::yes();
}

}  // namespace rlx::sdk
