// Each MIR primitive as MIL ops, with rlx's semantics where MIL's differ: integer division
// truncates and gives 0 for a zero divisor (MIL's floor_div floors), a float remainder has the
// dividend's sign (MIL's mod floors), indices may count from the end, f16 sums and products
// accumulate in fp32 as rlx's do. What MIL cannot say with rlx's meaning (bitwise integer ops,
// float -> integer casts, loops) is refused by name before this runs (mil_legality.cpp).
#include "mil_lowering.h"
#include "mil_native.h"
#include "mil_ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "rlx/core/error.h"
#include "rlx/core/half.h"
#include "rlx/sdk/legality.h"

namespace rlx::ane {

namespace {

mil::DataType mil_dtype(DType d) {
  switch (d) {
    case DType::kF32:
      return mil::FLOAT32;
    case DType::kF16:
      return mil::FLOAT16;
    case DType::kI32:
    case DType::kI64:  // as word pairs
      return mil::INT32;
    case DType::kBool:
      return mil::BOOL;
    default:
      throw_internal_error(fmt::format("ane: no MIL type for {}", dtype_name(d)));
  }
}

std::vector<int64_t> static_shape(const TensorType& t) {
  std::vector<int64_t> s;
  for (const Dim& d : t.shape) {
    if (!d.is_static()) throw_internal_error("ane: a symbolic dim reached the MIL lowering");
    s.push_back(d.value);
  }
  return s;
}

// How the program holds a value of type `t`.
MilType held(const TensorType& t) {
  MilType m{mil_dtype(t.dtype), static_shape(t)};
  if (t.dtype == DType::kI64) m.shape.push_back(2);
  return m;
}

std::string identifier(const std::string& name) {
  std::string s;
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "v_" + s;
  return s;
}

int64_t norm_axis(int64_t a, int64_t rank) {
  return a < 0 ? a + rank : a;
}

}  // namespace

namespace {

class Lowering {
 public:
  Lowering(const Graph& g, MilProgram& out, mil::Block* block)
      : g_(g), out_(out), b_(block, &out.blobs, kWeightsFile), names_(g.values.size()) {}

  void run(mil::Function* fn, mil::Block* block) {
    for (ValueId v : g_.inputs) input(fn, v);
    for (ValueId v : g_.params) param(v);
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      node_ = static_cast<int32_t>(i);
      try {
        node(n);
      } catch (const Error&) {
        throw;
      } catch (const std::exception& e) {
        throw_unsupported(fmt::format("ane: cannot emit {} ({}): {}",
                                      g_.describe_node(static_cast<int32_t>(i)), n.op, e.what()));
      }
      for (ValueId v : n.outputs)
        if (!names_[v] && !deferred_.count(v) && !int8_.count(v))
          throw_unsupported(fmt::format("ane: {} ({}) made no value",
                                        g_.describe_node(static_cast<int32_t>(i)), n.op));
    }
    std::set<std::string> used;
    for (ValueId v : g_.outputs) output(block, v, used);
    for (IndexCheck& c : out_.checks) {
      block->add_outputs(c.position);
      block->add_outputs(c.value);
    }
  }

 private:
  const TensorType& type(ValueId v) const { return g_.type(v); }
  const std::string& in(const Node& n, size_t k) const {
    const ValueId v = n.inputs.at(k);
    if (!names_.at(v)) {
      if (deferred_.count(v))
        throw_unsupported(
            fmt::format("ane: the f64 constant %{} reaches {}: CoreML's ML Program has no f64",
                        g_.values[v].name, n.op));
      throw_internal_error("ane: value used before it was made: " + g_.values[v].name);
    }
    return *names_[v];
  }
  MilType out_type(const Node& n, size_t k = 0) const { return held(type(n.outputs.at(k))); }
  void set(const Node& n, std::string name, size_t k = 0) {
    names_[n.outputs.at(k)] = std::move(name);
  }

  void input(mil::Function* fn, ValueId v) {
    const TensorType& t = type(v);
    if (is_held_int(t.dtype))
      throw_unsupported(fmt::format(
          "ane: the input %{} is {}: a CoreML input holds fp32, fp16 or int32, and QMatMul's "
          "int8 weights go into the package as constexpr_affine_dequantize, which takes "
          "constants only",
          g_.values[v].name, dtype_name(t.dtype)));
    IoValue io{identifier(g_.values[v].name), g_.values[v].name, t.dtype, held(t), ""};
    if (t.dtype == DType::kI64) io.layout = "i64 as int32 word pairs [..., 2], low word first";
    if (t.dtype == DType::kBool) {
      io.mil.dtype = mil::INT32;
      io.layout = "bool as int32 0/1";
    }
    // CoreML's multi-arrays have rank >= 1: a scalar crosses as shape [1].
    const bool scalar = io.mil.shape.empty();
    if (scalar) {
      io.mil.shape = {1};
      io.layout += io.layout.empty() ? "a scalar as shape [1]" : "; a scalar as shape [1]";
    }
    b_.declare(io.name, io.mil);
    mil::NamedValueType* nv = fn->add_inputs();
    nv->set_name(io.name);
    *nv->mutable_type() = value_type(io.mil);
    std::string x = scalar ? reshape(io.name, {}) : io.name;
    names_[v] = t.dtype == DType::kBool ? cast(x, mil::BOOL) : x;
    out_.inputs.push_back(io);
  }

  void param(ValueId v) {
    const std::string& name = g_.values[v].name;
    auto it = g_.weights.find(name);
    if (it == g_.weights.end())
      throw_user_error(
          fmt::format("ane: the weight %{} has no value to write into the package", name));
    if (is_held_int(it->second.dtype())) {
      int8_[v] = it->second;
      return;
    }
    names_[v] = constant_of(it->second);
  }

  // i8 and u8 weights and constants (MIL computes on neither): QMatMul reads them, as
  // constexpr_affine_dequantize (its weight) or a value known here (its zero point).
  static bool is_held_int(DType d) { return d == DType::kI8 || d == DType::kU8; }


  // A tensor as the program holds it (i64 as word pairs).
  std::string constant_of(const Tensor& t) {
    if (t.dtype() != DType::kI64) return b_.constant(t);
    std::vector<int64_t> shape = t.shape();
    shape.push_back(2);
    Tensor words(DType::kI32, shape);
    std::memcpy(words.data(), t.data(), t.nbytes());  // little-endian: low word first
    return b_.constant(words);
  }

  void output(mil::Block* block, ValueId v, std::set<std::string>& used) {
    const TensorType& t = type(v);
    std::string name = identifier(g_.values[v].name);
    while (used.count(name) || std::any_of(out_.inputs.begin(), out_.inputs.end(),
                                           [&](const IoValue& i) { return i.name == name; }))
      name += "_out";
    used.insert(name);
    IoValue io{name, g_.values[v].name, t.dtype, held(t), ""};
    if (t.dtype == DType::kI64) io.layout = "i64 as int32 word pairs [..., 2], low word first";
    std::string from = *names_.at(v);
    if (t.dtype == DType::kBool) {
      io.mil.dtype = mil::INT32;
      io.layout = "bool as int32 0/1";
      from = cast(from, mil::INT32);
    }
    if (io.mil.shape.empty()) {
      io.mil.shape = {1};
      io.layout += io.layout.empty() ? "a scalar as shape [1]" : "; a scalar as shape [1]";
      b_.op("reshape", {{"x", from}, {"shape", b_.ints({1})}}, io.mil, name);
    } else if (!renamed_.count(from) && b_.rename(from, name)) {
      names_[v] = name;  // an op's value takes the output's name: no identity op
    } else {
      // An input, a const, or a value that is another output already.
      b_.op("identity", {{"x", from}}, io.mil, name);
    }
    renamed_.insert(name);
    block->add_outputs(name);
    out_.outputs.push_back(io);
  }

  void node(const Node& n);
  void convert(const Node& n);
  void remainder(const Node& n);
  void integer_division(const Node& n, bool remainder);
  void broadcast_in_dim(const Node& n);
  void slice(const Node& n);
  void pad(const Node& n);
  void gather_or_scatter(const Node& n);
  void dot_general(const Node& n);
  void reduce(const Node& n);
  void native(const Node& n);
  std::string wrapped_indices(const Node& n, int64_t len);
  std::string reshape(const std::string& x, const std::vector<int64_t>& shape);
  std::string cast(const std::string& x, mil::DataType to);

  const Graph& g_;
  MilProgram& out_;
  MilBlock b_;
  std::vector<std::optional<std::string>> names_;
  std::map<ValueId, Tensor> deferred_;  // f64 constants, folded into the convert reading them
  std::map<ValueId, Tensor> int8_;      // i8 and u8 weights and constants (is_held_int)
  int32_t node_ = -1;                   // the node being lowered
  std::set<std::string> renamed_;       // the program outputs' names so far
};

std::string Lowering::reshape(const std::string& x, const std::vector<int64_t>& shape) {
  MilType t = b_.type_of(x);
  if (t.shape == shape) return x;
  t.shape = shape;
  return b_.op("reshape", {{"x", x}, {"shape", b_.ints(shape)}}, t);
}

std::string Lowering::cast(const std::string& x, mil::DataType to) {
  MilType t = b_.type_of(x);
  if (t.dtype == to) return x;
  t.dtype = to;
  return b_.op("cast", {{"x", x}, {"dtype", b_.string(cast_name(to))}}, t);
}

void Lowering::node(const Node& n) {
  const std::string& op = n.op;
  if (is_native_op(op)) return native(n);
  if (auto u = kUnary.find(op); u != kUnary.end()) {
    if (op == "abs" || op == "sign" || op == "floor" || op == "ceil" || op == "round")
      if (!is_float(type(n.outputs[0]).dtype) && op != "abs" && op != "sign")
        return set(n, in(n, 0));  // integers are whole already
    return set(n, b_.op(u->second, {{"x", in(n, 0)}}, out_type(n)));
  }
  if (auto bin = kBinary.find(op); bin != kBinary.end())
    return set(n, b_.op(bin->second, {{"x", in(n, 0)}, {"y", in(n, 1)}}, out_type(n)));
  if (op == "log" || op == "rsqrt")  // MIL adds an epsilon first; rlx's have none
    return set(n, b_.op(op, {{"x", in(n, 0)}, {"epsilon", b_.f32(0.0)}}, out_type(n)));
  if (op == "neg") {  // x * -1 keeps neg(0) = -0 and wraps INT_MIN as rlx does
    const MilType t = out_type(n);
    const std::string m1 = t.dtype == mil::INT32 ? b_.i32(-1) : cast(b_.f32(-1.0), t.dtype);
    return set(n, b_.op("mul", {{"x", in(n, 0)}, {"y", m1}}, t));
  }
  if ((op == "div" || op == "rem") && !is_float(type(n.outputs[0]).dtype))
    return integer_division(n, op == "rem");
  if (op == "div")
    return set(n, b_.op("real_div", {{"x", in(n, 0)}, {"y", in(n, 1)}}, out_type(n)));
  if (op == "rem") return remainder(n);
  if (op == "and" || op == "or" || op == "xor")
    return set(n, b_.op("logical_" + op, {{"x", in(n, 0)}, {"y", in(n, 1)}}, out_type(n)));
  if (op == "not") return set(n, b_.op("logical_not", {{"x", in(n, 0)}}, out_type(n)));
  if (op == "select")
    return set(
        n, b_.op("select", {{"cond", in(n, 0)}, {"a", in(n, 1)}, {"b", in(n, 2)}}, out_type(n)));
  if (op == "convert") return convert(n);
  if (op == "constant") {
    const Tensor& v = n.attr_tensor("value");
    if (v.dtype() == DType::kF64) {
      deferred_[n.outputs[0]] = v;
      return;
    }
    if (is_held_int(v.dtype())) {
      int8_[n.outputs[0]] = v;
      return;
    }
    return set(n, constant_of(v));
  }
  if (op == "dim_size") {
    const TensorType& t = type(n.inputs[0]);
    const int64_t size = t.shape.at(norm_axis(n.attr_int("dim"), t.rank())).value;
    const DType d = type(n.outputs[0]).dtype;
    Tensor s(d, {});
    if (d == DType::kI64)
      *s.as<int64_t>() = size;
    else
      *s.as<int32_t>() = static_cast<int32_t>(size);
    return set(n, constant_of(s));
  }
  if (op == "iota") {
    const TensorType& t = type(n.outputs[0]);
    const std::vector<int64_t> shape = static_shape(t);
    const int64_t d = norm_axis(n.attr_int("dim"), t.rank());
    Tensor r(t.dtype, shape);
    int64_t inner = 1;
    for (size_t k = static_cast<size_t>(d) + 1; k < shape.size(); ++k) inner *= shape[k];
    for (int64_t i = 0; i < r.numel(); ++i) {
      const int64_t at = (i / inner) % shape[d];
      switch (t.dtype) {
        case DType::kF32:
          r.as<float>()[i] = static_cast<float>(at);
          break;
        case DType::kF16:
          r.as<uint16_t>()[i] = f32_to_f16(static_cast<float>(at));
          break;
        case DType::kI32:
          r.as<int32_t>()[i] = static_cast<int32_t>(at);
          break;
        case DType::kI64:
          r.as<int64_t>()[i] = at;
          break;
        default:
          throw_unsupported(fmt::format("ane: no iota of {}", dtype_name(t.dtype)));
      }
    }
    return set(n, constant_of(r));
  }
  if (op == "reshape") return set(n, reshape(in(n, 0), out_type(n).shape));
  if (op == "bitcast") return set(n, reshape(in(n, 0), out_type(n).shape));  // i64 <-> its words
  if (op == "broadcast_in_dim") return broadcast_in_dim(n);
  if (op == "transpose") {
    return set(n, b_.op("transpose", {{"x", in(n, 0)}, {"perm", b_.ints(n.attr_ints("perm"))}},
                        out_type(n)));
  }
  if (op == "slice") return slice(n);
  if (op == "concat") {
    std::vector<std::string> parts;
    for (size_t k = 0; k < n.inputs.size(); ++k) parts.push_back(in(n, k));
    const int64_t axis = norm_axis(n.attr_int("axis"), type(n.outputs[0]).rank());
    return set(n,
               b_.op("concat",
                     {{"values", parts}, {"axis", b_.i32(axis)}, {"interleave", b_.boolean(false)}},
                     out_type(n)));
  }
  if (op == "pad") return pad(n);
  if (op == "gather" || op == "scatter") return gather_or_scatter(n);
  if (op == "dot_general") return dot_general(n);
  if (op.rfind("reduce_", 0) == 0) return reduce(n);
  throw_unsupported(fmt::format("ane: no MIL form for {}", op));
}

void Lowering::convert(const Node& n) {
  const DType from = type(n.inputs[0]).dtype, to = type(n.outputs[0]).dtype;
  if (auto d = deferred_.find(n.inputs[0]); d != deferred_.end()) {
    // An f64 constant read only as `to`: its values rounded once, as convert would.
    const Tensor& src = d->second;
    Tensor r(to, src.shape());
    for (int64_t i = 0; i < src.numel(); ++i) {
      const double x = src.as<double>()[i];
      switch (to) {
        case DType::kF32:
          r.as<float>()[i] = static_cast<float>(x);
          break;
        case DType::kF16:
          r.as<uint16_t>()[i] = f32_to_f16(static_cast<float>(x));
          break;
        default:
          throw_unsupported(fmt::format("ane: an f64 constant converted to {}", dtype_name(to)));
      }
    }
    return set(n, constant_of(r));
  }
  if (from == to) return set(n, in(n, 0));
  if (to == DType::kBool) {  // x != 0, NaN included
    const std::string zero = cast(b_.f32(0.0), b_.type_of(in(n, 0)).dtype);
    return set(n, b_.op("not_equal", {{"x", in(n, 0)}, {"y", zero}}, out_type(n)));
  }
  return set(n, cast(in(n, 0), mil_dtype(to)));
}

// rlx's float remainder has the dividend's sign (C fmod); MIL's mod floors like Python's.
void Lowering::remainder(const Node& n) {
  const MilType t = out_type(n);
  MilType flags = t;
  flags.dtype = mil::BOOL;
  const std::string& a = in(n, 0);
  const std::string& d = in(n, 1);
  const std::string r = b_.op("mod", {{"x", a}, {"y", d}}, t);
  const std::string zero = cast(b_.f32(0.0), t.dtype);
  const std::string nonzero = b_.op("not_equal", {{"x", r}, {"y", zero}}, flags);
  const std::string r_neg = b_.op("less", {{"x", r}, {"y", zero}}, flags);
  const std::string a_neg = b_.op("less", {{"x", a}, {"y", zero}}, flags);
  const std::string differ = b_.op("logical_xor", {{"x", r_neg}, {"y", a_neg}}, flags);
  const std::string fix = b_.op("logical_and", {{"x", nonzero}, {"y", differ}}, flags);
  const std::string shifted = b_.op("sub", {{"x", r}, {"y", d}}, t);
  set(n, b_.op("select", {{"cond", fix}, {"a", shifted}, {"b", r}}, t));
}

// dims are increasing (the verifier's rule): a reshape puts ones where the result has new dims,
// then tile repeats (an i64's word axis is the last of both).
// rlx's integer division truncates and gives 0 for a zero divisor; MIL's floor_div floors.
void Lowering::integer_division(const Node& n, bool rem) {
  const MilType t = out_type(n);
  MilType flags = t;
  flags.dtype = mil::BOOL;
  const std::string &a = in(n, 0), &d = in(n, 1);
  const std::string zero = b_.i32(0), one = b_.i32(1);
  const std::string by_zero = b_.op("equal", {{"x", d}, {"y", zero}}, flags);
  const std::string safe = b_.op("select", {{"cond", by_zero}, {"a", one}, {"b", d}}, t);
  std::string q = b_.op("floor_div", {{"x", a}, {"y", safe}}, t);
  auto remainder_of = [&](const std::string& quotient) {
    return b_.op("sub", {{"x", a}, {"y", b_.op("mul", {{"x", quotient}, {"y", safe}}, t)}}, t);
  };
  const std::string r = remainder_of(q);
  const std::string inexact = b_.op("not_equal", {{"x", r}, {"y", zero}}, flags);
  const std::string signs = b_.op("logical_xor",
                                  {{"x", b_.op("less", {{"x", a}, {"y", zero}}, flags)},
                                   {"y", b_.op("less", {{"x", safe}, {"y", zero}}, flags)}},
                                  flags);
  const std::string adjust = b_.op("logical_and", {{"x", inexact}, {"y", signs}}, flags);
  q = b_.op("select", {{"cond", adjust}, {"a", b_.op("add", {{"x", q}, {"y", one}}, t)}, {"b", q}},
            t);
  const std::string result = rem ? remainder_of(q) : q;
  set(n, b_.op("select", {{"cond", by_zero}, {"a", zero}, {"b", result}}, t));
}

void Lowering::broadcast_in_dim(const Node& n) {
  const MilType out = out_type(n);
  const IntList& dims = n.attr_ints("dims");
  const MilType xt = b_.type_of(in(n, 0));
  std::vector<int64_t> shape(out.shape.size(), 1);
  for (size_t i = 0; i < dims.size(); ++i) shape[dims[i]] = xt.shape[i];
  if (type(n.outputs[0]).dtype == DType::kI64) shape.back() = 2;
  const std::string x = reshape(in(n, 0), shape);
  std::vector<int64_t> reps(shape.size());
  bool tiles = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    reps[i] = shape[i] == out.shape[i] ? 1 : out.shape[i];
    tiles = tiles || reps[i] != 1;
  }
  set(n, tiles ? b_.op("tile", {{"x", x}, {"reps", b_.ints(reps)}}, out) : x);
}

void Lowering::slice(const Node& n) {
  const TensorType& t = type(n.inputs[0]);
  IntList start = n.attr_ints("start"), limit = n.attr_ints("limit");
  IntList strides = n.has_attr("strides") ? n.attr_ints("strides") : IntList(start.size(), 1);
  for (size_t i = 0; i < limit.size(); ++i)
    if (limit[i] == -1 && start[i] == 0 && strides[i] == 1) limit[i] = t.shape[i].value;
  if (t.dtype == DType::kI64) {
    start.push_back(0);
    limit.push_back(2);
    strides.push_back(1);
  }
  set(n, b_.op("slice_by_index",
               {{"x", in(n, 0)},
                {"begin", b_.ints(start)},
                {"end", b_.ints(limit)},
                {"stride", b_.ints(strides)}},
               out_type(n)));
}

// MIL's pad takes its value as a const; rlx's padding is never negative (the verifier's rule).
void Lowering::pad(const Node& n) {
  const ValueId pv = n.inputs.at(1);
  const int32_t producer = g_.values[pv].producer;
  if (producer < 0 || g_.nodes[producer].op != "constant")
    throw_unsupported("MIL's pad takes a constant padding value; this one is computed");
  if (type(n.inputs[0]).dtype == DType::kI64) throw_unsupported("ane pads no i64 values");
  const double value = g_.nodes[producer].attr_tensor("value").scalar_at(0);
  const IntList &low = n.attr_ints("low"), &high = n.attr_ints("high");
  std::vector<int64_t> widths;
  for (size_t i = 0; i < low.size(); ++i) {
    widths.push_back(low[i]);
    widths.push_back(high[i]);
  }
  const MilType out = out_type(n);
  set(n, b_.op("pad",
               {{"x", in(n, 0)},
                {"pad", b_.ints(widths)},
                {"mode", b_.string("constant")},
                {"constant_val", cast(b_.f32(value), out.dtype)}},
               out));
}

// Indices in [-len, len) counting from the end when negative, clamped so the program stays in
// bounds; the first bad one (position and value) becomes two outputs of the program.
std::string Lowering::wrapped_indices(const Node& n, int64_t len) {
  const std::string& idx = in(n, 1);
  MilType it = b_.type_of(idx);
  int64_t count = 1;
  for (int64_t d : it.shape) count *= d;
  MilType flags = it;
  flags.dtype = mil::BOOL;
  const std::string below = b_.op("less", {{"x", idx}, {"y", b_.i32(-len)}}, flags);
  const std::string above = b_.op("greater_equal", {{"x", idx}, {"y", b_.i32(len)}}, flags);
  const std::string bad = b_.op("logical_or", {{"x", below}, {"y", above}}, flags);
  Tensor pos(DType::kI32, it.shape);
  for (int64_t i = 0; i < count; ++i) pos.as<int32_t>()[i] = static_cast<int32_t>(i);
  const std::string positions = b_.constant(pos);
  const std::string where =
      b_.op("select", {{"cond", bad}, {"a", positions}, {"b", b_.i32(count)}}, it);
  std::vector<int64_t> all(it.shape.size());
  std::iota(all.begin(), all.end(), 0);
  const MilType scalar{mil::INT32, {}}, one{mil::INT32, {1}};
  IndexCheck check{n.op, g_.describe_node(node_), count, len, "", ""};
  const std::string first =
      all.empty()
          ? where
          : b_.op("reduce_min",
                  {{"x", where}, {"axes", b_.ints(all)}, {"keep_dims", b_.boolean(false)}}, scalar);
  const std::string first_index = first;
  MilType flags2 = it;
  flags2.dtype = mil::BOOL;
  const std::string at = b_.op("equal", {{"x", positions}, {"y", first_index}}, flags2);
  const std::string picked = b_.op("select", {{"cond", at}, {"a", idx}, {"b", b_.i32(0)}}, it);
  const std::string value =
      all.empty() ? picked
                  : b_.op("reduce_sum",
                          {{"x", picked}, {"axes", b_.ints(all)}, {"keep_dims", b_.boolean(false)}},
                          scalar);
  // Program outputs have rank >= 1 (CoreML's multi-arrays).
  check.position = b_.op("reshape", {{"x", first_index}, {"shape", b_.ints({1})}}, one,
                         b_.fresh("rlx_index_position"));
  check.value =
      b_.op("reshape", {{"x", value}, {"shape", b_.ints({1})}}, one, b_.fresh("rlx_index_value"));
  out_.checks.push_back(check);
  const std::string neg = b_.op("less", {{"x", idx}, {"y", b_.i32(0)}}, flags);
  const std::string plus = b_.op("add", {{"x", idx}, {"y", b_.i32(len)}}, it);
  const std::string wrapped = b_.op("select", {{"cond", neg}, {"a", plus}, {"b", idx}}, it);
  const std::string low = b_.op("maximum", {{"x", wrapped}, {"y", b_.i32(0)}}, it);
  return b_.op("minimum", {{"x", low}, {"y", b_.i32(std::max<int64_t>(len - 1, 0))}}, it);
}

// gather {axis} is numpy's take; scatter writes updates shaped like that gather's result: the
// indices flattened to one axis, each update given its index (MIL's scatter_along_axis).
void Lowering::gather_or_scatter(const Node& n) {
  const TensorType& operand = type(n.inputs[0]);
  const int64_t axis = norm_axis(n.attr_int("axis"), operand.rank());
  const std::string idx = wrapped_indices(n, operand.shape[axis].value);
  if (n.op == "gather") {
    // MIL gathers numbers: bool values travel as int32.
    const bool flags = operand.dtype == DType::kBool;
    MilType t = out_type(n);
    if (flags) t.dtype = mil::INT32;
    const std::string x = flags ? cast(in(n, 0), mil::INT32) : in(n, 0);
    const std::string g = b_.op("gather",
                                {{"x", x},
                                 {"indices", idx},
                                 {"axis", b_.i32(axis)},
                                 {"batch_dims", b_.i32(0)},
                                 {"validate_indices", b_.boolean(false)}},
                                t);
    return set(n, flags ? cast(g, mil::BOOL) : g);
  }
  const MilType it = b_.type_of(idx);
  int64_t count = 1;
  for (int64_t d : it.shape) count *= d;
  const std::string flat = reshape(idx, {count});
  const MilType ut = b_.type_of(in(n, 2));
  std::vector<int64_t> ushape(ut.shape.begin(), ut.shape.begin() + axis);
  ushape.push_back(count);
  ushape.insert(ushape.end(), ut.shape.begin() + axis + static_cast<int64_t>(it.shape.size()),
                ut.shape.end());
  const std::string updates = reshape(in(n, 2), ushape);
  // scatter_along_axis takes one index per update: the flat indices along the axis, repeated
  // over the other dims.
  std::vector<int64_t> along(ushape.size(), 1), reps = ushape;
  along[axis] = count;
  reps[axis] = 1;
  std::string index = reshape(flat, along);
  if (std::any_of(reps.begin(), reps.end(), [](int64_t r) { return r != 1; }))
    index = b_.op("tile", {{"x", index}, {"reps", b_.ints(reps)}}, {mil::INT32, ushape});
  const std::string mode = n.attr_string("reduce", "none") == "add" ? "add" : "update";
  set(n, b_.op("scatter_along_axis", {{"data", in(n, 0)}, {"indices", index}, {"updates", updates},
                                      {"axis", b_.i32(axis)}, {"mode", b_.string(mode)},
                                      {"validate_indices", b_.boolean(false)}},
               out_type(n)));
}

// [batch, free, contract] x [batch, contract, free] as one matmul; f16 operands multiply in
// fp32 and round once, as rlx's do.
void Lowering::dot_general(const Node& n) {
  const MilType out = out_type(n);
  const IntList &lb = n.attr_ints("lhs_batch"), &rb = n.attr_ints("rhs_batch");
  const IntList &lc = n.attr_ints("lhs_contract"), &rc = n.attr_ints("rhs_contract");
  auto arrange = [&](std::string x, const IntList& batch, const IntList& contract,
                     bool contract_last) {
    const MilType t = b_.type_of(x);
    const int64_t rank = static_cast<int64_t>(t.shape.size());
    std::vector<int64_t> free;
    for (int64_t d = 0; d < rank; ++d)
      if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
          std::find(contract.begin(), contract.end(), d) == contract.end())
        free.push_back(d);
    std::vector<int64_t> perm(batch.begin(), batch.end());
    int64_t b = 1, k = 1, f = 1;
    for (int64_t d : batch) b *= t.shape[d];
    for (int64_t d : contract) k *= t.shape[d];
    for (int64_t d : free) f *= t.shape[d];
    const IntList& first = contract_last ? IntList(free.begin(), free.end()) : contract;
    const IntList& second = contract_last ? contract : IntList(free.begin(), free.end());
    perm.insert(perm.end(), first.begin(), first.end());
    perm.insert(perm.end(), second.begin(), second.end());
    bool identity = true;
    for (int64_t i = 0; i < rank; ++i) identity = identity && perm[i] == i;
    if (!identity) {
      MilType pt = t;
      for (int64_t i = 0; i < rank; ++i) pt.shape[i] = t.shape[perm[i]];
      x = b_.op("transpose", {{"x", x}, {"perm", b_.ints(perm)}}, pt);
    }
    x = cast(x, mil::FLOAT32);
    return reshape(x,
                   contract_last ? std::vector<int64_t>{b, f, k} : std::vector<int64_t>{b, k, f});
  };
  const std::string a = arrange(in(n, 0), lb, lc, true);
  const std::string c = arrange(in(n, 1), rb, rc, false);
  const MilType at = b_.type_of(a), ct = b_.type_of(c);
  const std::string product = b_.op(
      "matmul",
      {{"x", a}, {"y", c}, {"transpose_x", b_.boolean(false)}, {"transpose_y", b_.boolean(false)}},
      {mil::FLOAT32, {at.shape[0], at.shape[1], ct.shape[2]}});
  set(n, cast(reshape(product, out.shape), out.dtype));
}

void Lowering::reduce(const Node& n) {
  const MilType out = out_type(n);
  const int64_t rank = type(n.inputs[0]).rank();
  std::vector<int64_t> axes;
  for (int64_t a : n.attr_ints("axes")) axes.push_back(norm_axis(a, rank));
  if (axes.empty()) return set(n, in(n, 0));
  // Sums and products of f16 values accumulate in fp32 and round once.
  const bool widen = out.dtype == mil::FLOAT16 && (n.op == "reduce_sum" || n.op == "reduce_prod");
  const std::string x = widen ? cast(in(n, 0), mil::FLOAT32) : in(n, 0);
  MilType rt = out;
  if (widen) rt.dtype = mil::FLOAT32;
  const std::string r =
      b_.op(n.op, {{"x", x}, {"axes", b_.ints(axes)}, {"keep_dims", b_.boolean(false)}}, rt);
  set(n, cast(r, out.dtype));
}

void Lowering::native(const Node& n) {
  NativeOperands op{n, g_.describe_node(node_), {}, {}, out_type(n)};
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    auto held = int8_.find(n.inputs[k]);
    op.held.push_back(held == int8_.end() ? nullptr : &held->second);
    op.inputs.push_back(held == int8_.end() ? in(n, k) : std::string());
  }
  set(n, emit_native(b_, op));
}

}  // namespace

MilProgram lower_to_mil(const Graph& g, const Deployment& deployment) {
  MilProgram out;
  out.program.set_version(1);
  mil::Function& fn = (*out.program.mutable_functions())["main"];
  fn.set_opset(deployment.opset);
  mil::Block& block = (*fn.mutable_block_specializations())[deployment.opset];
  Lowering(g, out, &block).run(&fn, &block);
  return out;
}

}  // namespace rlx::ane
