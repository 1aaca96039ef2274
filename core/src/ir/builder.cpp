#include "rlx/core/builder.h"

#include <fmt/format.h>

#include <cmath>

#include "rlx/core/error.h"
#include "rlx/core/op_registry.h"

namespace rlx {

ValueId GraphBuilder::param(const std::string& name, Tensor data) {
  TensorType t{data.dtype(), Shape(data.shape().begin(), data.shape().end())};
  return g_.add_param(name, t, std::move(data));
}

std::vector<ValueId> GraphBuilder::op_n(const std::string& op, std::vector<ValueId> inputs,
                                        Attrs attrs) {
  // Results are created before inference so an inference error can name them (%t4); the node
  // and its results are removed again when inference fails.
  const OpDef& def = OpRegistry::instance().get(op);
  size_t count = def.num_outputs >= 0 ? def.num_outputs : inputs.size();
  size_t values_before = g_.values.size();
  int32_t idx =
      g_.add_node(op, std::move(inputs), std::vector<TensorType>(count), std::move(attrs), loc_);
  std::vector<TensorType> types;
  try {
    types = infer_node(g_, idx);
  } catch (...) {
    g_.nodes.pop_back();
    g_.values.resize(values_before);
    throw;
  }
  Node& n = g_.nodes[idx];
  RLX_CHECK(types.size() == n.outputs.size(), op + ": result count differs from its definition");
  for (size_t k = 0; k < types.size(); ++k) g_.values[n.outputs[k]].type = std::move(types[k]);
  return n.outputs;
}

ValueId GraphBuilder::op(const std::string& op, std::vector<ValueId> inputs, Attrs attrs) {
  auto outs = op_n(op, std::move(inputs), std::move(attrs));
  RLX_CHECK(outs.size() == 1, op + " does not have exactly one result");
  return outs[0];
}

ValueId GraphBuilder::constant(Tensor value) {
  return op("constant", {}, {{"value", std::move(value)}});
}

ValueId GraphBuilder::scalar(DType dtype, double value) {
  // f32, and integers that hold the value exactly, are written in their own dtype: the same
  // value the convert op gives, and no f64 constant for a target without f64 to refuse (folding
  // removes one at the top level, but a while loop's regions are checked as built).
  if (dtype == DType::kF32)
    return constant(Tensor::from<float>(dtype, {}, {static_cast<float>(value)}));
  if (dtype == DType::kC64) {  // value + 0i, in its own dtype (no f64 constant to convert)
    Tensor t(DType::kC64, {});
    t.as<float>()[0] = static_cast<float>(value), t.as<float>()[1] = 0.0f;
    return constant(std::move(t));
  }
  if (is_integer(dtype) && value == std::nearbyint(value) && value >= -2147483648.0 && value < 2147483648.0) {
    Tensor t(dtype, {});
    const auto v = static_cast<int64_t>(value);
    bool exact = true;
    switch (dtype) {
      case DType::kI8:
        exact = v >= -128 && v <= 127;
        if (exact) *t.as<int8_t>() = static_cast<int8_t>(v);
        break;
      case DType::kU8:
        exact = v >= 0 && v <= 255;
        if (exact) *t.as<uint8_t>() = static_cast<uint8_t>(v);
        break;
      case DType::kI16:
        exact = v >= -32768 && v <= 32767;
        if (exact) *t.as<int16_t>() = static_cast<int16_t>(v);
        break;
      case DType::kU16:
        exact = v >= 0 && v <= 65535;
        if (exact) *t.as<uint16_t>() = static_cast<uint16_t>(v);
        break;
      case DType::kI32:
        *t.as<int32_t>() = static_cast<int32_t>(v);
        break;
      case DType::kU32:
        exact = v >= 0;
        if (exact) *t.as<uint32_t>() = static_cast<uint32_t>(v);
        break;
      case DType::kI64:
        *t.as<int64_t>() = v;
        break;
      default:
        exact = false;
    }
    if (exact) return constant(t);
  }
  // Otherwise write through f64 and convert once, so a scalar of any dtype holds the nearest
  // value (with the convert op's rounding and saturation).
  Tensor d = Tensor::from<double>(DType::kF64, {}, {value});
  if (dtype == DType::kF64) return constant(d);
  ValueId c = constant(d);
  return convert(c, dtype);
}

ValueId GraphBuilder::full_like(ValueId like, double value) {
  TensorType t = type(like);
  return broadcast_in_dim(scalar(t.dtype, value), t.shape, {});
}

ValueId GraphBuilder::convert(ValueId x, DType to) {
  if (type(x).dtype == to) return x;
  return op("convert", {x}, {{"dtype", to}});
}

ValueId GraphBuilder::broadcast_in_dim(ValueId x, Shape shape, IntList dims) {
  return op("broadcast_in_dim", {x}, {{"shape", std::move(shape)}, {"dims", std::move(dims)}});
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Dim* da = i < rank - a.size() ? nullptr : &a[i - (rank - a.size())];
    const Dim* db = i < rank - b.size() ? nullptr : &b[i - (rank - b.size())];
    auto is_one = [](const Dim* d) { return !d || (d->is_static() && d->value == 1); };
    if (is_one(da))
      out[i] = db ? *db : Dim(1);
    else if (is_one(db) || *da == *db)
      out[i] = *da;
    else
      throw_user_error(fmt::format("shapes {} and {} do not broadcast (dim {}: {} vs {})",
                                   shape_str(a), shape_str(b), i, da->str(), db->str()));
  }
  return out;
}

ValueId GraphBuilder::broadcast_to(ValueId x, const Shape& shape) {
  Shape s = type(x).shape;
  if (s == shape) return x;
  size_t lead = shape.size() - s.size();
  IntList dims;
  for (size_t i = 0; i < s.size(); ++i) dims.push_back(static_cast<int64_t>(lead + i));
  return broadcast_in_dim(x, shape, dims);
}

ValueId GraphBuilder::reshape(ValueId x, Shape shape) {
  if (type(x).shape == shape) return x;
  return op("reshape", {x}, {{"shape", std::move(shape)}});
}

ValueId GraphBuilder::transpose(ValueId x, IntList perm) {
  return op("transpose", {x}, {{"perm", std::move(perm)}});
}

std::string reduce_op_name(ReduceKind k) {
  switch (k) {
    case ReduceKind::kSum:
      return "reduce_sum";
    case ReduceKind::kMax:
      return "reduce_max";
    case ReduceKind::kMin:
      return "reduce_min";
    case ReduceKind::kProd:
      return "reduce_prod";
  }
  return "";
}

ValueId GraphBuilder::reduce(ValueId x, IntList axes, ReduceKind kind) {
  return op(reduce_op_name(kind), {x}, {{"axes", std::move(axes)}});
}

ValueId GraphBuilder::reduce_keep(ValueId x, IntList axes, ReduceKind kind) {
  Shape s = type(x).shape;
  auto rank = static_cast<int64_t>(s.size());
  std::vector<bool> drop(rank, false);
  for (int64_t& a : axes) {
    if (a < 0) a += rank;
    drop.at(a) = true;
  }
  ValueId r = reduce(x, axes, kind);
  IntList dims;
  for (int64_t i = 0; i < rank; ++i)
    if (!drop[i]) dims.push_back(i);
  return broadcast_in_dim(r, type(x).shape, dims);
}

ValueId GraphBuilder::dot_general(ValueId a, ValueId b, IntList lb, IntList rb, IntList lc,
                                  IntList rc) {
  return op("dot_general", {a, b},
            {{"lhs_batch", std::move(lb)},
             {"rhs_batch", std::move(rb)},
             {"lhs_contract", std::move(lc)},
             {"rhs_contract", std::move(rc)}});
}

ValueId GraphBuilder::select(ValueId pred, ValueId t, ValueId f) {
  return op("select", {pred, t, f});
}

ValueId GraphBuilder::slice(ValueId x, IntList start, IntList limit, IntList strides) {
  if (strides.empty()) strides.assign(start.size(), 1);
  return op(
      "slice", {x},
      {{"start", std::move(start)}, {"limit", std::move(limit)}, {"strides", std::move(strides)}});
}

ValueId GraphBuilder::concat(std::vector<ValueId> xs, int64_t axis) {
  if (xs.size() == 1) return xs[0];
  return op("concat", std::move(xs), {{"axis", axis}});
}

}  // namespace rlx
