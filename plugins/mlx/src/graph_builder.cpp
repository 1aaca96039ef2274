// Each MIR primitive as mlx::core ops, with rlx's numeric semantics where MLX's differ (integer
// division and remainder truncate and give 0 for a zero divisor, float -> narrow integer
// conversion saturates then wraps, indices may be negative): docs/ir.md lists them.
#include "graph_builder.h"

#include <fmt/format.h>
#include <mlx/ops.h>
#include <mlx/transforms.h>

#include <algorithm>
#include <climits>
#include <map>
#include <numeric>

#include "mlx_dtypes.h"
#include "native_ops.h"
#include "rlx/core/error.h"
#include "rlx/core/op_registry.h"

namespace rlx::mlx_target {

namespace mx = mlx::core;

namespace {

using Unary = mx::array (*)(const mx::array&, mx::StreamOrDevice);
using Binary = mx::array (*)(const mx::array&, const mx::array&, mx::StreamOrDevice);

const std::map<std::string, Unary> kUnary = {
    {"exp", mx::exp},          {"log", mx::log},  {"sqrt", mx::sqrt}, {"rsqrt", mx::rsqrt},
    {"tanh", mx::tanh},        {"sin", mx::sin},  {"cos", mx::cos},   {"erf", mx::erf},
    {"logistic", mx::sigmoid}, {"sign", mx::sign}};
const std::map<std::string, Binary> kBinary = {
    {"add", mx::add},     {"sub", mx::subtract},  {"mul", mx::multiply}, {"max", mx::maximum},
    {"min", mx::minimum}, {"pow", mx::power},     {"eq", mx::equal},     {"ne", mx::not_equal},
    {"lt", mx::less},     {"le", mx::less_equal}, {"gt", mx::greater},   {"ge", mx::greater_equal}};
const std::vector<std::string> kOther = {
    "neg",      "abs",        "floor",       "ceil",       "round",
    "not",      "div",        "rem",         "and",        "or",
    "xor",      "select",     "convert",     "iota",       "broadcast_in_dim",
    "reshape",  "transpose",  "slice",       "concat",     "pad",
    "gather",   "scatter",    "dot_general", "while",      "constant",
    "dim_size", "reduce_sum", "reduce_max",  "reduce_min", "reduce_prod", "bitcast"};

mx::array scalar(double v, mx::Dtype t) {
  return mx::astype(mx::array(v), t);
}
mx::array scalar_i64(int64_t v) {
  return mx::array(v, mx::int64);
}

std::vector<int> ints(const IntList& v) {
  return std::vector<int>(v.begin(), v.end());
}

class Builder {
 public:
  Builder(const Graph& g, bool top) : g_(g), top_(top), values_(g.values.size()) {}

  std::vector<mx::array> run(const std::vector<mx::array>& args, size_t* next_constant,
                             const std::vector<mx::array>* constants) {
    size_t a = 0;
    for (ValueId v : g_.inputs) values_[v] = args.at(a++);
    for (ValueId v : g_.params) values_[v] = args.at(a++);
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      std::vector<mx::array> r;
      if (n.op == "constant" && constants) {
        r = {constants->at((*next_constant)++)};
      } else {
        try {
          r = node(n);
        } catch (const Error&) {
          throw;
        } catch (const std::exception& e) {
          throw_unsupported(fmt::format("mlx: MLX refused {} ({}): {}",
                                        g_.describe_node(static_cast<int32_t>(i)), n.op, e.what()));
        }
      }
      for (size_t k = 0; k < n.outputs.size(); ++k)
        values_[n.outputs[k]] = conform(r.at(k), n.outputs[k]);
    }
    std::vector<mx::array> out;
    for (ValueId v : g_.outputs) out.push_back(*values_[v]);
    out.insert(out.end(), checks_.begin(), checks_.end());
    return out;
  }

 private:
  const mx::array& in(const Node& n, size_t k) const { return *values_.at(n.inputs.at(k)); }
  const TensorType& type(ValueId v) const { return g_.type(v); }

  // Every result takes exactly the dtype and shape the graph gives it (MLX promotes small
  // integer sums and keeps reduced dims on request only).
  mx::array conform(mx::array a, ValueId v) const {
    const TensorType& t = type(v);
    mx::Dtype d = to_mlx(t.dtype);
    if (a.dtype() != d) a = mx::astype(a, d);
    mx::Shape s = mlx_shape(t);
    if (a.shape() != s) a = mx::reshape(a, s);
    return a;
  }

  std::vector<mx::array> node(const Node& n);
  mx::array integer_division(const mx::array& a, const mx::array& b, bool remainder) const;
  mx::array convert(const mx::array& x, DType from, DType to) const;
  mx::array broadcast_in_dim(const Node& n) const;
  mx::array slice(const Node& n) const;
  mx::array pad(const Node& n) const;
  mx::array wrapped_indices(const Node& n, int64_t len);
  mx::array gather_or_scatter(const Node& n);
  mx::array dot_general(const Node& n) const;
  mx::array reduce(const Node& n) const;
  std::vector<mx::array> while_loop(const Node& n) const;

  const Graph& g_;
  bool top_;
  std::vector<std::optional<mx::array>> values_;
  std::vector<mx::array> checks_;
};

std::vector<mx::array> Builder::node(const Node& n) {
  const TensorType& out = type(n.outputs.at(0));
  const DType od = out.dtype;
  if (auto u = kUnary.find(n.op); u != kUnary.end()) return {u->second(in(n, 0), {})};
  if (auto b = kBinary.find(n.op); b != kBinary.end()) return {b->second(in(n, 0), in(n, 1), {})};
  if (is_native_op(n.op)) return {build_native(n, g_, [&](size_t k) { return in(n, k); })};
  const std::string& op = n.op;
  if (op == "neg")  // unsigned wraps (0 - x); floats keep neg(0) = -0
    return {is_unsigned(od) ? mx::subtract(scalar(0, to_mlx(od)), in(n, 0))
                            : mx::negative(in(n, 0))};
  if (op == "abs") return {is_unsigned(od) ? in(n, 0) : mx::abs(in(n, 0))};
  if (op == "floor" || op == "ceil" || op == "round") {
    if (!is_float(od)) return {in(n, 0)};
    return {op == "floor"  ? mx::floor(in(n, 0))
            : op == "ceil" ? mx::ceil(in(n, 0))
                           : mx::round(in(n, 0))};
  }
  if (op == "not")
    return {od == DType::kBool ? mx::logical_not(in(n, 0)) : mx::bitwise_invert(in(n, 0))};
  if (op == "and" || op == "or" || op == "xor") {
    if (od == DType::kBool)
      return {op == "and"  ? mx::logical_and(in(n, 0), in(n, 1))
              : op == "or" ? mx::logical_or(in(n, 0), in(n, 1))
                           : mx::not_equal(in(n, 0), in(n, 1))};
    return {op == "and"  ? mx::bitwise_and(in(n, 0), in(n, 1))
            : op == "or" ? mx::bitwise_or(in(n, 0), in(n, 1))
                         : mx::bitwise_xor(in(n, 0), in(n, 1))};
  }
  if (op == "div" || op == "rem") {
    if (!is_float(od)) return {integer_division(in(n, 0), in(n, 1), op == "rem")};
    if (op == "div") return {mx::divide(in(n, 0), in(n, 1))};
    // rlx's float remainder has the dividend's sign (C fmod); MLX's has the divisor's.
    mx::array r = mx::remainder(in(n, 0), in(n, 1));
    mx::array zero = scalar(0, r.dtype());
    mx::array fix = mx::logical_and(mx::not_equal(r, zero),
                                    mx::not_equal(mx::less(r, zero), mx::less(in(n, 0), zero)));
    return {mx::where(fix, mx::subtract(r, in(n, 1)), r)};
  }
  if (op == "select") return {mx::where(in(n, 0), in(n, 1), in(n, 2))};
  if (op == "convert") return {convert(in(n, 0), type(n.inputs[0]).dtype, n.attr_dtype("dtype"))};
  if (op == "constant") {
    const Tensor& v = n.attr_tensor("value");
    return {copy_in(v.data(), v.nbytes(), v.dtype(), mlx_shape(v.shape()))};
  }
  if (op == "dim_size") {
    int64_t d = n.attr_int("dim");
    if (d < 0) d += type(n.inputs[0]).rank();
    return {scalar_i64(type(n.inputs[0]).shape.at(d).value)};
  }
  if (op == "iota") {
    int64_t d = n.attr_int("dim");
    if (d < 0) d += out.rank();
    const int len = static_cast<int>(out.shape.at(d).value);
    mx::Shape along(out.rank(), 1);
    along[d] = len;
    mx::array r = mx::reshape(mx::arange(0, len, mx::int64), along);
    return {mx::broadcast_to(mx::astype(r, to_mlx(od)), mlx_shape(out))};
  }
  if (op == "broadcast_in_dim") return {broadcast_in_dim(n)};
  if (op == "reshape") return {mx::reshape(in(n, 0), mlx_shape(out))};
  if (op == "bitcast") {  // c64[s] <-> f32[s, 2]: mx::view rescales a flat last axis
    const mx::array flat = mx::reshape(in(n, 0), {-1});
    return {mx::reshape(mx::view(flat, to_mlx(od)), mlx_shape(out))};
  }
  if (op == "transpose") return {mx::transpose(in(n, 0), ints(n.attr_ints("perm")))};
  if (op == "slice") return {slice(n)};
  if (op == "concat") {
    std::vector<mx::array> parts;
    for (size_t k = 0; k < n.inputs.size(); ++k) parts.push_back(in(n, k));
    int64_t axis = n.attr_int("axis");
    if (axis < 0) axis += out.rank();
    return {mx::concatenate(parts, static_cast<int>(axis))};
  }
  if (op == "pad") return {pad(n)};
  if (op == "gather" || op == "scatter") return {gather_or_scatter(n)};
  if (op == "dot_general") return {dot_general(n)};
  if (op.rfind("reduce_", 0) == 0) return {reduce(n)};
  if (op == "while") return while_loop(n);
  throw_unsupported(fmt::format("mlx: no MLX form for {}", op));
}

// Truncating division and C remainder; a zero divisor gives 0, INT_MIN / -1 wraps.
mx::array Builder::integer_division(const mx::array& a, const mx::array& b, bool rem) const {
  const mx::Dtype t = a.dtype();
  mx::array zero = scalar(0, t), one = scalar(1, t);
  mx::array by_zero = mx::equal(b, zero);
  mx::array safe = mx::where(by_zero, one, b);
  // MLX floors; truncation differs when the signs differ and the division is inexact.
  mx::array q = mx::floor_divide(a, safe);
  mx::array r = mx::subtract(a, mx::multiply(q, safe));
  mx::array adjust = mx::logical_and(mx::not_equal(r, zero),
                                     mx::not_equal(mx::less(a, zero), mx::less(safe, zero)));
  if (t == mx::uint8 || t == mx::uint16 || t == mx::uint32 || t == mx::uint64)
    adjust = mx::zeros_like(by_zero);
  q = mx::where(adjust, mx::add(q, one), q);
  mx::array result = rem ? mx::subtract(a, mx::multiply(q, safe)) : q;
  return mx::where(by_zero, mx::zeros_like(result), result);
}

// Float -> integer goes through i64, saturating there (NaN -> 0), then wraps to the width; to
// bool is x != 0.
mx::array Builder::convert(const mx::array& x, DType from, DType to) const {
  const mx::Dtype t = to_mlx(to);
  if (from == to) return x;
  if (to == DType::kBool) return mx::not_equal(x, scalar(0, x.dtype()));
  if (is_float(from) && is_integer(to)) {
    mx::array wide = mx::astype(x, from == DType::kF64 ? mx::float64 : mx::float32);
    const double two63 = 9223372036854775808.0;
    mx::array i = mx::astype(mx::clip(wide, scalar(-two63, wide.dtype()), std::nullopt), mx::int64);
    i = mx::where(mx::greater_equal(wide, scalar(two63, wide.dtype())), scalar_i64(INT64_MAX), i);
    i = mx::where(mx::isnan(wide), scalar_i64(0), i);
    return mx::astype(i, t);
  }
  return mx::astype(x, t);
}

mx::array Builder::broadcast_in_dim(const Node& n) const {
  const TensorType& out = type(n.outputs[0]);
  IntList dims = n.attr_ints("dims");
  mx::array x = in(n, 0);
  // Operand dims in the order they land in the result, then ones where the result has new dims.
  std::vector<int> order(dims.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return dims[a] < dims[b]; });
  if (!std::is_sorted(dims.begin(), dims.end())) x = mx::transpose(x, order);
  mx::Shape shape(out.rank(), 1);
  for (size_t i = 0; i < order.size(); ++i) shape[dims[order[i]]] = x.shape(static_cast<int>(i));
  return mx::broadcast_to(mx::reshape(x, shape), mlx_shape(out));
}

mx::array Builder::slice(const Node& n) const {
  const TensorType& t = type(n.inputs[0]);
  IntList start = n.attr_ints("start"), limit = n.attr_ints("limit");
  IntList strides = n.has_attr("strides") ? n.attr_ints("strides") : IntList(start.size(), 1);
  for (size_t i = 0; i < limit.size(); ++i)
    if (limit[i] == -1 && start[i] == 0 && strides[i] == 1) limit[i] = t.shape[i].value;
  return mx::slice(in(n, 0), mlx_shape(start), mlx_shape(limit), mlx_shape(strides));
}

// Negative padding removes elements: pad by the positive part, then slice the negative off.
mx::array Builder::pad(const Node& n) const {
  IntList low = n.attr_ints("low"), high = n.attr_ints("high");
  std::vector<std::pair<int, int>> widths;
  bool crop = false;
  for (size_t i = 0; i < low.size(); ++i) {
    widths.emplace_back(static_cast<int>(std::max<int64_t>(low[i], 0)),
                        static_cast<int>(std::max<int64_t>(high[i], 0)));
    crop = crop || low[i] < 0 || high[i] < 0;
  }
  mx::array p = mx::pad(in(n, 0), widths, in(n, 1));
  if (!crop) return p;
  mx::Shape start, stop;
  for (size_t i = 0; i < low.size(); ++i) {
    start.push_back(static_cast<int>(std::max<int64_t>(-low[i], 0)));
    stop.push_back(p.shape(static_cast<int>(i)) - static_cast<int>(std::max<int64_t>(-high[i], 0)));
  }
  return mx::slice(p, start, stop);
}

// Indices in [-len, len) counting from the end when negative. At the top level the check is a
// result of the program; inside a loop it is evaluated at once.
mx::array Builder::wrapped_indices(const Node& n, int64_t len) {
  mx::array idx = mx::astype(in(n, 1), mx::int64);
  mx::array flat = mx::flatten(idx);
  const int64_t count = static_cast<int64_t>(flat.size());
  mx::array bad =
      mx::logical_or(mx::less(flat, scalar_i64(-len)), mx::greater_equal(flat, scalar_i64(len)));
  mx::array pos = mx::arange(0, static_cast<int>(count), mx::int64);
  mx::array first = mx::min(mx::where(bad, pos, scalar_i64(count)));
  mx::array value = mx::sum(mx::where(mx::equal(pos, first), flat, scalar_i64(0)));
  if (top_) {
    checks_.push_back(first);
    checks_.push_back(value);
  } else {
    mx::eval({first, value});
    if (first.item<int64_t>() < count)
      throw_user_error(fmt::format(
          "{}: index {} (at position {} of the indices) is out of range for an axis of size {}",
          n.op, value.item<int64_t>(), first.item<int64_t>(), len));
  }
  // MLX reads and writes out-of-range indices unchecked: clamped, the program stays in bounds
  // while the host raises the error from the check.
  mx::array wrapped = mx::where(mx::less(idx, scalar_i64(0)), mx::add(idx, scalar_i64(len)), idx);
  return mx::clip(wrapped, scalar_i64(0), scalar_i64(std::max<int64_t>(len - 1, 0)));
}

// gather {axis} is numpy's take; scatter {axis, reduce} writes updates shaped like that gather's
// result, which MLX wants as [indices..., operand dims with axis kept as 1].
mx::array Builder::gather_or_scatter(const Node& n) {
  const TensorType& operand = type(n.inputs[0]);
  int64_t axis = n.attr_int("axis");
  if (axis < 0) axis += operand.rank();
  mx::array idx = wrapped_indices(n, operand.shape[axis].value);
  if (n.op == "gather") return mx::take(in(n, 0), idx, static_cast<int>(axis));
  const int q = idx.ndim(), r = static_cast<int>(operand.rank());
  std::vector<int> perm;
  for (int d = 0; d < q; ++d) perm.push_back(static_cast<int>(axis) + d);
  for (int d = 0; d < r + q - 1; ++d)
    if (d < axis || d >= axis + q) perm.push_back(d);
  mx::array u = mx::transpose(in(n, 2), perm);
  mx::Shape shape = idx.shape();
  for (int d = 0; d < r; ++d)
    shape.push_back(d == axis ? 1 : static_cast<int>(operand.shape[d].value));
  u = mx::reshape(u, shape);
  if (n.attr_string("reduce", "none") == "add")
    return mx::scatter_add(in(n, 0), {idx}, u, {static_cast<int>(axis)});
  return mx::scatter(in(n, 0), {idx}, u, {static_cast<int>(axis)});
}

// [batch, free, contract] x [batch, contract, free] as one batched matmul. f16/bf16 products
// accumulate in f32 and round once, as rlx computes them; integer products (MLX's matmul is
// float-only) multiply and sum exactly, wrapping as integers do.
mx::array Builder::dot_general(const Node& n) const {
  const TensorType& out = type(n.outputs[0]);
  IntList lb = n.attr_ints("lhs_batch"), rb = n.attr_ints("rhs_batch");
  IntList lc = n.attr_ints("lhs_contract"), rc = n.attr_ints("rhs_contract");
  auto arrange = [](const mx::array& x, const IntList& batch, const IntList& contract,
                    bool contract_last) {
    std::vector<int> free;
    for (int d = 0; d < static_cast<int>(x.ndim()); ++d)
      if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
          std::find(contract.begin(), contract.end(), d) == contract.end())
        free.push_back(d);
    std::vector<int> perm(batch.begin(), batch.end());
    int b = 1, k = 1, f = 1;
    for (int64_t d : batch) b *= x.shape(static_cast<int>(d));
    for (int64_t d : contract) k *= x.shape(static_cast<int>(d));
    for (int d : free) f *= x.shape(d);
    if (contract_last) {
      perm.insert(perm.end(), free.begin(), free.end());
      perm.insert(perm.end(), contract.begin(), contract.end());
    } else {
      perm.insert(perm.end(), contract.begin(), contract.end());
      perm.insert(perm.end(), free.begin(), free.end());
    }
    mx::array t = mx::transpose(x, perm);
    return mx::reshape(t, contract_last ? mx::Shape{b, f, k} : mx::Shape{b, k, f});
  };
  mx::array a = arrange(in(n, 0), lb, lc, true);
  mx::array b = arrange(in(n, 1), rb, rc, false);
  mx::array product = [&] {
    if (is_float(out.dtype)) {
      const bool narrow = out.dtype == DType::kF16 || out.dtype == DType::kBF16;
      if (narrow) return mx::matmul(mx::astype(a, mx::float32), mx::astype(b, mx::float32));
      return mx::matmul(a, b);
    }
    mx::array wide_a = mx::expand_dims(a, 3),
              wide_b = mx::expand_dims(b, 1);  // [B,M,K,1] [B,1,K,N]
    return mx::sum(mx::multiply(wide_a, wide_b), 2);
  }();
  return mx::reshape(product, mlx_shape(out));
}

mx::array Builder::reduce(const Node& n) const {
  std::vector<int> axes;
  const int64_t rank = type(n.inputs[0]).rank();
  for (int64_t a : n.attr_ints("axes")) axes.push_back(static_cast<int>(a < 0 ? a + rank : a));
  const mx::array& x = in(n, 0);
  if (n.op == "reduce_sum") return mx::sum(x, axes);
  if (n.op == "reduce_max") return mx::max(x, axes);
  if (n.op == "reduce_min") return mx::min(x, axes);
  return mx::prod(x, axes);
}

// The loop runs on the host: each trip builds and evaluates the condition, then the body.
std::vector<mx::array> Builder::while_loop(const Node& n) const {
  std::vector<mx::array> state;
  for (size_t k = 0; k < n.inputs.size(); ++k) state.push_back(in(n, k));
  const Graph& cond = *n.regions.at(0);
  const Graph& body = *n.regions.at(1);
  for (;;) {
    size_t unused = 0;
    mx::array go = Builder(cond, false).run(state, &unused, nullptr).at(0);
    mx::eval(go);
    if (!go.item<bool>()) break;
    state = Builder(body, false).run(state, &unused, nullptr);
    mx::eval(state);
  }
  return state;
}

}  // namespace

std::vector<IndexCheck> index_checks(const Graph& g) {
  std::vector<IndexCheck> checks;
  for (const Node& n : g.nodes) {
    if (n.op != "gather" && n.op != "scatter") continue;
    const TensorType& operand = g.type(n.inputs[0]);
    int64_t axis = n.attr_int("axis");
    if (axis < 0) axis += operand.rank();
    int64_t count = 1;
    for (const Dim& d : g.type(n.inputs[1]).shape) count *= d.value;
    checks.push_back({n.op, count, operand.shape[axis].value});
  }
  return checks;
}

std::vector<mx::array> constants(const Graph& g) {
  std::vector<mx::array> out;
  for (const Node& n : g.nodes) {
    if (n.op != "constant") continue;
    const Tensor& v = n.attr_tensor("value");
    out.push_back(copy_in(v.data(), v.nbytes(), v.dtype(), mlx_shape(v.shape())));
  }
  return out;
}

bool has_loops(const Graph& g) {
  return std::any_of(g.nodes.begin(), g.nodes.end(), [](const Node& n) { return n.op == "while"; });
}

std::vector<mx::array> build(const Graph& g, const std::vector<mx::array>& args) {
  const size_t fixed = g.inputs.size() + g.params.size();
  std::vector<mx::array> consts(args.begin() + static_cast<std::ptrdiff_t>(fixed), args.end());
  size_t next = 0;
  return Builder(g, true).run(args, &next, &consts);
}

Verdict can_build(const NodeSignature& s) {
  const bool known = kUnary.count(s.op) || kBinary.count(s.op) ||
                     std::find(kOther.begin(), kOther.end(), s.op) != kOther.end();
  if (!known)
    return Verdict::no(fmt::format("the mlx target maps MIR primitives; {} is not one", s.op));
  std::vector<TensorType> all = s.inputs;
  all.insert(all.end(), s.outputs.begin(), s.outputs.end());
  if (std::string why = dtype_refusal(s.op, all); !why.empty()) return Verdict::no(why);
  // MLX's cpu computes these in f32 even for f64 arrays (measured: exp is off by 2.5e-6).
  static const std::vector<std::string> kSingleOnly = {"exp", "sin", "cos", "erf", "logistic"};
  if (std::find(kSingleOnly.begin(), kSingleOnly.end(), s.op) != kSingleOnly.end() &&
      std::any_of(all.begin(), all.end(),
                  [](const TensorType& t) { return t.dtype == DType::kF64; }))
    return Verdict::no(fmt::format(
        "{} has {} for 32-bit floats only, so mlx cannot compute it in f64; convert the model to "
        "f32 first (rlx never narrows f64 silently)",
        kLanguage, s.op));
  return Verdict::yes();
}

}  // namespace rlx::mlx_target
