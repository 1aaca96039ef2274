// Each MIR primitive as StableHLO, with rlx's numeric semantics where XLA's differ (integer
// division by zero, float -> narrow integer conversion, negative indices): docs/ir.md lists them.
#include "stablehlo_emitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <map>

#include "rlx/core/error.h"
#include "stablehlo_types.h"

namespace rlx::tpu {

namespace {

const std::map<std::string, std::string> kUnary = {{"neg", "negate"},
                                                   {"abs", "abs"},
                                                   {"sign", "sign"},
                                                   {"exp", "exponential"},
                                                   {"log", "log"},
                                                   {"sqrt", "sqrt"},
                                                   {"rsqrt", "rsqrt"},
                                                   {"tanh", "tanh"},
                                                   {"sin", "sine"},
                                                   {"cos", "cosine"},
                                                   {"floor", "floor"},
                                                   {"ceil", "ceil"},
                                                   {"round", "round_nearest_even"},
                                                   {"logistic", "logistic"},
                                                   {"not", "not"}};
const std::map<std::string, std::string> kBinary = {
    {"add", "add"},     {"sub", "subtract"}, {"mul", "multiply"}, {"div", "divide"},
    {"max", "maximum"}, {"min", "minimum"},  {"pow", "power"},    {"rem", "remainder"},
    {"and", "and"},     {"or", "or"},        {"xor", "xor"}};
const std::map<std::string, std::string> kCompare = {{"eq", "EQ"}, {"ne", "NE"}, {"lt", "LT"},
                                                     {"le", "LE"}, {"gt", "GT"}, {"ge", "GE"}};
const std::map<std::string, std::string> kReduce = {{"reduce_sum", "add"},
                                                    {"reduce_max", "maximum"},
                                                    {"reduce_min", "minimum"},
                                                    {"reduce_prod", "multiply"}};
// The primitives with a form of their own below.
const std::vector<std::string> kOther = {"select",  "convert",   "iota",     "broadcast_in_dim",
                                         "reshape", "transpose", "slice",    "concat",
                                         "pad",     "gather",    "scatter",  "dot_general",
                                         "while",   "constant",  "dim_size", "erf",
                                         "bitcast"};

enum class Scalar { kZero, kOne, kLowest, kHighest };

// A scalar literal of dtype t (the text inside dense<...>).
std::string scalar_literal(DType t, Scalar which) {
  if (t == DType::kBool)
    return which == Scalar::kZero || which == Scalar::kLowest ? "false" : "true";
  if (is_float(t)) {
    if (which == Scalar::kZero) return "0.000000e+00";
    if (which == Scalar::kOne) return "1.000000e+00";
    const bool neg = which == Scalar::kLowest;  // -inf or +inf, as hex bits of the width
    switch (t) {
      case DType::kF16:
        return neg ? "0xFC00" : "0x7C00";
      case DType::kBF16:
        return neg ? "0xFF80" : "0x7F80";
      case DType::kF64:
        return neg ? "0xFFF0000000000000" : "0x7FF0000000000000";
      default:
        return neg ? "0xFF800000" : "0x7F800000";
    }
  }
  if (which == Scalar::kZero) return "0";
  if (which == Scalar::kOne) return "1";
  const int bits = static_cast<int>(dtype_size(t)) * 8;
  if (is_unsigned(t))
    return which == Scalar::kLowest
               ? "0"
               : std::to_string(bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1);
  const int64_t highest = bits == 64 ? INT64_MAX : (int64_t{1} << (bits - 1)) - 1;
  return std::to_string(which == Scalar::kLowest ? -highest - 1 : highest);
}

std::string ints(const std::vector<int64_t>& v) {
  return fmt::format("{}", fmt::join(v, ", "));
}

TensorType with_dtype(TensorType t, DType d) {
  t.dtype = d;
  return t;
}

class Writer {
 public:
  explicit Writer(EmittedModule& m) : module_(m) {}

  // Writes the body of a graph (top level or a while region) whose arguments are already named;
  // returns the names of its outputs.
  std::vector<std::string> body(const Graph& g, std::vector<std::string> names, bool top) {
    names.resize(g.values.size());
    names_.push_back(&names);
    graph_.push_back(&g);
    top_ = top;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& n = g.nodes[i];
      std::vector<std::string> r = node(g, static_cast<int32_t>(i));
      for (size_t k = 0; k < n.outputs.size(); ++k) names[n.outputs[k]] = r.at(k);
    }
    std::vector<std::string> out;
    for (ValueId v : g.outputs) out.push_back(names.at(v));
    names_.pop_back();
    graph_.pop_back();
    return out;
  }

  std::string fresh() { return fmt::format("%v{}", counter_++); }
  void line(const std::string& s) { text_ += std::string(indent_, ' ') + s + "\n"; }
  std::string let(const std::string& rhs) {
    std::string r = fresh();
    line(r + " = " + rhs);
    return r;
  }
  std::string& text() { return text_; }
  std::vector<std::string>& check_results() { return checks_; }

 private:
  const Graph& g() const { return *graph_.back(); }
  const std::string& name(ValueId v) const { return names_.back()->at(v); }
  std::string type(ValueId v) const { return tensor_type(g().type(v)); }

  std::string constant(DType t, Scalar which) {
    if (t == DType::kBool)
      return let(
          fmt::format("stablehlo.constant dense<{}> : tensor<i1>", scalar_literal(t, which)));
    return let(fmt::format("stablehlo.constant dense<{}> : tensor<{}>", scalar_literal(t, which),
                           element_type(t)));
  }
  std::string splat(DType d, Scalar which, const TensorType& shape) {
    std::string c = constant(d, which);
    return broadcast(c, TensorType{d, {}}, with_dtype(shape, d), {});
  }
  std::string broadcast(const std::string& x, const TensorType& from, const TensorType& to,
                        const std::vector<int64_t>& dims) {
    if (from == to) return x;
    return let(fmt::format("stablehlo.broadcast_in_dim {}, dims = [{}] : ({}) -> {}", x, ints(dims),
                           tensor_type(from), tensor_type(to)));
  }
  std::string binary(const char* op, const std::string& a, const std::string& b,
                     const TensorType& t) {
    return let(fmt::format("stablehlo.{} {}, {} : {}", op, a, b, tensor_type(t)));
  }
  std::string compare(const char* dir, const std::string& a, const std::string& b,
                      const TensorType& t) {
    return let(fmt::format("stablehlo.compare {}, {}, {}, {} : ({}, {}) -> {}", dir, a, b,
                           comparison_type(t.dtype), tensor_type(t), tensor_type(t),
                           tensor_type(with_dtype(t, DType::kBool))));
  }
  std::string select(const std::string& p, const std::string& a, const std::string& b,
                     const TensorType& t) {
    return let(fmt::format("stablehlo.select {}, {}, {} : {}, {}", p, a, b,
                           tensor_type(with_dtype(t, DType::kBool)), tensor_type(t)));
  }
  std::string convert(const std::string& x, const TensorType& from, DType to) {
    if (from.dtype == to) return x;
    return let(fmt::format("stablehlo.convert {} : ({}) -> {}", x, tensor_type(from),
                           tensor_type(with_dtype(from, to))));
  }
  std::string reshape(const std::string& x, const TensorType& from, const TensorType& to) {
    if (from == to) return x;
    return let(
        fmt::format("stablehlo.reshape {} : ({}) -> {}", x, tensor_type(from), tensor_type(to)));
  }
  // bitcast between c64[s] and f32[s, 2]: StableHLO's bitcast_convert takes no complex type, so
  // the parts are taken with real/imag and put together with complex.
  std::string complex_pairs(const std::string& x, const TensorType& from, const TensorType& to) {
    if (from.dtype == DType::kC64) {
      TensorType part{DType::kF32, from.shape}, column{DType::kF32, from.shape};
      column.shape.push_back(Dim(1));
      std::string parts[2];
      for (int k = 0; k < 2; ++k) {
        const std::string p = let(fmt::format("stablehlo.{} {} : ({}) -> {}", k ? "imag" : "real", x,
                                              tensor_type(from), tensor_type(part)));
        parts[k] = reshape(p, part, column);
      }
      return let(fmt::format("stablehlo.concatenate {}, {}, dim = {} : ({}, {}) -> {}", parts[0],
                             parts[1], from.rank(), tensor_type(column), tensor_type(column),
                             tensor_type(to)));
    }
    TensorType part{DType::kF32, to.shape}, column{DType::kF32, to.shape};
    column.shape.push_back(Dim(1));
    std::string parts[2];
    std::vector<int64_t> start(from.rank(), 0), limit, strides(from.rank(), 1);
    for (const Dim& d : from.shape) limit.push_back(d.value);
    for (int k = 0; k < 2; ++k) {
      start.back() = k, limit.back() = k + 1;
      const std::string c = let(fmt::format(
          "\"stablehlo.slice\"({}) <{{start_indices = array<i64: {}>, limit_indices = array<i64: "
          "{}>, strides = array<i64: {}>}}> : ({}) -> {}",
          x, ints(start), ints(limit), ints(strides), tensor_type(from), tensor_type(column)));
      parts[k] = reshape(c, column, part);
    }
    return let(fmt::format("stablehlo.complex {}, {} : ({}, {}) -> {}", parts[0], parts[1],
                           tensor_type(part), tensor_type(part), tensor_type(to)));
  }
  // rlx: float max/min propagate NaN; XLA's CPU backend may return the other operand, so the
  // NaN is selected explicitly (XLA fuses the selects into the same loop).
  std::string nan_propagating(const std::string& op, const std::string& a, const std::string& b,
                              const TensorType& t) {
    std::string m = binary(op.c_str(), a, b, t);
    std::string b_nan = compare("NE", b, b, t);
    std::string a_nan = compare("NE", a, a, t);
    return select(a_nan, a, select(b_nan, b, m, t), t);
  }
  std::string reduce(const std::string& x, const TensorType& from, const char* op, Scalar init,
                     const std::vector<int64_t>& axes, const TensorType& to) {
    std::string c = constant(from.dtype, init);
    const std::string et = element_type(from.dtype), name = op;
    if (is_float(from.dtype) && (name == "maximum" || name == "minimum")) {
      std::string r = fresh(), a = fresh(), b = fresh();
      line(
          fmt::format("{} = stablehlo.reduce({} init: {}) across dimensions = [{}] : ({}, "
                      "tensor<{}>) -> {}",
                      r, x, c, ints(axes), tensor_type(from), et, tensor_type(to)));
      line(fmt::format(" reducer({}: tensor<{}>, {}: tensor<{}>) {{", a, et, b, et));
      indent_ += 2;
      std::string v = nan_propagating(name, a, b, TensorType{from.dtype, {}});
      line(fmt::format("stablehlo.return {} : tensor<{}>", v, et));
      indent_ -= 2;
      line("}");
      return r;
    }
    return let(fmt::format(
        "stablehlo.reduce({} init: {}) applies stablehlo.{} across dimensions = [{}] : ({}, "
        "tensor<{}>) -> {}",
        x, c, op, ints(axes), tensor_type(from), element_type(from.dtype), tensor_type(to)));
  }

  std::vector<std::string> node(const Graph& graph, int32_t index);
  std::string integer_division(const Node& n, const std::string& op);
  std::string convert_node(const Node& n);
  std::string constant_node(const Node& n);
  std::string gather_or_scatter(const Node& n);
  std::vector<std::string> while_node(const Node& n);
  void index_check(const Node& n, const std::string& indices, const TensorType& it, int64_t len);

  EmittedModule& module_;
  std::string text_;
  int indent_ = 4;
  int64_t counter_ = 0;
  bool top_ = true;
  std::vector<std::vector<std::string>*> names_;
  std::vector<const Graph*> graph_;
  std::vector<std::string> checks_;
};

std::vector<std::string> Writer::node(const Graph& graph, int32_t index) {
  const Node& n = graph.nodes[index];
  auto in = [&](size_t k) { return name(n.inputs.at(k)); };
  auto in_type = [&](size_t k) { return g().type(n.inputs.at(k)); };
  const TensorType& out = g().type(n.outputs.at(0));
  const std::string ot = tensor_type(out);
  if (auto u = kUnary.find(n.op); u != kUnary.end()) {
    if (n.op == "abs" && is_unsigned(out.dtype)) return {in(0)};
    return {let(fmt::format("stablehlo.{} {} : {}", u->second, in(0), ot))};
  }
  if (n.op == "erf") return {let(fmt::format("chlo.erf {} : {} -> {}", in(0), ot, ot))};
  if (auto b = kBinary.find(n.op); b != kBinary.end()) {
    if ((n.op == "div" || n.op == "rem") && !is_float(out.dtype))
      return {integer_division(n, b->second)};
    if ((n.op == "max" || n.op == "min") && is_float(out.dtype))
      return {nan_propagating(b->second, in(0), in(1), out)};
    return {binary(b->second.c_str(), in(0), in(1), out)};
  }
  if (auto c = kCompare.find(n.op); c != kCompare.end())
    return {compare(c->second.c_str(), in(0), in(1), in_type(0))};
  if (auto r = kReduce.find(n.op); r != kReduce.end()) {
    Scalar init = n.op == "reduce_sum"    ? Scalar::kZero
                  : n.op == "reduce_prod" ? Scalar::kOne
                  : n.op == "reduce_max"  ? Scalar::kLowest
                                          : Scalar::kHighest;
    std::vector<int64_t> axes;
    for (int64_t a : n.attr_ints("axes")) axes.push_back(a < 0 ? a + in_type(0).rank() : a);
    std::sort(axes.begin(), axes.end());
    return {reduce(in(0), in_type(0), r->second.c_str(), init, axes, out)};
  }
  if (n.op == "select") return {select(in(0), in(1), in(2), out)};
  if (n.op == "convert") return {convert_node(n)};
  if (n.op == "constant") return {constant_node(n)};
  if (n.op == "dim_size") {
    int64_t d = n.attr_int("dim");
    if (d < 0) d += in_type(0).rank();
    return {let(
        fmt::format("stablehlo.constant dense<{}> : tensor<i64>", in_type(0).shape.at(d).value))};
  }
  if (n.op == "iota") {
    int64_t d = n.attr_int("dim");
    if (d < 0) d += out.rank();
    return {let(fmt::format("stablehlo.iota dim = {} : {}", d, ot))};
  }
  if (n.op == "broadcast_in_dim")
    return {let(fmt::format("stablehlo.broadcast_in_dim {}, dims = [{}] : ({}) -> {}", in(0),
                            ints(n.attr_ints("dims")), tensor_type(in_type(0)), ot))};
  if (n.op == "reshape") return {reshape(in(0), in_type(0), out)};
  if (n.op == "bitcast") return {complex_pairs(in(0), in_type(0), out)};
  if (n.op == "transpose")
    return {let(fmt::format("stablehlo.transpose {}, dims = [{}] : ({}) -> {}", in(0),
                            ints(n.attr_ints("perm")), tensor_type(in_type(0)), ot))};
  if (n.op == "slice") {
    const TensorType& t = in_type(0);
    std::vector<int64_t> start = n.attr_ints("start"), limit = n.attr_ints("limit");
    std::vector<int64_t> strides =
        n.has_attr("strides") ? n.attr_ints("strides") : std::vector<int64_t>(start.size(), 1);
    for (size_t i = 0; i < limit.size(); ++i)
      if (limit[i] == -1 && start[i] == 0 && strides[i] == 1) limit[i] = t.shape[i].value;
    return {let(fmt::format(
        "\"stablehlo.slice\"({}) <{{start_indices = array<i64: {}>, limit_indices = array<i64: "
        "{}>, strides = array<i64: {}>}}> : ({}) -> {}",
        in(0), ints(start), ints(limit), ints(strides), tensor_type(t), ot))};
  }
  if (n.op == "concat") {
    std::vector<std::string> names, types;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      names.push_back(in(k));
      types.push_back(tensor_type(in_type(k)));
    }
    int64_t axis = n.attr_int("axis");
    if (axis < 0) axis += out.rank();
    return {let(fmt::format("stablehlo.concatenate {}, dim = {} : ({}) -> {}",
                            fmt::join(names, ", "), axis, fmt::join(types, ", "), ot))};
  }
  if (n.op == "pad") {
    std::vector<int64_t> interior(out.rank(), 0);
    return {let(fmt::format(
        "stablehlo.pad {}, {}, low = [{}], high = [{}], interior = [{}] : ({}, {}) -> {}", in(0),
        in(1), ints(n.attr_ints("low")), ints(n.attr_ints("high")), ints(interior),
        tensor_type(in_type(0)), tensor_type(in_type(1)), ot))};
  }
  if (n.op == "dot_general") {
    // Float products at full precision (XLA's default lets a GPU use TF32), and f16/bf16 ones
    // accumulated in f32 and rounded once, as rlx computes them: XLA's GPU backend otherwise
    // rounds partial sums to the narrow type.
    const bool narrow = out.dtype == DType::kF16 || out.dtype == DType::kBF16;
    const bool floating = narrow || out.dtype == DType::kF32 || out.dtype == DType::kF64;
    TensorType sum = out;
    if (narrow) sum.dtype = DType::kF32;
    const std::string product = let(fmt::format(
        "stablehlo.dot_general {}, {}, batching_dims = [{}] x [{}], contracting_dims = [{}] x "
        "[{}]{} : ({}, {}) -> {}",
        in(0), in(1), ints(n.attr_ints("lhs_batch")), ints(n.attr_ints("rhs_batch")),
        ints(n.attr_ints("lhs_contract")), ints(n.attr_ints("rhs_contract")),
        floating ? ", precision = [HIGHEST, HIGHEST]" : "", tensor_type(in_type(0)),
        tensor_type(in_type(1)), tensor_type(sum)));
    return {narrow ? convert(product, sum, out.dtype) : product};
  }
  if (n.op == "gather" || n.op == "scatter") return {gather_or_scatter(n)};
  if (n.op == "while") return while_node(n);
  throw_unsupported(fmt::format("tpu: StableHLO emission has no form for {} ({})",
                                g().describe_node(index), n.op));
}

// rlx: x / 0 and x % 0 are 0, INT_MIN / -1 wraps; XLA leaves division by zero to the platform.
std::string Writer::integer_division(const Node& n, const std::string& op) {
  const TensorType& t = g().type(n.outputs[0]);
  std::string a = name(n.inputs[0]), b = name(n.inputs[1]);
  std::string zero = splat(t.dtype, Scalar::kZero, t), one = splat(t.dtype, Scalar::kOne, t);
  std::string by_zero = compare("EQ", b, zero, t);
  std::string safe = select(by_zero, one, b, t);
  std::string q = binary(op.c_str(), a, safe, t);
  return select(by_zero, zero, q, t);
}

// Float -> integer truncates, saturates at the destination's range and maps NaN to 0, as rlx
// converts (docs/ir.md): XLA's own conversion saturates and maps NaN to 0 at i64 and u64, so a
// narrower destination is reached through i64 clamped at its limits. Anything -> bool is
// x != 0, which convert is.
std::string Writer::convert_node(const Node& n) {
  const TensorType& from = g().type(n.inputs[0]);
  DType to = n.attr_dtype("dtype");
  std::string x = name(n.inputs[0]);
  if (is_float(from.dtype) && is_integer(to) && to != DType::kI64 && to != DType::kU64) {
    const TensorType wide = with_dtype(from, DType::kI64);
    const std::string i = convert(x, from, DType::kI64);
    const std::string lo = convert(splat(to, Scalar::kLowest, from), with_dtype(from, to), DType::kI64);
    const std::string hi = convert(splat(to, Scalar::kHighest, from), with_dtype(from, to), DType::kI64);
    const std::string clamped = binary("minimum", binary("maximum", i, lo, wide), hi, wide);
    return convert(clamped, wide, to);
  }
  return convert(x, from, to);
}

std::string Writer::constant_node(const Node& n) {
  const Tensor& v = n.attr_tensor("value");
  TensorType t{v.dtype(), Shape(v.shape().begin(), v.shape().end())};
  if (v.dtype() != DType::kBool)
    return let(fmt::format("stablehlo.constant {} : {}", dense_literal(v), tensor_type(t)));
  Tensor bytes = Tensor::view(DType::kU8, v.shape(), const_cast<void*>(v.data()), nullptr);
  std::string u8 = let(fmt::format("stablehlo.constant {} : {}", dense_literal(bytes),
                                   tensor_type(with_dtype(t, DType::kU8))));
  return convert(u8, with_dtype(t, DType::kU8), DType::kBool);
}

// gather {axis} (ONNX Gather) and scatter {axis, reduce}: indices in [-len, len) count from the
// end when negative; both are StableHLO's general forms with one collapsed operand dim.
std::string Writer::gather_or_scatter(const Node& n) {
  const TensorType& operand = g().type(n.inputs[0]);
  const TensorType& it = g().type(n.inputs[1]);
  const TensorType& out = g().type(n.outputs[0]);
  int64_t axis = n.attr_int("axis");
  if (axis < 0) axis += operand.rank();
  const int64_t len = operand.shape[axis].value, q = it.rank();
  std::string idx = name(n.inputs[1]);
  if (top_) index_check(n, idx, it, len);
  // Negative indices count from the end.
  std::string zero = splat(it.dtype, Scalar::kZero, it);
  std::string lens =
      let(fmt::format("stablehlo.constant dense<{}> : tensor<{}>", len, element_type(it.dtype)));
  lens = broadcast(lens, TensorType{it.dtype, {}}, it, {});
  std::string negative = compare("LT", idx, zero, it);
  std::string wrapped = select(negative, binary("add", idx, lens, it), idx, it);
  TensorType iv = it;
  iv.shape.push_back(Dim(1));
  std::string indices = reshape(wrapped, it, iv);
  std::vector<int64_t> window;  // result dims that come from the operand (all but axis)
  for (int64_t d = 0; d < operand.rank() - 1; ++d) window.push_back(d < axis ? d : d + q);
  if (n.op == "gather") {
    std::vector<int64_t> sizes;
    for (int64_t d = 0; d < operand.rank(); ++d)
      sizes.push_back(d == axis ? 1 : operand.shape[d].value);
    return let(fmt::format(
        "\"stablehlo.gather\"({}, {}) <{{dimension_numbers = #stablehlo.gather<offset_dims = [{}], "
        "collapsed_slice_dims = [{}], start_index_map = [{}], index_vector_dim = {}>, "
        "indices_are_sorted = false, slice_sizes = array<i64: {}>}}> : ({}, {}) -> {}",
        name(n.inputs[0]), indices, ints(window), axis, axis, q, ints(sizes), tensor_type(operand),
        tensor_type(iv), tensor_type(out)));
  }
  const std::string et = element_type(out.dtype);
  std::string a = fresh(), b = fresh();
  std::string r = fresh();
  line(fmt::format(
      "{} = \"stablehlo.scatter\"({}, {}, {}) <{{indices_are_sorted = false, "
      "scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [{}], "
      "inserted_window_dims = [{}], scatter_dims_to_operand_dims = [{}], index_vector_dim = {}>, "
      "unique_indices = false}}> ({{",
      r, name(n.inputs[0]), indices, name(n.inputs[2]), ints(window), axis, axis, q));
  line(fmt::format("^bb0({}: tensor<{}>, {}: tensor<{}>):", a, et, b, et));
  if (n.attr_string("reduce", "none") == "add") {
    std::string s = fresh();
    line(fmt::format("  {} = stablehlo.add {}, {} : tensor<{}>", s, a, b, et));
    line(fmt::format("  stablehlo.return {} : tensor<{}>", s, et));
  } else {
    line(fmt::format("  stablehlo.return {} : tensor<{}>", b, et));
  }
  line(fmt::format("}}) : ({}, {}, {}) -> {}", tensor_type(operand), tensor_type(iv),
                   tensor_type(g().type(n.inputs[2])), tensor_type(out)));
  return r;
}

// Two i64 scalars: the position of the first index outside [-len, len) (the count when none) and
// that index.
void Writer::index_check(const Node& n, const std::string& indices, const TensorType& it,
                         int64_t len) {
  int64_t count = 1;
  for (const Dim& d : it.shape) count *= d.value;
  TensorType flat{DType::kI64, {Dim(count)}}, scalar{DType::kI64, {}};
  std::string v = reshape(convert(indices, it, DType::kI64), with_dtype(it, DType::kI64), flat);
  std::string hi = let(fmt::format("stablehlo.constant dense<{}> : tensor<i64>", len));
  std::string lo = let(fmt::format("stablehlo.constant dense<{}> : tensor<i64>", -len));
  std::string too_low = compare("LT", v, broadcast(lo, scalar, flat, {}), flat);
  std::string too_high = compare("GE", v, broadcast(hi, scalar, flat, {}), flat);
  std::string bad = binary("or", too_low, too_high, with_dtype(flat, DType::kBool));
  std::string pos = let(fmt::format("stablehlo.iota dim = 0 : {}", tensor_type(flat)));
  std::string none = let(fmt::format("stablehlo.constant dense<{}> : tensor<i64>", count));
  std::string where = select(bad, pos, broadcast(none, scalar, flat, {}), flat);
  std::string first = reduce(where, flat, "minimum", Scalar::kHighest, {0}, scalar);
  std::string at = compare("EQ", pos, broadcast(first, scalar, flat, {}), flat);
  std::string picked = select(at, v, splat(DType::kI64, Scalar::kZero, flat), flat);
  std::string value = reduce(picked, flat, "add", Scalar::kZero, {0}, scalar);
  checks_.push_back(first);
  checks_.push_back(value);
  module_.checks.push_back({n.op, count, len});
}

std::vector<std::string> Writer::while_node(const Node& n) {
  const size_t k = n.inputs.size();
  std::string r = fresh();
  std::vector<std::string> args, inits, types;
  for (size_t i = 0; i < k; ++i) {
    args.push_back(fresh());
    inits.push_back(fmt::format("{} = {}", args.back(), name(n.inputs[i])));
    types.push_back(tensor_type(g().type(n.inputs[i])));
  }
  line(fmt::format("{}{} = stablehlo.while({}) : {}", r, k > 1 ? fmt::format(":{}", k) : "",
                   fmt::join(inits, ", "), fmt::join(types, ", ")));
  const bool top = top_;
  auto region = [&](const Graph& body, const char* opener) {
    line(opener);
    indent_ += 2;
    std::vector<std::string> names(body.values.size());
    for (size_t i = 0; i < k; ++i) names[body.inputs[i]] = args[i];
    std::vector<std::string> results = this->body(body, names, false);
    std::vector<std::string> rtypes;
    for (ValueId v : body.outputs) rtypes.push_back(tensor_type(body.type(v)));
    line(
        fmt::format("stablehlo.return {} : {}", fmt::join(results, ", "), fmt::join(rtypes, ", ")));
    indent_ -= 2;
  };
  region(*n.regions.at(0), "cond {");
  region(*n.regions.at(1), "} do {");
  line("}");
  top_ = top;
  std::vector<std::string> out;
  for (size_t i = 0; i < k; ++i) out.push_back(k > 1 ? fmt::format("{}#{}", r, i) : r);
  return out;
}

}  // namespace

EmittedModule emit_stablehlo(const Graph& g) {
  EmittedModule m;
  m.params = g.params;
  m.num_outputs = g.outputs.size();
  Writer w(m);
  std::vector<std::string> names(g.values.size()), args;
  for (ValueId v : g.inputs) {
    names[v] = w.fresh();
    args.push_back(fmt::format("{}: {}", names[v], tensor_type(g.type(v))));
  }
  for (ValueId v : g.params) {
    names[v] = w.fresh();
    args.push_back(fmt::format("{}: {}", names[v], tensor_type(g.type(v))));
  }
  std::vector<std::string> outs = w.body(g, names, true);
  std::vector<std::string> types;
  for (ValueId v : g.outputs) types.push_back(tensor_type(g.type(v)));
  for (const std::string& c : w.check_results()) {
    outs.push_back(c);
    types.push_back("tensor<i64>");
  }
  w.line(fmt::format("return {} : {}", fmt::join(outs, ", "), fmt::join(types, ", ")));
  m.text = fmt::format(
      "module @rlx attributes {{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}} {{\n"
      "  func.func public @main({}) -> ({}) {{\n{}  }}\n}}\n",
      fmt::join(args, ", "), fmt::join(types, ", "), w.text());
  return m;
}

Verdict can_emit(const NodeSignature& s) {
  const bool known = kUnary.count(s.op) || kBinary.count(s.op) || kCompare.count(s.op) ||
                     kReduce.count(s.op) ||
                     std::find(kOther.begin(), kOther.end(), s.op) != kOther.end();
  if (!known)
    return Verdict::no(
        fmt::format("the tpu target emits MIR primitives only; {} is not one", s.op));
  // c64 is held (inputs, outputs, weights) and reached only through bitcast: split-complex
  // gives every other c64 node f32 parts, which XLA fuses like any f32 graph.
  if (s.op == "bitcast") {
    const bool pairs = s.inputs[0].dtype == DType::kC64 || s.outputs[0].dtype == DType::kC64;
    return pairs ? Verdict::yes()
                 : Verdict::no("the tpu target bitcasts c64 to f32 pairs only (it has 64-bit integers)");
  }
  auto complex = [](const TensorType& t) { return is_complex(t.dtype); };
  if (std::any_of(s.inputs.begin(), s.inputs.end(), complex) ||
      std::any_of(s.outputs.begin(), s.outputs.end(), complex))
    return Verdict::no(
        fmt::format("rlx's StableHLO emitter has no complex type, so tpu has no c64 kernel for {}: "
                    "split complex values "
                    "into real and imaginary parts before compiling",
                    s.op));
  return Verdict::yes();
}

}  // namespace rlx::tpu
