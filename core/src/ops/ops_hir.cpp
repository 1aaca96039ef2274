// HIR elementwise and shape ops: numpy-broadcasting wrappers over MIR primitives.
#include "ops/op_family.h"
#include "ops/op_helpers.h"
#include "rlx/core/builder.h"

namespace rlx {
using namespace ops;

namespace {

OpDef hir(const std::string& name, int min_in, int max_in, InferFn infer, DecomposeFn dec,
          SampleFn sample, std::string summary) {
  OpDef d{name, OpLevel::kHir, OpClass::kOpaque, min_in, max_in, 1};
  d.infer = std::move(infer);
  d.decompose = std::move(dec);
  d.sample = std::move(sample);
  d.summary = std::move(summary);
  return d;
}


SampleFn float_sample(int arity) {
  return [=](DType d) -> std::optional<OpSample> {
    if (!float_like(d)) return std::nullopt;
    return sample_of(std::vector<TensorType>(arity, tt(d, {2, 3})));
  };
}

SampleFn numeric_sample(int arity) {
  return [=](DType d) -> std::optional<OpSample> {
    if (d == DType::kBool) return std::nullopt;
    return sample_of(std::vector<TensorType>(arity, tt(d, {2, 3})));
  };
}


}  // namespace

void hir_ops(OpFamily& r) {
  auto add = [&](const std::string& name, int min_in, int max_in, DecomposeFn dec, SampleFn sample,
                 std::string summary) {
    OpDef d = hir(name, min_in, max_in, infer_by_decomposition(dec), dec, std::move(sample),
                  std::move(summary));
    r.add(std::move(d));
  };
  for (auto [name, prim] : std::initializer_list<std::pair<const char*, const char*>>{
           {"Add", "add"}, {"Sub", "sub"}, {"Mul", "mul"}, {"Div", "div"}, {"Pow", "pow"},
           {"Max", "max"}, {"Min", "min"}}) {
    std::string p = prim;
    add(name, 2, 2,
        [p](GraphBuilder& b, const Node&, const std::vector<ValueId>& in) {
          Shape s = broadcast_shapes(b.type(in[0]).shape, b.type(in[1]).shape);
          return std::vector<ValueId>{b.binary(p, b.broadcast_to(in[0], s), b.broadcast_to(in[1], s))};
        },
        numeric_sample(2), std::string("elementwise ") + prim + " with numpy broadcasting");
  }
  for (auto [name, prim] : std::initializer_list<std::pair<const char*, const char*>>{
           {"Neg", "neg"}, {"Abs", "abs"}, {"Exp", "exp"}, {"Log", "log"}, {"Sqrt", "sqrt"},
           {"Tanh", "tanh"}, {"Erf", "erf"}, {"Sigmoid", "logistic"}}) {
    std::string p = prim;
    bool numeric = p == "neg" || p == "abs";
    add(name, 1, 1,
        [p](GraphBuilder& b, const Node&, const std::vector<ValueId>& in) {
          return std::vector<ValueId>{b.unary(p, in[0])};
        },
        numeric ? numeric_sample(1) : float_sample(1), std::string("elementwise ") + prim);
  }
  add("Relu", 1, 1,
      [](GraphBuilder& b, const Node&, const std::vector<ValueId>& in) {
        return std::vector<ValueId>{b.binary("max", in[0], b.full_like(in[0], 0.0))};
      },
      numeric_sample(1), "max(x, 0)");
  add("Clip", 1, 1,
      [](GraphBuilder& b, const Node& n, const std::vector<ValueId>& in) {
        ValueId x = in[0];
        if (n.has_attr("min")) x = b.binary("max", x, b.full_like(x, n.attr_float("min", 0)));
        if (n.has_attr("max")) x = b.binary("min", x, b.full_like(x, n.attr_float("max", 0)));
        return std::vector<ValueId>{x};
      },
      [](DType d) -> std::optional<OpSample> {
        if (!is_float(d)) return std::nullopt;
        return sample_of({tt(d, {2, 3})}, {{"min", 0.0}, {"max", 6.0}});
      },
      "clamp(x, min, max) {min, max}, either bound optional (ReLU6: min = 0, max = 6)");
  add("Cast", 1, 1,
      [](GraphBuilder& b, const Node& n, const std::vector<ValueId>& in) {
        return std::vector<ValueId>{b.convert(in[0], n.attr_dtype("dtype"))};
      },
      [](DType d) { return sample_of({tt(DType::kF32, {2, 3})}, {{"dtype", d}}); },
      "converts to attribute dtype");
  add("Where", 3, 3,
      [](GraphBuilder& b, const Node&, const std::vector<ValueId>& in) {
        Shape s = broadcast_shapes(broadcast_shapes(b.type(in[0]).shape, b.type(in[1]).shape),
                                   b.type(in[2]).shape);
        return std::vector<ValueId>{
            b.select(b.broadcast_to(in[0], s), b.broadcast_to(in[1], s), b.broadcast_to(in[2], s))};
      },
      [](DType d) {
        return sample_of({tt(DType::kBool, {2, 3}), tt(d, {2, 3}), tt(d, {1, 3})});
      },
      "cond ? a : b with numpy broadcasting");
  add("Reshape", 1, 1,
      [](GraphBuilder& b, const Node& n, const std::vector<ValueId>& in) {
        return std::vector<ValueId>{b.reshape(in[0], n.attr_shape("shape"))};
      },
      [](DType d) { return sample_of({tt(d, {2, 3})}, {{"shape", Shape{6}}}); }, "row-major reshape");
  add("Transpose", 1, 1,
      [](GraphBuilder& b, const Node& n, const std::vector<ValueId>& in) {
        return std::vector<ValueId>{b.transpose(in[0], n.attr_ints("perm"))};
      },
      [](DType d) { return sample_of({tt(d, {2, 3})}, {{"perm", IntList{1, 0}}}); },
      "permutes dims");
  add("Concat", 1, -1,
      [](GraphBuilder& b, const Node& n, const std::vector<ValueId>& in) {
        int64_t axis = norm_axis(n.attr_int("axis"), b.type(in[0]).rank());
        return std::vector<ValueId>{b.concat(in, axis)};
      },
      [](DType d) { return sample_of({tt(d, {2, 3}), tt(d, {2, 1})}, {{"axis", int64_t{-1}}}); },
      "concatenation along axis");
}

}  // namespace rlx
