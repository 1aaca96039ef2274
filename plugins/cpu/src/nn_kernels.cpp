#include "nn_kernels.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "nn_attention.h"
#include "nn_backward_kernels.h"
#include "nn_norms.h"
#include "rlx/core/error.h"
#include "rlx/sdk/legality.h"
#include "scalar_ops.h"

namespace rlx::cpu {

namespace {

const char* const kOps[] = {"Attention", "LayerNorm", "RMSNorm", "Softmax"};

// Attribute readers that never throw: a malformed attribute is the decomposition's to report.
std::optional<double> number_attr(const Attrs& a, const std::string& key, double fallback) {
  auto it = a.find(key);
  if (it == a.end()) return fallback;
  if (auto* d = std::get_if<double>(&it->second)) return *d;
  if (auto* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  return std::nullopt;
}

std::optional<std::string> text_attr(const Attrs& a, const std::string& key,
                                     const std::string& fallback) {
  auto it = a.find(key);
  if (it == a.end()) return fallback;
  if (auto* s = std::get_if<std::string>(&it->second)) return *s;
  return std::nullopt;
}

std::optional<int64_t> int_attr(const Attrs& a, const std::string& key, int64_t fallback) {
  auto it = a.find(key);
  if (it == a.end()) return fallback;
  if (auto* i = std::get_if<int64_t>(&it->second)) return *i;
  return std::nullopt;
}

Verdict refuse(const NodeSignature& s, const std::string& why) {
  return Verdict::no(fmt::format("cpu's native {} kernel {}", s.op, why));
}

bool all_f32(const std::vector<TensorType>& ts, size_t count) {
  for (size_t i = 0; i < count && i < ts.size(); ++i)
    if (ts[i].dtype != DType::kF32) return false;
  return true;
}

// How the kernel reads a k or v of this dtype: f32, or a 16-bit float widened as it loads.
std::optional<KvElem> kv_elem(DType t) {
  switch (t) {
    case DType::kF32:
      return KvElem::kF32;
    case DType::kF16:
      return KvElem::kF16;
    case DType::kBF16:
      return KvElem::kBF16;
    default:
      return std::nullopt;
  }
}

Verdict claim_attention(const NodeSignature& s) {
  if (Verdict form = sdk::attention_form(s); !form.ok) return refuse(s, form.reason);
  const DType q = s.inputs[0].dtype;
  if (!kv_elem(q) || s.outputs.size() != 1 || s.outputs[0].dtype != q ||
      !kv_elem(s.inputs[1].dtype) || !kv_elem(s.inputs[2].dtype))
    return refuse(s, "takes f32, f16 or bf16 q, k and v, with the result in q's type");
  if (q == DType::kF32) return Verdict::yes();
  const Dim &d = s.inputs[0].shape.back(), &dv = s.inputs[2].shape.back();
  const Bf16Unit unit = d.is_static() && dv.is_static()
                            ? attention_bf16_unit(*kv_elem(q), *kv_elem(s.inputs[1].dtype),
                                                  *kv_elem(s.inputs[2].dtype), d.value, dv.value)
                            : Bf16Unit::kNone;
  if (unit != Bf16Unit::kNone)
    return Verdict{true, fmt::format("bf16 attention on {}: q k^T and p v as exact products "
                                     "summed in f32, softmax in f32, its weights rounded to bf16 "
                                     "for p v, the result rounded to bf16",
                                     bf16_unit_name(unit))};
  // A 16-bit q (a bf16 model, or attention that amp narrowed): the f32 kernel on q widened, the
  // result rounded once to q's type; said here because it computes wider than asked.
  return Verdict{true, fmt::format("f32 attention: {} q widened, k and v read as {} and {}, the "
                                   "result rounded to {}",
                                   dtype_name(q), dtype_name(s.inputs[1].dtype),
                                   dtype_name(s.inputs[2].dtype), dtype_name(q))};
}

Verdict claim_norm(const NodeSignature& s) {
  if (Verdict form = sdk::norm_form(s); !form.ok) return refuse(s, form.reason);
  if (!all_f32(s.inputs, s.inputs.size()) || !all_f32(s.outputs, 1))
    return refuse(s, "takes f32 only");
  return Verdict::yes();
}

Verdict claim_softmax(const NodeSignature& s) {
  if (s.inputs.size() != 1 || s.outputs.size() != 1)
    return refuse(s, "needs one operand and one output");
  if (!all_f32(s.inputs, 1) || !all_f32(s.outputs, 1)) return refuse(s, "takes f32 only");
  auto axis = int_attr(s.attrs, "axis", -1);
  const int64_t rank = s.inputs[0].rank();
  if (!axis || rank < 1 || *axis < -rank || *axis >= rank)
    return refuse(s, "needs an integer axis within the rank");
  return Verdict::yes();
}

int64_t product(const std::vector<int64_t>& v, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= v[i];
  return p;
}

std::string where(const lir::CallKernel& k) {
  return k.loc.empty() ? k.callee : fmt::format("{} ('{}')", k.callee, k.loc);
}

// The padding mask as keep flags [batch, kv_len]: non-zero keeps, as the decomposition's
// `ne 0` (a NaN float keeps too); a size-1 dim broadcasts.
std::vector<uint8_t> keep_flags(const lir::Buffer& m, const void* data, int64_t batch,
                                int64_t kv_len, const lir::CallKernel& k) {
  const int64_t mb = m.shape[0], mk = m.shape[1];
  if ((mb != batch && mb != 1) || (mk != kv_len && mk != 1))
    throw_user_error(fmt::format("{}: padding mask is [{}, {}], attention needs [{}, {}]", where(k),
                                 mb, mk, batch, kv_len));
  std::vector<uint8_t> keep(batch * kv_len);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t j = 0; j < kv_len; ++j) {
      const int64_t at = (mb == 1 ? 0 : b) * mk + (mk == 1 ? 0 : j);
      bool kept;
      switch (class_of(m.dtype)) {
        case Cls::kF32:
          kept = load_f(m.dtype, data, at) != 0.0f;
          break;
        case Cls::kF64:
          kept = static_cast<const double*>(data)[at] != 0.0;
          break;
        default:
          kept = load_i(m.dtype, data, at) != 0;
          break;
      }
      keep[b * kv_len + j] = kept;
    }
  return keep;
}

void run_attention(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                   const std::vector<void*>& ptrs) {
  // An operand read in another layout (attention_layout_fusion.h) carries its [B, H, S, D]
  // shape in the layout attribute, after the offset and strides.
  auto shape_of = [&](int i, const char* layout) {
    auto it = k.attrs.find(layout);
    if (it == k.attrs.end()) return in[i].shape;
    const IntList& l = std::get<IntList>(it->second);
    return std::vector<int64_t>(l.begin() + 4, l.end());
  };
  const auto qs = shape_of(0, "q_layout"), ks = shape_of(1, "k_layout"),
             vs = shape_of(2, "v_layout");
  AttentionShape sh;
  sh.batch = qs[0], sh.heads = qs[1], sh.q_len = qs[2], sh.head_dim = qs[3];
  sh.kv_heads = ks[1], sh.kv_len = ks[2], sh.v_dim = vs[3];
  if (ks[0] != sh.batch || vs[0] != sh.batch || vs[1] != sh.kv_heads || vs[2] != sh.kv_len ||
      ks[3] != sh.head_dim || sh.kv_heads <= 0 || sh.heads % sh.kv_heads)
    throw_user_error(fmt::format("{}: q, k, v shapes do not fit one attention", where(k)));
  const std::string mask = *text_attr(k.attrs, "mask", "none");
  const double scale =
      *number_attr(k.attrs, "scale", 1.0 / std::sqrt(static_cast<double>(sh.head_dim)));
  sh.scale = static_cast<float>(scale);  // the decomposition multiplies by an f32 constant
  sh.causal = mask == "causal";
  std::vector<uint8_t> keep;
  if (mask == "padding") {
    keep = keep_flags(in[3], ptrs[k.inputs[3]], sh.batch, sh.kv_len, k);
    sh.keep = keep.data();
  }
  sh.k_elem = *kv_elem(in[1].dtype);
  sh.v_elem = *kv_elem(in[2].dtype);
  sh.q_elem = *kv_elem(in[0].dtype);
  // Operands read, and the result written, in another layout (attention_layout_fusion.h): the
  // strides replace the contiguous ones; returns the offset in bytes.
  auto layout = [&](const char* name, KvElem e, AttentionShape::Strides& st) -> int64_t {
    auto it = k.attrs.find(name);
    if (it == k.attrs.end()) return 0;
    const IntList& l = std::get<IntList>(it->second);
    st = {l[1], l[2], l[3]};
    return l[0] * kv_elem_size(e);
  };
  auto operand = [&](int i) { return static_cast<const char*>(ptrs[k.inputs[i]]); };
  const void* q = operand(0) + layout("q_layout", sh.q_elem, sh.q_st);
  const void* kk = operand(1) + layout("k_layout", sh.k_elem, sh.k_st);
  const void* v = operand(2) + layout("v_layout", sh.v_elem, sh.v_st);
  void* out = static_cast<char*>(ptrs[k.outputs[0]]) + layout("o_layout", sh.q_elem, sh.o_st);
  // The claim's choice (claim_attention), made again from the same dtypes and dims.
  const Bf16Unit unit = attention_bf16_unit(sh.q_elem, sh.k_elem, sh.v_elem, sh.head_dim, sh.v_dim);
  if (unit != Bf16Unit::kNone) return attention_bf16(unit, sh, q, kk, v, out);
  attention(sh, q, kk, v, out, nn_simd());
}

void run_norm(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
              const std::vector<void*>& ptrs, bool rms) {
  const auto& xs = in[0].shape;
  const int64_t n = xs.back(), rows = product(xs, 0, xs.size() - 1);
  const double eps = *number_attr(k.attrs, "epsilon", rms ? 1e-6 : 1e-5);
  auto param = [&](size_t i) {
    return in.size() > i ? static_cast<const float*>(ptrs[k.inputs[i]]) : nullptr;
  };
  const auto* x = static_cast<const float*>(ptrs[k.inputs[0]]);
  auto* y = static_cast<float*>(ptrs[k.outputs[0]]);
  if (rms)
    rms_norm_f32(x, rows, n, static_cast<float>(eps), param(1), y, nn_simd());
  else
    layer_norm_f32(x, rows, n, static_cast<float>(eps), param(1), param(2), y, nn_simd());
}

void run_softmax(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                 const std::vector<void*>& ptrs) {
  const auto& xs = in[0].shape;
  const auto rank = static_cast<int64_t>(xs.size());
  int64_t axis = *int_attr(k.attrs, "axis", -1);
  if (axis < 0) axis += rank;
  softmax_f32(static_cast<const float*>(ptrs[k.inputs[0]]), product(xs, 0, axis), xs[axis],
              product(xs, axis + 1, xs.size()), static_cast<float*>(ptrs[k.outputs[0]]), nn_simd());
}

}  // namespace

std::optional<Verdict> claim_nn_op(const NodeSignature& s) {
  if (s.op == "Attention") return claim_attention(s);
  if (s.op == "LayerNorm" || s.op == "RMSNorm") return claim_norm(s);
  if (s.op == "Softmax") return claim_softmax(s);
  if (s.op == "AttentionBackward") return claim_attention_backward(s);
  // LayerNormBackward, RMSNormBackward, SoftmaxBackward, SoftmaxCrossEntropy[Backward]
  return claim_nn_backward_op(s);
}

bool is_nn_callee(const std::string& callee) {
  if (callee.rfind("native:", 0) != 0) return false;
  if (is_nn_backward_op(callee.substr(7)) || callee == "native:AttentionBackward") return true;
  for (const char* op : kOps)
    if (callee.compare(7, std::string::npos, op) == 0) return true;
  return false;
}

void run_nn_kernel(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                   const std::vector<lir::Buffer>& out, const std::vector<void*>& ptrs) {
  const std::string op = k.callee.substr(7);
  if (op == "Attention") return run_attention(k, in, ptrs);
  if (op == "LayerNorm") return run_norm(k, in, ptrs, false);
  if (op == "RMSNorm") return run_norm(k, in, ptrs, true);
  if (op == "Softmax") return run_softmax(k, in, ptrs);
  if (is_nn_backward_op(op)) return run_nn_backward_kernel(k, in, ptrs);
  if (op == "AttentionBackward") return run_attention_backward(k, in, ptrs);
  throw_internal_error("cpu: no native nn kernel for " + k.callee);
}

}  // namespace rlx::cpu
