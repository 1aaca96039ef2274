// NodeCtx: what an op handler sees of its node.
#include <cmath>
#include <cstdint>

#include "context.h"
#include "proto_io.h"

namespace rlx::onnx {

using ::onnx::AttributeProto;

NodeCtx::NodeCtx(Converter& c, const ::onnx::NodeProto& n, int version)
    : cv(c), node(n), opset(version), b(c.builder()) {}

ValPtr NodeCtx::in(int i) const {
  if (!has(i)) failf("input {} is required", i);
  return cv.lookup(node.input(i));
}

ValueId NodeCtx::x(int i) {
  return cv.materialize(*in(i));
}

std::optional<SymTensor> NodeCtx::sym(int i) const {
  if (!has(i)) return std::nullopt;
  ValPtr v = in(i);
  if (v->sym) return v->sym;
  if (v->konst) return sym_from_tensor(*v->konst);
  return std::nullopt;
}

std::optional<Tensor> NodeCtx::konst(int i) const {
  if (!has(i)) return std::nullopt;
  ValPtr v = in(i);
  if (v->konst) return v->konst;
  if (v->sym && v->sym->is_static()) return tensor_from_sym(*v->sym);
  return std::nullopt;
}

Tensor NodeCtx::need_const(int i, const char* what) {
  if (auto t = konst(i)) return *t;
  ValPtr v = in(i);
  if (v->sym)
    failf("{} ('{}') depends on symbolic dims ({}); rlx needs its value when compiling", what,
          v->onnx_name, [&] {
            std::string s;
            for (const auto& e : v->sym->v) s += (s.empty() ? "" : ", ") + e.str();
            return s;
          }());
  cv.need_input_values(*this, what, i);
}

std::vector<int64_t> NodeCtx::need_ints(int i, const char* what) {
  Tensor t = need_const(i, what);
  if (!is_integer(t.dtype()))
    failf("{} must be an integer tensor, got {}", what, dtype_name(t.dtype()));
  std::vector<int64_t> out(t.numel());
  // i64 and u64 are read as they are: through a double, values near 2^63 would round past
  // int64's range (undefined behaviour when converted back). Narrower types are exact in double.
  for (int64_t k = 0; k < t.numel(); ++k) {
    if (t.dtype() == DType::kI64) {
      out[k] = t.as<int64_t>()[k];
    } else if (t.dtype() == DType::kU64) {
      uint64_t u = t.as<uint64_t>()[k];
      if (u > static_cast<uint64_t>(INT64_MAX)) failf("{} holds {}, past the int64 range rlx computes sizes in", what, u);
      out[k] = static_cast<int64_t>(u);
    } else {
      out[k] = static_cast<int64_t>(t.scalar_at(k));
    }
  }
  return out;
}

std::vector<SymInt> NodeCtx::need_syms(int i, const char* what) {
  if (auto s = sym(i)) return s->v;
  auto ints = need_ints(i, what);
  return std::vector<SymInt>(ints.begin(), ints.end());
}

double NodeCtx::need_scalar(int i, const char* what) {
  Tensor t = need_const(i, what);
  if (t.numel() != 1) failf("{} must hold one value, got shape {}", what, t.shape_str());
  return t.scalar_at(0);
}

int64_t NodeCtx::need_int(int i, const char* what) {
  Tensor t = need_const(i, what);
  if (t.numel() != 1) failf("{} must hold one value, got shape {}", what, t.shape_str());
  if (t.dtype() == DType::kI64) return t.as<int64_t>()[0];
  double v = t.scalar_at(0);
  if (!std::isfinite(v) || std::fabs(v) > 9.0e18) failf("{} is {}, not an integer", what, v);
  return static_cast<int64_t>(v);
}

const AttributeProto* NodeCtx::attr(const char* name) const {
  for (const auto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t NodeCtx::attr_i(const char* name, int64_t fallback) const {
  const AttributeProto* a = attr(name);
  if (!a) return fallback;
  if (a->type() != AttributeProto::INT && a->type() != AttributeProto::UNDEFINED)
    failf("attribute '{}' must be an integer", name);
  return a->i();
}

float NodeCtx::attr_f(const char* name, float fallback) const {
  const AttributeProto* a = attr(name);
  if (!a) return fallback;
  if (a->type() == AttributeProto::INT) return static_cast<float>(a->i());
  if (a->type() != AttributeProto::FLOAT && a->type() != AttributeProto::UNDEFINED)
    failf("attribute '{}' must be a float", name);
  return a->f();
}

std::string NodeCtx::attr_s(const char* name, const std::string& fallback) const {
  const AttributeProto* a = attr(name);
  if (!a) return fallback;
  if (a->type() != AttributeProto::STRING && a->type() != AttributeProto::UNDEFINED)
    failf("attribute '{}' must be a string", name);
  return a->s();
}

std::vector<int64_t> NodeCtx::attr_ints(const char* name) const {
  const AttributeProto* a = attr(name);
  if (!a) return {};
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::vector<float> NodeCtx::attr_floats(const char* name) const {
  const AttributeProto* a = attr(name);
  if (!a) return {};
  return std::vector<float>(a->floats().begin(), a->floats().end());
}

Tensor NodeCtx::attr_tensor(const char* name) const {
  const AttributeProto* a = attr(name);
  if (!a || !a->has_t()) failf("attribute '{}' must be a tensor", name);
  return cv.tensor(a->t(), fmt::format("{}: attribute '{}'", cv.node_desc(node), name));
}

void NodeCtx::out(int k, ValueId v) {
  if (!wants(k)) return;
  auto val = std::make_shared<Val>();
  val->type = b.type(v);
  val->id = v;
  cv.define(node.output(k), val);
  cv.name_value(v, node.output(k));
}

void NodeCtx::out_val(int k, Val v) {
  if (!wants(k)) return;
  cv.define(node.output(k), std::make_shared<Val>(std::move(v)));
}

void NodeCtx::out_sym(int k, SymTensor s) {
  Val v;
  v.type = TensorType{s.dtype, Shape(s.shape.begin(), s.shape.end())};
  if (s.is_static()) v.konst = tensor_from_sym(s);
  v.sym = std::move(s);
  out_val(k, std::move(v));
}

void NodeCtx::out_const(int k, Tensor t) {
  Val v;
  v.type = TensorType{t.dtype(), Shape(t.shape().begin(), t.shape().end())};
  v.sym = sym_from_tensor(t);
  v.konst = std::move(t);
  out_val(k, std::move(v));
}

void NodeCtx::fail(const std::string& message) const {
  throw_user_error(message);
}

void NodeCtx::expect_rank(int i, int64_t lo, int64_t hi) const {
  int64_t r = rank(i);
  if (r < lo || r > hi) {
    if (lo == hi) failf("input {} must have rank {}, got {}", i, lo, type(i).str());
    failf("input {} must have rank {} to {}, got {}", i, lo, hi, type(i).str());
  }
}

void NodeCtx::check_count(int64_t count, const char* what) const {
  if (count < 0 || count > (int64_t{1} << 26))
    failf("{} would need {} entries built at import time; rlx's limit is 2^26", what, count);
}

void NodeCtx::reject_attr(const char* name, const char* why) const {
  if (has_attr(name)) failf("attribute '{}' is not supported: {}", name, why);
}

ValueId NodeCtx::dim_size(ValueId v, int64_t d) {
  Dim dim = b.type(v).shape.at(d);
  if (dim.is_static()) return b.constant(Tensor::from<int64_t>(DType::kI64, {}, {dim.value}));
  return b.op("dim_size", {v}, {{"dim", d}});
}

int64_t NodeCtx::norm_axis(int64_t axis, int64_t r) const {
  int64_t a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r) failf("axis {} is out of range for rank {}", axis, r);
  return a;
}

int64_t NodeCtx::axis_attr(const char* name, int64_t fallback, int64_t r) const {
  return norm_axis(attr_i(name, fallback), r);
}

}  // namespace rlx::onnx
