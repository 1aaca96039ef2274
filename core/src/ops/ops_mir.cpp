// The MIR primitive set: a small closed set in the spirit of StableHLO. Every HIR op decomposes
// into these (or is claimed natively by a target).
#include <numeric>

#include "ops/op_family.h"
#include "ops/op_helpers.h"
#include "rlx/core/builder.h"

namespace rlx {
using namespace ops;

namespace {

enum class Domain { kFloat, kNumeric, kLogical, kAny, kOrdered };

bool in_domain(DType d, Domain dom) {
  switch (dom) {
    case Domain::kFloat: return float_like(d);
    case Domain::kNumeric: return d != DType::kBool;
    case Domain::kLogical: return d == DType::kBool || is_integer(d);
    case Domain::kOrdered: return !is_complex(d);
    case Domain::kAny: return true;
  }
  return false;
}

const char* domain_words(Domain dom) {
  switch (dom) {
    case Domain::kFloat: return "a floating-point or complex dtype";
    case Domain::kNumeric: return "a numeric dtype";
    case Domain::kLogical: return "bool or an integer dtype";
    case Domain::kOrdered: return "an ordered (non-complex) dtype";
    case Domain::kAny: return "any dtype";
  }
  return "";
}

SampleFn elementwise_sample(int arity, Domain dom) {
  return [=](DType d) -> std::optional<OpSample> {
    if (!in_domain(d, dom)) return std::nullopt;
    return sample_of(std::vector<TensorType>(arity, tt(d, {2, 3})));
  };
}

OpDef unary(const std::string& name, Domain dom, std::string summary) {
  OpDef d{name, OpLevel::kMir, OpClass::kElementwise, 1, 1, 1};
  d.infer = [name, dom](const std::vector<TensorType>& in, const Node&) {
    if (!in_domain(in[0].dtype, dom))
      fail("{} needs {}, got {}", name, domain_words(dom), dtype_name(in[0].dtype));
    // A complex number's magnitude is real (numpy, StableHLO).
    if (name == "abs" && is_complex(in[0].dtype)) return one(tt(DType::kF32, in[0].shape));
    return one(in[0]);
  };
  d.sample = elementwise_sample(1, dom);
  d.summary = std::move(summary);
  return d;
}

OpDef binary(const std::string& name, Domain dom, bool compare, std::string summary) {
  OpDef d{name, OpLevel::kMir, OpClass::kElementwise, 2, 2, 1};
  d.infer = [name, dom, compare](const std::vector<TensorType>& in, const Node&) {
    expect_same_dtype(in, name.c_str());
    if (!(in[0].shape == in[1].shape))
      fail("{} needs equal shapes, got {} and {} (broadcast explicitly)", name,
           shape_str(in[0].shape), shape_str(in[1].shape));
    if (!in_domain(in[0].dtype, dom))
      fail("{} needs {}, got {}", name, domain_words(dom), dtype_name(in[0].dtype));
    return one(tt(compare ? DType::kBool : in[0].dtype, in[0].shape));
  };
  d.sample = elementwise_sample(2, dom);
  d.summary = std::move(summary);
  return d;
}

std::vector<TensorType> infer_select(const std::vector<TensorType>& in, const Node&) {
  if (in[0].dtype != DType::kBool) fail("select needs a bool predicate, got {}", dtype_name(in[0].dtype));
  if (in[1].dtype != in[2].dtype)
    fail("select needs branches of one dtype, got {} and {}", dtype_name(in[1].dtype),
         dtype_name(in[2].dtype));
  if (!(in[0].shape == in[1].shape) || !(in[1].shape == in[2].shape))
    fail("select needs equal shapes, got {}, {} and {}", shape_str(in[0].shape),
         shape_str(in[1].shape), shape_str(in[2].shape));
  return one(in[1]);
}

std::vector<TensorType> infer_broadcast(const std::vector<TensorType>& in, const Node& n) {
  Shape out = n.attr_shape("shape");
  const IntList& dims = n.attr_ints("dims");
  if (static_cast<int64_t>(dims.size()) != in[0].rank())
    fail("broadcast_in_dim: dims has {} entries for an operand of rank {}", dims.size(), in[0].rank());
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = dims[i];
    if (d < 0 || d >= static_cast<int64_t>(out.size()))
      fail("broadcast_in_dim: dims[{}] = {} is out of range for result rank {}", i, d, out.size());
    if (i > 0 && dims[i] <= dims[i - 1]) fail("broadcast_in_dim: dims must be increasing");
    const Dim& src = in[0].shape[i];
    if (!(src == out[d]) && !(src.is_static() && src.value == 1))
      fail("broadcast_in_dim: operand dim {} ({}) cannot broadcast to result dim {} ({})", i,
           src.str(), d, out[d].str());
  }
  return one(tt(in[0].dtype, out));
}

std::vector<TensorType> infer_reshape(const std::vector<TensorType>& in, const Node& n) {
  Shape out = n.attr_shape("shape");
  if (!same_num_elements(in[0].shape, out))
    fail("reshape: {} and {} hold different numbers of elements", shape_str(in[0].shape),
         shape_str(out));
  return one(tt(in[0].dtype, out));
}

std::vector<TensorType> infer_transpose(const std::vector<TensorType>& in, const Node& n) {
  const IntList& perm = n.attr_ints("perm");
  if (static_cast<int64_t>(perm.size()) != in[0].rank())
    fail("transpose: perm has {} entries for rank {}", perm.size(), in[0].rank());
  std::vector<bool> seen(perm.size(), false);
  Shape out;
  for (int64_t p : perm) {
    if (p < 0 || p >= in[0].rank() || seen[p]) fail("transpose: perm is not a permutation");
    seen[p] = true;
    out.push_back(in[0].shape[p]);
  }
  return one(tt(in[0].dtype, out));
}

std::vector<TensorType> infer_slice(const std::vector<TensorType>& in, const Node& n) {
  const IntList& start = n.attr_ints("start");
  const IntList& limit = n.attr_ints("limit");
  IntList strides = n.has_attr("strides") ? n.attr_ints("strides") : IntList(start.size(), 1);
  int64_t rank = in[0].rank();
  if ((int64_t)start.size() != rank || (int64_t)limit.size() != rank || (int64_t)strides.size() != rank)
    fail("slice: start, limit and strides need {} entries", rank);
  Shape out;
  for (int64_t i = 0; i < rank; ++i) {
    const Dim& d = in[0].shape[i];
    // limit -1 keeps a dim whole, which is how a symbolic dim is passed through.
    if (start[i] == 0 && limit[i] == -1 && strides[i] == 1) { out.push_back(d); continue; }
    if (!d.is_static()) fail("slice: dim {} is symbolic ({}); only a whole-dim slice (0:-1) is allowed", i, d.sym);
    if (strides[i] < 1) fail("slice: stride {} of dim {} must be positive", strides[i], i);
    if (start[i] < 0 || limit[i] > d.value || start[i] > limit[i])
      fail("slice: [{}:{}] is out of range for dim {} of size {}", start[i], limit[i], i, d.value);
    out.push_back((limit[i] - start[i] + strides[i] - 1) / strides[i]);
  }
  return one(tt(in[0].dtype, out));
}

std::vector<TensorType> infer_concat(const std::vector<TensorType>& in, const Node& n) {
  expect_same_dtype(in, "concat");
  int64_t axis = norm_axis(n.attr_int("axis"), in[0].rank());
  Shape out = in[0].shape;
  int64_t total = 0;
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k].rank() != in[0].rank()) fail("concat: operands have different ranks");
    for (int64_t i = 0; i < in[0].rank(); ++i)
      if (i != axis && !(in[k].shape[i] == in[0].shape[i]))
        fail("concat: operand {} has {} where operand 0 has {}", k, shape_str(in[k].shape),
             shape_str(in[0].shape));
    if (!in[k].shape[axis].is_static()) fail("concat: the concatenated dim must be static");
    total += in[k].shape[axis].value;
  }
  out[axis] = total;
  return one(tt(in[0].dtype, out));
}

std::vector<TensorType> infer_pad(const std::vector<TensorType>& in, const Node& n) {
  const IntList& lo = n.attr_ints("low");
  const IntList& hi = n.attr_ints("high");
  if ((int64_t)lo.size() != in[0].rank() || (int64_t)hi.size() != in[0].rank())
    fail("pad: low and high need {} entries", in[0].rank());
  if (in[1].rank() != 0 || in[1].dtype != in[0].dtype) fail("pad: the pad value must be a scalar of the operand's dtype");
  Shape out = in[0].shape;
  for (size_t i = 0; i < out.size(); ++i) {
    if (lo[i] < 0 || hi[i] < 0) fail("pad: negative padding is not supported");
    if (lo[i] == 0 && hi[i] == 0) continue;
    if (!out[i].is_static()) fail("pad: dim {} is symbolic", i);
    out[i] = out[i].value + lo[i] + hi[i];
  }
  return one(tt(in[0].dtype, out));
}

// gather {axis}: out = operand[:axis] + indices + operand[axis+1:] (ONNX Gather semantics).
std::vector<TensorType> infer_gather(const std::vector<TensorType>& in, const Node& n) {
  int64_t axis = norm_axis(n.attr_int("axis"), in[0].rank());
  if (in[1].dtype != DType::kI32 && in[1].dtype != DType::kI64)
    fail("gather: indices must be i32 or i64, got {}", dtype_name(in[1].dtype));
  Shape out(in[0].shape.begin(), in[0].shape.begin() + axis);
  out.insert(out.end(), in[1].shape.begin(), in[1].shape.end());
  out.insert(out.end(), in[0].shape.begin() + axis + 1, in[0].shape.end());
  return one(tt(in[0].dtype, out));
}

// scatter {axis, reduce}: updates has the shape gather would produce for these indices.
std::vector<TensorType> infer_scatter(const std::vector<TensorType>& in, const Node& n) {
  Node g = n;
  auto gathered = infer_gather({in[0], in[1]}, g)[0];
  if (!(gathered.shape == in[2].shape) || in[2].dtype != in[0].dtype)
    fail("scatter: updates must be {} for these indices, got {}", gathered.str(), in[2].str());
  std::string red = n.attr_string("reduce", "none");
  if (red != "none" && red != "add") fail("scatter: reduce must be \"none\" or \"add\", got \"{}\"", red);
  return one(in[0]);
}

std::vector<TensorType> infer_iota(const std::vector<TensorType>&, const Node& n) {
  Shape s = n.attr_shape("shape");
  norm_axis(n.attr_int("dim"), static_cast<int64_t>(s.size()), "iota dim");
  return one(tt(n.attr_dtype("dtype"), s));
}

std::vector<TensorType> infer_reduce(const std::vector<TensorType>& in, const Node& n) {
  IntList axes = n.attr_ints("axes");
  std::vector<bool> drop(in[0].rank(), false);
  for (int64_t a : axes) {
    int64_t k = norm_axis(a, in[0].rank());
    if (drop[k]) fail("reduce: axis {} is listed twice", a);
    drop[k] = true;
  }
  if (in[0].dtype == DType::kBool) fail("reduce: bool operands are not reducible; convert first");
  if (is_complex(in[0].dtype) && (n.op == "reduce_max" || n.op == "reduce_min"))
    fail("{}: complex numbers have no order", n.op);
  Shape out;
  for (int64_t i = 0; i < in[0].rank(); ++i)
    if (!drop[i]) out.push_back(in[0].shape[i]);
  return one(tt(in[0].dtype, out));
}

std::vector<TensorType> infer_dot_general(const std::vector<TensorType>& in, const Node& n) {
  expect_same_dtype(in, "dot_general");
  const IntList &lb = n.attr_ints("lhs_batch"), &rb = n.attr_ints("rhs_batch");
  const IntList &lc = n.attr_ints("lhs_contract"), &rc = n.attr_ints("rhs_contract");
  if (lb.size() != rb.size() || lc.size() != rc.size())
    fail("dot_general: batch and contracting dim lists must pair up");
  std::vector<bool> lused(in[0].rank(), false), rused(in[1].rank(), false);
  auto use = [&](std::vector<bool>& used, int64_t d, const char* side) {
    if (d < 0 || d >= (int64_t)used.size() || used[d]) fail("dot_general: bad {} dim {}", side, d);
    used[d] = true;
  };
  Shape out;
  for (size_t i = 0; i < lb.size(); ++i) {
    use(lused, lb[i], "lhs"), use(rused, rb[i], "rhs");
    if (!(in[0].shape[lb[i]] == in[1].shape[rb[i]]))
      fail("dot_general: batch dims {} ({}) and {} ({}) differ", lb[i], in[0].shape[lb[i]].str(),
           rb[i], in[1].shape[rb[i]].str());
    out.push_back(in[0].shape[lb[i]]);
  }
  for (size_t i = 0; i < lc.size(); ++i) {
    use(lused, lc[i], "lhs"), use(rused, rc[i], "rhs");
    if (!(in[0].shape[lc[i]] == in[1].shape[rc[i]]))
      fail("dot_general: contracting dims {} ({}) and {} ({}) differ", lc[i],
           in[0].shape[lc[i]].str(), rc[i], in[1].shape[rc[i]].str());
  }
  for (int64_t i = 0; i < in[0].rank(); ++i)
    if (!lused[i]) out.push_back(in[0].shape[i]);
  for (int64_t i = 0; i < in[1].rank(); ++i)
    if (!rused[i]) out.push_back(in[1].shape[i]);
  if (in[0].dtype == DType::kBool) fail("dot_general: bool operands are not supported");
  return one(tt(in[0].dtype, out));
}

std::vector<TensorType> infer_while(const std::vector<TensorType>& in, const Node& n) {
  if (n.regions.size() != 2) fail("while needs two regions (cond, body), got {}", n.regions.size());
  const Graph& cond = *n.regions[0];
  const Graph& body = *n.regions[1];
  auto check_args = [&](const Graph& r, const char* which) {
    if (r.inputs.size() != in.size()) fail("while: {} takes {} arguments, the loop carries {}", which, r.inputs.size(), in.size());
    for (size_t i = 0; i < in.size(); ++i)
      if (!(r.type(r.inputs[i]) == in[i])) fail("while: {} argument {} is {}, carried value is {}", which, i, r.type(r.inputs[i]).str(), in[i].str());
  };
  check_args(cond, "cond");
  check_args(body, "body");
  if (cond.outputs.size() != 1 || !(cond.type(cond.outputs[0]) == tt(DType::kBool, {})))
    fail("while: cond must return one bool scalar");
  if (body.outputs.size() != in.size()) fail("while: body must return every carried value");
  for (size_t i = 0; i < in.size(); ++i)
    if (!(body.type(body.outputs[i]) == in[i])) fail("while: body result {} is {}, carried value is {}", i, body.type(body.outputs[i]).str(), in[i].str());
  return in;
}

// bitcast {dtype}: the same bytes read as another dtype, a 64-bit element as a pair of 32-bit
// ones only: c64[s] <-> f32[s, 2] (real, imaginary) and i64[s] <-> i32[s, 2], u64[s] <-> u32[s, 2]
// (low word first, as every target stores them). A target without complex numbers or 64-bit
// integers reads and writes such tensors as pairs through this view (no kernel: an alias).
std::optional<DType> pair_half(DType whole) {
  switch (whole) {
    case DType::kC64: return DType::kF32;
    case DType::kI64: return DType::kI32;
    case DType::kU64: return DType::kU32;
    default: return std::nullopt;
  }
}

std::vector<TensorType> infer_bitcast(const std::vector<TensorType>& in, const Node& n) {
  const DType to = n.attr_dtype("dtype");
  const TensorType& x = in[0];
  if (pair_half(x.dtype) == to) {
    Shape s = x.shape;
    s.push_back(Dim(2));
    return one(tt(to, s));
  }
  if (pair_half(to) == x.dtype) {
    if (x.rank() == 0 || !(x.shape.back() == Dim(2)))
      fail("bitcast to {} needs a {} operand whose last dim is 2, got {}", dtype_name(to),
           dtype_name(x.dtype), x.str());
    return one(tt(to, Shape(x.shape.begin(), x.shape.end() - 1)));
  }
  fail("bitcast reads c64, i64 and u64 as pairs of f32, i32 and u32 and back, not {} as {}",
       dtype_name(x.dtype), dtype_name(to));
}

std::vector<TensorType> infer_convert(const std::vector<TensorType>& in, const Node& n) {
  return one(tt(n.attr_dtype("dtype"), in[0].shape));
}

std::vector<TensorType> infer_constant(const std::vector<TensorType>&, const Node& n) {
  const Tensor& t = n.attr_tensor("value");
  return one(tt(t.dtype(), Shape(t.shape().begin(), t.shape().end())));
}

// {dtype} is i64 (the default) or i32: a target without 64-bit integers asks for the size as
// i32 (split-i64), since a dim never reaches 2^31.
std::vector<TensorType> infer_dim_size(const std::vector<TensorType>& in, const Node& n) {
  norm_axis(n.attr_int("dim"), in[0].rank(), "dim");
  const DType d = n.has_attr("dtype") ? n.attr_dtype("dtype") : DType::kI64;
  if (d != DType::kI64 && d != DType::kI32) fail("dim_size gives i64 or i32, not {}", dtype_name(d));
  return one(tt(d, {}));
}

}  // namespace

void mir_ops(OpFamily& r) {
  using D = Domain;
  for (auto [name, dom] : std::initializer_list<std::pair<const char*, Domain>>{
           {"neg", D::kNumeric}, {"abs", D::kNumeric}, {"sign", D::kNumeric},
           {"exp", D::kFloat}, {"log", D::kFloat}, {"sqrt", D::kFloat}, {"rsqrt", D::kFloat},
           {"tanh", D::kFloat}, {"erf", D::kFloat}, {"sin", D::kFloat}, {"cos", D::kFloat},
           {"floor", D::kFloat}, {"ceil", D::kFloat}, {"round", D::kFloat},
           {"logistic", D::kFloat}, {"not", D::kLogical}})
    r.add(unary(name, dom, "elementwise unary"));
  for (auto [name, dom] : std::initializer_list<std::pair<const char*, Domain>>{
           {"add", D::kNumeric}, {"sub", D::kNumeric}, {"mul", D::kNumeric},
           {"div", D::kNumeric}, {"max", D::kNumeric}, {"min", D::kNumeric},
           {"pow", D::kNumeric}, {"rem", D::kNumeric}, {"and", D::kLogical},
           {"or", D::kLogical}, {"xor", D::kLogical}})
    r.add(binary(name, dom, false, "elementwise binary"));
  for (auto [name, dom] : std::initializer_list<std::pair<const char*, Domain>>{
           {"eq", D::kAny}, {"ne", D::kAny}, {"lt", D::kOrdered},
           {"le", D::kOrdered}, {"gt", D::kOrdered}, {"ge", D::kOrdered}})
    r.add(binary(name, dom, true, "elementwise comparison, yields bool"));

  auto def = [&](const char* name, OpClass cls, int min_in, int max_in, InferFn infer,
                 SampleFn sample, const char* summary) {
    OpDef d{name, OpLevel::kMir, cls, min_in, max_in, 1};
    d.infer = std::move(infer);
    d.sample = std::move(sample);
    d.summary = summary;
    r.add(std::move(d));
  };
  def("select", OpClass::kElementwise, 3, 3, infer_select,
      [](DType d) { return sample_of({tt(DType::kBool, {2, 3}), tt(d, {2, 3}), tt(d, {2, 3})}); },
      "pred ? a : b");
  def("convert", OpClass::kElementwise, 1, 1, infer_convert,
      [](DType d) { return sample_of({tt(DType::kF32, {2, 3})}, {{"dtype", d}}); },
      "converts to attribute dtype (round to nearest even)");
  def("bitcast", OpClass::kOpaque, 1, 1, infer_bitcast,
      [](DType d) -> std::optional<OpSample> {
        if (auto half = pair_half(d)) return sample_of({tt(d, {2, 3})}, {{"dtype", *half}});
        return std::nullopt;
      },
      "a 64-bit element as two 32-bit ones (c64/f32, i64/i32, u64/u32) and back; a view, no kernel");
  def("broadcast_in_dim", OpClass::kIndexMap, 1, 1, infer_broadcast,
      [](DType d) { return sample_of({tt(d, {3})}, {{"shape", Shape{2, 3}}, {"dims", IntList{1}}}); },
      "maps operand dim i to result dim dims[i]");
  def("reshape", OpClass::kIndexMap, 1, 1, infer_reshape,
      [](DType d) { return sample_of({tt(d, {2, 3})}, {{"shape", Shape{3, 2}}}); },
      "row-major reshape");
  def("transpose", OpClass::kIndexMap, 1, 1, infer_transpose,
      [](DType d) { return sample_of({tt(d, {2, 3})}, {{"perm", IntList{1, 0}}}); },
      "result dim i is operand dim perm[i]");
  def("slice", OpClass::kIndexMap, 1, 1, infer_slice,
      [](DType d) {
        return sample_of({tt(d, {4, 3})}, {{"start", IntList{1, 0}}, {"limit", IntList{3, 3}},
                                           {"strides", IntList{1, 1}}});
      },
      "strided slice; limit -1 with start 0 keeps a dim whole");
  def("concat", OpClass::kOpaque, 1, -1, infer_concat,
      [](DType d) { return sample_of({tt(d, {2, 3}), tt(d, {1, 3})}, {{"axis", int64_t{0}}}); },
      "concatenation along axis");
  def("pad", OpClass::kOpaque, 2, 2, infer_pad,
      [](DType d) { return sample_of({tt(d, {2, 3}), tt(d, {})}, {{"low", IntList{1, 0}}, {"high", IntList{0, 2}}}); },
      "edge padding with a scalar value");
  def("gather", OpClass::kOpaque, 2, 2, infer_gather,
      [](DType d) { return sample_of({tt(d, {5, 3}), tt(DType::kI64, {4})}, {{"axis", int64_t{0}}}); },
      "takes slices of operand along axis at indices");
  def("scatter", OpClass::kOpaque, 3, 3, infer_scatter,
      [](DType d) {
        if (d == DType::kBool) return std::optional<OpSample>();
        return sample_of({tt(d, {5, 3}), tt(DType::kI64, {2}), tt(d, {2, 3})}, {{"axis", int64_t{0}}});
      },
      "writes (or adds) updates into operand at indices along axis");
  def("iota", OpClass::kElementwise, 0, 0, infer_iota,
      [](DType d) {
        if (!is_integer(d) && !is_float(d)) return std::optional<OpSample>();
        return sample_of({}, {{"shape", Shape{2, 3}}, {"dim", int64_t{1}}, {"dtype", d}});
      },
      "index along dim");
  for (const char* name : {"reduce_sum", "reduce_max", "reduce_min", "reduce_prod"})
    def(name, OpClass::kReduce, 1, 1, infer_reduce,
        [ordered = std::string(name) == "reduce_max" || std::string(name) == "reduce_min"](DType d) {
          if (d == DType::kBool || (ordered && is_complex(d))) return std::optional<OpSample>();
          return sample_of({tt(d, {2, 3})}, {{"axes", IntList{1}}});
        },
        "reduction over axes (removed from the result)");
  def("dot_general", OpClass::kOpaque, 2, 2, infer_dot_general,
      [](DType d) {
        if (d == DType::kBool) return std::optional<OpSample>();
        return sample_of({tt(d, {2, 3}), tt(d, {3, 4})},
                         {{"lhs_batch", IntList{}}, {"rhs_batch", IntList{}},
                          {"lhs_contract", IntList{1}}, {"rhs_contract", IntList{0}}});
      },
      "batched tensor contraction (result: batch, lhs free, rhs free dims)");
  def("constant", OpClass::kConstant, 0, 0, infer_constant,
      [](DType d) { return sample_of({}, {{"value", Tensor(d, {2})}}); }, "a dense constant");
  def("dim_size", OpClass::kOpaque, 1, 1, infer_dim_size,
      [](DType d) { return sample_of({tt(d, {2, 3})}, {{"dim", int64_t{1}}}); },
      "the size of a dim as an i64 scalar; folds to a constant once shapes are bound");
  {
    OpDef d{"while", OpLevel::kMir, OpClass::kOpaque, 1, -1, -1};
    d.infer = infer_while;
    d.sample = [](DType) { return std::optional<OpSample>(); };
    d.summary = "loop: cond and body regions over carried values";
    r.add(std::move(d));
  }
}

}  // namespace rlx
