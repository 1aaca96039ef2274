// Each MIR primitive as mlx::core ops, with rlx's numeric semantics where MLX's differ (integer
// division and remainder truncate and give 0 for a zero divisor, float -> narrow integer
// conversion saturates at the destination's range, indices may be negative): docs/ir.md lists
// them.
#include "graph_builder.h"

#include <fmt/format.h>
#include <mlx/ops.h>
#include <mlx/transforms.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <numeric>

#include "mlx_dtypes.h"
#include "native_ops.h"
#include "rlx/core/error.h"
#include "rlx/core/op_registry.h"

namespace rlx::mlx_target {

namespace mx = mlx::core;

namespace {

// The elementwise ops that are one MLX call each, with the call's text for the program writer.
struct UnaryCall {
  const char* callee;
  mx::array (*fn)(const mx::array&);
};
struct BinaryCall {
  const char* callee;
  mx::array (*fn)(const mx::array&, const mx::array&);
};
#define RLX_UNARY(fn)                                        \
  UnaryCall {                                                \
    "mx::" #fn, [](const mx::array& a) { return mx::fn(a); } \
  }
#define RLX_BINARY(fn)                                                              \
  BinaryCall {                                                                      \
    "mx::" #fn, [](const mx::array& a, const mx::array& b) { return mx::fn(a, b); } \
  }
const std::map<std::string, UnaryCall> kUnary = {
    {"exp", RLX_UNARY(exp)},     {"log", RLX_UNARY(log)},   {"sqrt", RLX_UNARY(sqrt)},
    {"rsqrt", RLX_UNARY(rsqrt)}, {"tanh", RLX_UNARY(tanh)}, {"sin", RLX_UNARY(sin)},
    {"cos", RLX_UNARY(cos)},     {"erf", RLX_UNARY(erf)},   {"logistic", RLX_UNARY(sigmoid)},
    {"sign", RLX_UNARY(sign)}};
const std::map<std::string, BinaryCall> kBinary = {
    {"add", RLX_BINARY(add)},      {"sub", RLX_BINARY(subtract)},
    {"mul", RLX_BINARY(multiply)}, {"max", RLX_BINARY(maximum)},
    {"min", RLX_BINARY(minimum)},  {"pow", RLX_BINARY(power)},
    {"eq", RLX_BINARY(equal)},     {"ne", RLX_BINARY(not_equal)},
    {"lt", RLX_BINARY(less)},      {"le", RLX_BINARY(less_equal)},
    {"gt", RLX_BINARY(greater)},   {"ge", RLX_BINARY(greater_equal)}};
#undef RLX_UNARY
#undef RLX_BINARY
const std::vector<std::string> kOther = {
    "neg",      "abs",        "floor",       "ceil",       "round",
    "not",      "div",        "rem",         "and",        "or",
    "xor",      "select",     "convert",     "iota",       "broadcast_in_dim",
    "reshape",  "transpose",  "slice",       "concat",     "pad",
    "gather",   "scatter",    "dot_general", "while",      "constant",
    "dim_size", "reduce_sum", "reduce_max",  "reduce_min", "reduce_prod",
    "bitcast"};

// "%y = add(%x, %b) : f32[2, 3] (fc1)": what the program's next calls compute.
std::string node_text(const Graph& g, const Node& n) {
  std::string outs, ins, types;
  for (ValueId v : n.outputs) {
    outs += (outs.empty() ? "%" : ", %") + g.values[v].name;
    std::string dims;
    for (const Dim& d : g.type(v).shape) dims += (dims.empty() ? "" : ", ") + d.str();
    types += fmt::format("{}{}[{}]", types.empty() ? "" : ", ", dtype_name(g.type(v).dtype), dims);
  }
  for (ValueId v : n.inputs) ins += (ins.empty() ? "%" : ", %") + g.values[v].name;
  std::string text = fmt::format("{} = {}({}) : {}", outs, n.op, ins, types);
  return n.loc.empty() ? text : fmt::format("{} ({})", text, n.loc);
}

std::vector<int> ints(const IntList& v) {
  return std::vector<int>(v.begin(), v.end());
}

// Every MLX call below is RLX_MX's (mlx_calls.h): run, and written when writing the program.
#define MX(fn, ...) RLX_MX(calls_, fn, __VA_ARGS__)

class Builder {
 public:
  Builder(const Graph& g, bool top, MlxCalls calls)
      : g_(g), top_(top), calls_(calls), values_(g.values.size()) {}

  std::vector<mx::array> run(const std::vector<mx::array>& args, size_t* next_constant,
                             const std::vector<mx::array>* constants) {
    size_t a = 0;
    for (ValueId v : g_.inputs) values_[v] = args.at(a++);
    for (ValueId v : g_.params) values_[v] = args.at(a++);
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      const std::string where = g_.describe_node(static_cast<int32_t>(i));
      std::vector<mx::array> r;
      if (n.op == "constant" && constants) {
        r = {constants->at((*next_constant)++)};
      } else {
        // A loop's trip count is read on the host as it runs, which a recorded sequence of
        // calls cannot say.
        if (n.op == "while" && calls_.recording())
          throw_unsupported(fmt::format(
              "mlx: the standalone MLX program cannot express {}: the mlx target runs a loop "
              "on the host, reading its condition each trip, and the program writer has no "
              "form for that; run the model with `rlx run --target mlx` instead, or unroll the "
              "loop before compiling",
              where));
        if (calls_.recording()) calls_.comment(node_text(g_, n));
        try {
          r = node(n);
        } catch (const Error&) {
          throw;
        } catch (const std::exception& e) {
          throw_unsupported(fmt::format("mlx: MLX refused {} ({}): {}", where, n.op, e.what()));
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

  mx::array scalar(double v, mx::Dtype t) const { return MX(astype, MX(array, v), t); }
  mx::array scalar_i64(int64_t v) const { return MX(array, v, mx::int64); }

  // Every result takes exactly the dtype and shape the graph gives it (MLX promotes small
  // integer sums and keeps reduced dims on request only).
  mx::array conform(mx::array a, ValueId v) const {
    const TensorType& t = type(v);
    mx::Dtype d = to_mlx(t.dtype);
    if (a.dtype() != d) a = MX(astype, a, d);
    mx::Shape s = mlx_shape(t);
    if (a.shape() != s) a = MX(reshape, a, s);
    return a;
  }

  std::vector<mx::array> node(const Node& n);
  mx::array integer_division(const mx::array& a, const mx::array& b, bool remainder) const;
  mx::array float_remainder(const mx::array& a, const mx::array& b) const;
  mx::array convert(const mx::array& x, DType from, DType to) const;
  mx::array iota(const Node& n) const;
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
  MlxCalls calls_;
  std::vector<std::optional<mx::array>> values_;
  std::vector<mx::array> checks_;
};

std::vector<mx::array> Builder::node(const Node& n) {
  const TensorType& out = type(n.outputs.at(0));
  const DType od = out.dtype;
  if (auto u = kUnary.find(n.op); u != kUnary.end())
    return {calls_(u->second.callee, u->second.fn, in(n, 0))};
  if (auto b = kBinary.find(n.op); b != kBinary.end())
    return {calls_(b->second.callee, b->second.fn, in(n, 0), in(n, 1))};
  if (is_native_op(n.op)) return {build_native(n, g_, calls_, [&](size_t k) { return in(n, k); })};
  const std::string& op = n.op;
  if (op == "neg")  // unsigned wraps (0 - x); floats keep neg(0) = -0
    return {is_unsigned(od) ? MX(subtract, scalar(0, to_mlx(od)), in(n, 0))
                            : MX(negative, in(n, 0))};
  if (op == "abs") return {is_unsigned(od) ? in(n, 0) : MX(abs, in(n, 0))};
  if (op == "floor" || op == "ceil" || op == "round") {
    if (!is_float(od)) return {in(n, 0)};
    return {op == "floor"  ? MX(floor, in(n, 0))
            : op == "ceil" ? MX(ceil, in(n, 0))
                           : MX(round, in(n, 0))};
  }
  if (op == "not")
    return {od == DType::kBool ? MX(logical_not, in(n, 0)) : MX(bitwise_invert, in(n, 0))};
  if (op == "and" || op == "or" || op == "xor") {
    if (od == DType::kBool)
      return {op == "and"  ? MX(logical_and, in(n, 0), in(n, 1))
              : op == "or" ? MX(logical_or, in(n, 0), in(n, 1))
                           : MX(not_equal, in(n, 0), in(n, 1))};
    return {op == "and"  ? MX(bitwise_and, in(n, 0), in(n, 1))
            : op == "or" ? MX(bitwise_or, in(n, 0), in(n, 1))
                         : MX(bitwise_xor, in(n, 0), in(n, 1))};
  }
  if (op == "div" || op == "rem") {
    if (!is_float(od)) return {integer_division(in(n, 0), in(n, 1), op == "rem")};
    if (op == "div") return {MX(divide, in(n, 0), in(n, 1))};
    return {float_remainder(in(n, 0), in(n, 1))};
  }
  if (op == "select") return {MX(where, in(n, 0), in(n, 1), in(n, 2))};
  if (op == "convert") return {convert(in(n, 0), type(n.inputs[0]).dtype, n.attr_dtype("dtype"))};
  if (op == "constant") {  // inside a loop's body: made on each trip (never written: see run)
    const Tensor& v = n.attr_tensor("value");
    return {copy_in(v.data(), v.nbytes(), v.dtype(), mlx_shape(v.shape()))};
  }
  if (op == "dim_size") {
    int64_t d = n.attr_int("dim");
    if (d < 0) d += type(n.inputs[0]).rank();
    return {scalar_i64(type(n.inputs[0]).shape.at(d).value)};
  }
  if (op == "iota") return {iota(n)};
  if (op == "broadcast_in_dim") return {broadcast_in_dim(n)};
  if (op == "reshape") return {MX(reshape, in(n, 0), mlx_shape(out))};
  if (op == "bitcast") {  // c64[s] <-> f32[s, 2]: mx::view rescales a flat last axis
    const mx::array flat = MX(reshape, in(n, 0), mx::Shape{-1});
    return {MX(reshape, MX(view, flat, to_mlx(od)), mlx_shape(out))};
  }
  if (op == "transpose") return {MX(transpose, in(n, 0), ints(n.attr_ints("perm")))};
  if (op == "slice") return {slice(n)};
  if (op == "concat") {
    std::vector<mx::array> parts;
    for (size_t k = 0; k < n.inputs.size(); ++k) parts.push_back(in(n, k));
    int64_t axis = n.attr_int("axis");
    if (axis < 0) axis += out.rank();
    return {MX(concatenate, parts, static_cast<int>(axis))};
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
  mx::array by_zero = MX(equal, b, zero);
  mx::array safe = MX(where, by_zero, one, b);
  // MLX floors; truncation differs when the signs differ and the division is inexact.
  mx::array q = MX(floor_divide, a, safe);
  mx::array r = MX(subtract, a, MX(multiply, q, safe));
  mx::array adjust = MX(logical_and, MX(not_equal, r, zero),
                        MX(not_equal, MX(less, a, zero), MX(less, safe, zero)));
  if (t == mx::uint8 || t == mx::uint16 || t == mx::uint32 || t == mx::uint64)
    adjust = MX(zeros_like, by_zero);
  q = MX(where, adjust, MX(add, q, one), q);
  mx::array result = rem ? MX(subtract, a, MX(multiply, q, safe)) : q;
  return MX(where, by_zero, MX(zeros_like, result), result);
}

// rlx's float remainder has the dividend's sign (C fmod); MLX's has the divisor's.
mx::array Builder::float_remainder(const mx::array& a, const mx::array& b) const {
  mx::array r = MX(remainder, a, b);
  mx::array zero = scalar(0, r.dtype());
  mx::array fix =
      MX(logical_and, MX(not_equal, r, zero), MX(not_equal, MX(less, r, zero), MX(less, a, zero)));
  return MX(where, fix, MX(subtract, r, b), r);
}

namespace {

// The range of an integer dtype narrower than 64 bits.
int64_t lowest(DType t) {
  switch (t) {
    case DType::kI8: return INT8_MIN;
    case DType::kI16: return INT16_MIN;
    case DType::kI32: return INT32_MIN;
    default: return 0;  // unsigned
  }
}
int64_t highest(DType t) {
  switch (t) {
    case DType::kI8: return INT8_MAX;
    case DType::kU8: return UINT8_MAX;
    case DType::kI16: return INT16_MAX;
    case DType::kU16: return UINT16_MAX;
    case DType::kI32: return INT32_MAX;
    default: return UINT32_MAX;
  }
}

}  // namespace

// Float -> integer truncates, saturates at the destination's range and maps NaN to 0 (docs/ir.md,
// as the C-family targets convert); to bool is x != 0. Through i64, whose range every narrower
// limit fits: the float is clipped there first (so the conversion is defined), then the i64 at
// the destination's limits. u64 reaches past i64, so it is clipped as a float below 2^64.
mx::array Builder::convert(const mx::array& x, DType from, DType to) const {
  const mx::Dtype t = to_mlx(to);
  if (from == to) return x;
  if (to == DType::kBool) return MX(not_equal, x, scalar(0, x.dtype()));
  if (is_float(from) && is_integer(to)) {
    mx::array wide = MX(astype, x, from == DType::kF64 ? mx::float64 : mx::float32);
    const mx::array nan = MX(isnan, wide);
    if (to == DType::kU64) {
      const double below = std::nextafter(18446744073709551616.0, 0.0);
      const float below_f = std::nextafter(18446744073709551616.0f, 0.0f);
      mx::array c = MX(clip, wide, scalar(0, wide.dtype()),
                       scalar(from == DType::kF64 ? below : below_f, wide.dtype()));
      mx::array u = MX(astype, c, mx::uint64);
      // All ones and zero as u64, from i64 (a modular cast).
      u = MX(where, MX(greater_equal, wide, scalar(18446744073709551616.0, wide.dtype())),
             MX(astype, scalar_i64(-1), mx::uint64), u);
      return MX(where, nan, MX(astype, scalar_i64(0), mx::uint64), u);
    }
    const double two63 = 9223372036854775808.0;
    mx::array i = MX(astype, MX(clip, wide, scalar(-two63, wide.dtype()), std::nullopt), mx::int64);
    i = MX(where, MX(greater_equal, wide, scalar(two63, wide.dtype())), scalar_i64(INT64_MAX), i);
    i = MX(where, nan, scalar_i64(0), i);
    if (to != DType::kI64) i = MX(clip, i, scalar_i64(lowest(to)), scalar_i64(highest(to)));
    return MX(astype, i, t);
  }
  return MX(astype, x, t);
}

mx::array Builder::iota(const Node& n) const {
  const TensorType& out = type(n.outputs[0]);
  int64_t d = n.attr_int("dim");
  if (d < 0) d += out.rank();
  const int len = static_cast<int>(out.shape.at(d).value);
  mx::Shape along(out.rank(), 1);
  along[d] = len;
  mx::array r = MX(reshape, MX(arange, 0, len, mx::int64), along);
  return MX(broadcast_to, MX(astype, r, to_mlx(out.dtype)), mlx_shape(out));
}

mx::array Builder::broadcast_in_dim(const Node& n) const {
  const TensorType& out = type(n.outputs[0]);
  IntList dims = n.attr_ints("dims");
  mx::array x = in(n, 0);
  // Operand dims in the order they land in the result, then ones where the result has new dims.
  std::vector<int> order(dims.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return dims[a] < dims[b]; });
  if (!std::is_sorted(dims.begin(), dims.end())) x = MX(transpose, x, order);
  mx::Shape shape(out.rank(), 1);
  for (size_t i = 0; i < order.size(); ++i) shape[dims[order[i]]] = x.shape(static_cast<int>(i));
  return MX(broadcast_to, MX(reshape, x, shape), mlx_shape(out));
}

mx::array Builder::slice(const Node& n) const {
  const TensorType& t = type(n.inputs[0]);
  IntList start = n.attr_ints("start"), limit = n.attr_ints("limit");
  IntList strides = n.has_attr("strides") ? n.attr_ints("strides") : IntList(start.size(), 1);
  for (size_t i = 0; i < limit.size(); ++i)
    if (limit[i] == -1 && start[i] == 0 && strides[i] == 1) limit[i] = t.shape[i].value;
  return MX(slice, in(n, 0), mlx_shape(start), mlx_shape(limit), mlx_shape(strides));
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
  mx::array p = MX(pad, in(n, 0), widths, in(n, 1));
  if (!crop) return p;
  mx::Shape start, stop;
  for (size_t i = 0; i < low.size(); ++i) {
    start.push_back(static_cast<int>(std::max<int64_t>(-low[i], 0)));
    stop.push_back(p.shape(static_cast<int>(i)) - static_cast<int>(std::max<int64_t>(-high[i], 0)));
  }
  return MX(slice, p, start, stop);
}

// Indices in [-len, len) counting from the end when negative. At the top level the check is a
// result of the program; inside a loop it is evaluated at once.
mx::array Builder::wrapped_indices(const Node& n, int64_t len) {
  mx::array idx = MX(astype, in(n, 1), mx::int64);
  mx::array flat = MX(flatten, idx);
  const int64_t count = static_cast<int64_t>(flat.size());
  mx::array bad =
      MX(logical_or, MX(less, flat, scalar_i64(-len)), MX(greater_equal, flat, scalar_i64(len)));
  mx::array pos = MX(arange, 0, static_cast<int>(count), mx::int64);
  mx::array first = MX(min, MX(where, bad, pos, scalar_i64(count)));
  mx::array value = MX(sum, MX(where, MX(equal, pos, first), flat, scalar_i64(0)));
  if (top_) {
    checks_.push_back(first);
    checks_.push_back(value);
  } else {
    mx::eval({first, value});
    if (first.item<int64_t>() < count)
      throw_index_error(n.op, value.item<int64_t>(), first.item<int64_t>(), len);
  }
  // MLX reads and writes out-of-range indices unchecked: clamped, the program stays in bounds
  // while the host raises the error from the check.
  mx::array wrapped = MX(where, MX(less, idx, scalar_i64(0)), MX(add, idx, scalar_i64(len)), idx);
  return MX(clip, wrapped, scalar_i64(0), scalar_i64(std::max<int64_t>(len - 1, 0)));
}

// gather {axis} is numpy's take; scatter {axis, reduce} writes updates shaped like that gather's
// result, which MLX wants as [indices..., operand dims with axis kept as 1].
mx::array Builder::gather_or_scatter(const Node& n) {
  const TensorType& operand = type(n.inputs[0]);
  int64_t axis = n.attr_int("axis");
  if (axis < 0) axis += operand.rank();
  mx::array idx = wrapped_indices(n, operand.shape[axis].value);
  if (n.op == "gather") return MX(take, in(n, 0), idx, static_cast<int>(axis));
  const int q = idx.ndim(), r = static_cast<int>(operand.rank());
  std::vector<int> perm;
  for (int d = 0; d < q; ++d) perm.push_back(static_cast<int>(axis) + d);
  for (int d = 0; d < r + q - 1; ++d)
    if (d < axis || d >= axis + q) perm.push_back(d);
  mx::array u = MX(transpose, in(n, 2), perm);
  mx::Shape shape = idx.shape();
  for (int d = 0; d < r; ++d)
    shape.push_back(d == axis ? 1 : static_cast<int>(operand.shape[d].value));
  u = MX(reshape, u, shape);
  const std::vector<mx::array> indices = {idx};
  const std::vector<int> axes = {static_cast<int>(axis)};
  if (n.attr_string("reduce", "none") == "add") return MX(scatter_add, in(n, 0), indices, u, axes);
  return MX(scatter, in(n, 0), indices, u, axes);
}

// [batch, free, contract] x [batch, contract, free] as one batched matmul. f16/bf16 products
// accumulate in f32 and round once, as rlx computes them; integer products (MLX's matmul is
// float-only) multiply and sum exactly, wrapping as integers do.
mx::array Builder::dot_general(const Node& n) const {
  const TensorType& out = type(n.outputs[0]);
  IntList lb = n.attr_ints("lhs_batch"), rb = n.attr_ints("rhs_batch");
  IntList lc = n.attr_ints("lhs_contract"), rc = n.attr_ints("rhs_contract");
  auto arrange = [&](const mx::array& x, const IntList& batch, const IntList& contract,
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
    mx::array t = MX(transpose, x, perm);
    return MX(reshape, t, contract_last ? mx::Shape{b, f, k} : mx::Shape{b, k, f});
  };
  mx::array a = arrange(in(n, 0), lb, lc, true);
  mx::array b = arrange(in(n, 1), rb, rc, false);
  mx::array product = [&] {
    if (is_float(out.dtype)) {
      const bool narrow = out.dtype == DType::kF16 || out.dtype == DType::kBF16;
      if (narrow) return MX(matmul, MX(astype, a, mx::float32), MX(astype, b, mx::float32));
      return MX(matmul, a, b);
    }
    // [B,M,K,1] x [B,1,K,N] summed over K
    return MX(sum, MX(multiply, MX(expand_dims, a, 3), MX(expand_dims, b, 1)), 2);
  }();
  return MX(reshape, product, mlx_shape(out));
}

mx::array Builder::reduce(const Node& n) const {
  std::vector<int> axes;
  const int64_t rank = type(n.inputs[0]).rank();
  for (int64_t a : n.attr_ints("axes")) axes.push_back(static_cast<int>(a < 0 ? a + rank : a));
  const mx::array& x = in(n, 0);
  if (n.op == "reduce_sum") return MX(sum, x, axes);
  if (n.op == "reduce_max") return MX(max, x, axes);
  if (n.op == "reduce_min") return MX(min, x, axes);
  return MX(prod, x, axes);
}

// The loop runs on the host: each trip builds and evaluates the condition, then the body.
std::vector<mx::array> Builder::while_loop(const Node& n) const {
  std::vector<mx::array> state;
  for (size_t k = 0; k < n.inputs.size(); ++k) state.push_back(in(n, k));
  const Graph& cond = *n.regions.at(0);
  const Graph& body = *n.regions.at(1);
  for (;;) {
    size_t unused = 0;
    mx::array go = Builder(cond, false, calls_).run(state, &unused, nullptr).at(0);
    mx::eval(go);
    if (!go.item<bool>()) break;
    state = Builder(body, false, calls_).run(state, &unused, nullptr);
    mx::eval(state);
  }
  return state;
}

#undef MX

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

std::vector<mx::array> build(const Graph& g, const std::vector<mx::array>& args,
                             CallRecorder* recorder) {
  const size_t fixed = g.inputs.size() + g.params.size();
  std::vector<mx::array> consts(args.begin() + static_cast<std::ptrdiff_t>(fixed), args.end());
  size_t next = 0;
  return Builder(g, true, MlxCalls(recorder)).run(args, &next, &consts);
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
