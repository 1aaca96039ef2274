// Constant folding: small elementwise computations on constants, conversions, reshapes and
// dim_size of static dims. Folding computes in f64 (integers in i64) and rounds once to the
// result dtype, so a folded value is at least as accurate as the kernel it replaces.
#include <cmath>
#include <cstring>

#include "passes/passes_util.h"
#include "rlx/core/half.h"
#include "rlx/core/op_registry.h"
#include "rlx/core/passes.h"
#include "rlx/core/scalar_eval.h"

namespace rlx {

namespace {

constexpr int64_t kMaxFoldElements = 4096;

void set_element(Tensor& t, int64_t i, double v, int64_t iv, bool use_int) {
  switch (t.dtype()) {
    case DType::kBool: t.as<uint8_t>()[i] = use_int ? iv != 0 : v != 0; break;
    case DType::kI8: t.as<int8_t>()[i] = static_cast<int8_t>(use_int ? iv : (int64_t)v); break;
    case DType::kU8: t.as<uint8_t>()[i] = static_cast<uint8_t>(use_int ? iv : (int64_t)v); break;
    case DType::kI16: t.as<int16_t>()[i] = static_cast<int16_t>(use_int ? iv : (int64_t)v); break;
    case DType::kI32: t.as<int32_t>()[i] = static_cast<int32_t>(use_int ? iv : (int64_t)v); break;
    case DType::kI64: t.as<int64_t>()[i] = use_int ? iv : static_cast<int64_t>(v); break;
    case DType::kF16: t.as<uint16_t>()[i] = f32_to_f16(static_cast<float>(use_int ? iv : v)); break;
    case DType::kBF16: t.as<uint16_t>()[i] = f32_to_bf16(static_cast<float>(use_int ? iv : v)); break;
    case DType::kF32: t.as<float>()[i] = static_cast<float>(use_int ? iv : v); break;
    case DType::kF64: t.as<double>()[i] = use_int ? static_cast<double>(iv) : v; break;
    case DType::kC64: t.as<float>()[2 * i] = static_cast<float>(use_int ? iv : v); t.as<float>()[2 * i + 1] = 0; break;
    case DType::kU16: t.as<uint16_t>()[i] = static_cast<uint16_t>(use_int ? iv : (int64_t)v); break;
    case DType::kU32: t.as<uint32_t>()[i] = static_cast<uint32_t>(use_int ? iv : (int64_t)v); break;
    case DType::kU64: t.as<uint64_t>()[i] = static_cast<uint64_t>(use_int ? iv : (int64_t)v); break;
  }
}

int64_t int_element(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kI64: return t.as<int64_t>()[i];
    case DType::kI32: return t.as<int32_t>()[i];
    case DType::kI16: return t.as<int16_t>()[i];
    case DType::kI8: return t.as<int8_t>()[i];
    case DType::kU8: case DType::kBool: return t.as<uint8_t>()[i];
    case DType::kU16: return t.as<uint16_t>()[i];
    case DType::kU32: return t.as<uint32_t>()[i];
    default: return static_cast<int64_t>(t.scalar_at(i));
  }
}

const Tensor* constant_value(const Graph& g, ValueId v) {
  int32_t p = g.values[v].producer;
  if (p < 0 || g.nodes[p].op != "constant") return nullptr;
  return &g.nodes[p].attr_tensor("value");
}

bool exceeds_fold_limit(const Shape& shape) {
  int64_t n = 1;
  for (const Dim& d : shape)
    if (__builtin_mul_overflow(n, d.value, &n) || n > kMaxFoldElements) return true;
  return false;
}

std::optional<Tensor> fold(const Graph& g, const Node& n) {
  if (n.outputs.size() != 1) return std::nullopt;
  const TensorType& out = g.type(n.outputs[0]);
  if (n.op == "dim_size") {
    const Dim& d = g.type(n.inputs[0]).shape[n.attr_int("dim") < 0 ? n.attr_int("dim") + g.type(n.inputs[0]).rank() : n.attr_int("dim")];
    if (!d.is_static()) return std::nullopt;
    if (out.dtype == DType::kI32) return Tensor::from<int32_t>(DType::kI32, {}, {static_cast<int32_t>(d.value)});
    return Tensor::from<int64_t>(DType::kI64, {}, {d.value});
  }
  if (n.op == "constant" || n.inputs.empty() || !is_static(out.shape)) return std::nullopt;
  std::vector<const Tensor*> ins;
  for (ValueId v : n.inputs) {
    const Tensor* t = constant_value(g, v);
    if (!t) return std::nullopt;
    ins.push_back(t);
  }
  // Sized before anything is allocated: a constant broadcast to [2^40] must not be materialised
  // here (the runtime refuses such sizes with a message naming the node).
  if (n.op != "reshape" && exceeds_fold_limit(out.shape)) return std::nullopt;
  Tensor result(out.dtype, static_dims(out.shape));
  if (n.op == "reshape") {
    std::memcpy(result.data(), ins[0]->data(), result.nbytes());
    return result;
  }
  const OpDef& def = OpRegistry::instance().get(n.op);
  if (def.cls != OpClass::kElementwise || n.op == "iota") return std::nullopt;
  // c64 has no scalar arithmetic here, and u64 values above INT64_MAX none in int64.
  if (out.dtype == DType::kU64) return std::nullopt;
  for (const Tensor* t : ins)
    if (t->dtype() == DType::kC64 || t->dtype() == DType::kU64) return std::nullopt;
  DType in_dtype = ins[0]->dtype();
  bool ints = in_dtype == DType::kBool || is_integer(in_dtype);
  for (int64_t i = 0; i < result.numel(); ++i) {
    if (n.op == "convert") {
      if (ints)
        set_element(result, i, 0, int_element(*ins[0], i), true);
      else if (is_integer(out.dtype))
        set_element(result, i, 0, scalar::float_to_int(out.dtype, ins[0]->scalar_at(i)), true);
      else
        set_element(result, i, ins[0]->scalar_at(i), 0, false);
      continue;
    }
    if (n.op == "select") {
      const Tensor* src = int_element(*ins[0], i) ? ins[1] : ins[2];
      if (is_integer(src->dtype()) || src->dtype() == DType::kBool) set_element(result, i, 0, int_element(*src, i), true);
      else set_element(result, i, src->scalar_at(i), 0, false);
      continue;
    }
    double a = ins[0]->scalar_at(i), b = ins.size() > 1 ? ins[1]->scalar_at(i) : 0;
    if (auto c = scalar::compare(n.op, a, b)) {
      if (ints) c = scalar::compare(n.op, int_element(*ins[0], i), int_element(*ins[1], i));
      set_element(result, i, 0, *c, true);
      continue;
    }
    if (ints) {
      int64_t x = int_element(*ins[0], i);
      auto r = ins.size() == 1 ? scalar::int_unary(n.op, x)
                               : scalar::int_binary(n.op, x, int_element(*ins[1], i));
      if (!r) return std::nullopt;
      set_element(result, i, 0, *r, true);
    } else {
      auto r = ins.size() == 1 ? scalar::float_unary(n.op, a) : scalar::float_binary(n.op, a, b);
      if (!r) return std::nullopt;
      set_element(result, i, *r, 0, false);
    }
  }
  return result;
}

}  // namespace

bool fold_constants(Graph& g) {
  bool changed = false;
  for (Node& n : g.nodes) {
    auto folded = fold(g, n);
    if (!folded) continue;
    n.op = "constant";
    n.inputs.clear();
    n.attrs = {{"value", std::move(*folded)}};
    n.regions.clear();
    changed = true;
  }
  return changed;
}

}  // namespace rlx
