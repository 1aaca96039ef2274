// Shape ops. Shape, Size, Reshape, Concat, Unsqueeze, ... on host-known integer tensors fold at
// import time (the shape-computation subgraphs exporters emit), symbolic dims included.
#include <cmath>

#include "carried_types.h"
#include "op_util.h"
#include "proto_io.h"
#include "rlx/core/half.h"

namespace rlx::onnx {

namespace {

SymTensor reshaped(SymTensor s, std::vector<int64_t> shape) {
  s.shape = std::move(shape);
  return s;
}

std::vector<int64_t> as_static(const NodeCtx& n, const Shape& s, const char* what) {
  return static_shape(n, TensorType{DType::kI64, s}, what);
}

// Reshape's target: 0 copies the input dim (unless allowzero), -1 is inferred.
Shape reshape_target(NodeCtx& n, const Shape& in, const std::vector<SymInt>& spec, bool allowzero) {
  std::vector<SymInt> out(spec.size());
  int infer = -1;
  for (size_t i = 0; i < spec.size(); ++i) {
    const SymInt& s = spec[i];
    if (s.is_static() && s.coef == -1) {
      if (infer >= 0) n.fail("the shape has more than one -1");
      infer = static_cast<int>(i);
    } else if (s.is_static() && s.coef == 0 && !allowzero) {
      if (i >= in.size()) n.failf("shape entry {} is 0 but the input has rank {}", i, in.size());
      out[i] = SymInt::from_dim(in[i]);
    } else {
      if (!s.nonneg()) n.failf("shape entry {} is {}", i, s.str());
      out[i] = s;
    }
  }
  if (infer >= 0) {
    SymInt total(1), known(1);
    for (const Dim& d : in) total = sym_mul(total, SymInt::from_dim(d));
    for (size_t i = 0; i < out.size(); ++i)
      if (static_cast<int>(i) != infer) known = sym_mul(known, out[i]);
    if (known.is_static() && known.coef == 0) {
      out[infer] = SymInt(0);
    } else {
      auto q = sym_div(total, known);
      if (!q)
        n.failf("cannot infer the -1 entry: {} elements do not divide by {}", total.str(),
                known.str());
      out[infer] = *q;
    }
  }
  Shape s = shape_from_syms(n, out, "the target shape");
  if (!same_num_elements(in, s)) n.failf("cannot reshape {} to {}", shape_str(in), shape_str(s));
  return s;
}

void reshape_to(NodeCtx& n, const Shape& target) {
  if (auto s = n.sym(0); s && is_static(target))
    return n.out_sym(0, reshaped(*s, as_static(n, target, "the result")));
  n.out(0, n.b.reshape(n.x(0), target));
}

std::vector<int64_t> axes_operand(NodeCtx& n, int since_opset, int input, const char* what) {
  if (n.opset >= since_opset)
    return n.has(input) ? n.need_ints(input, what) : std::vector<int64_t>{};
  return n.attr_ints("axes");
}

void constant_node(NodeCtx& n) {
  const ::onnx::AttributeProto* a = nullptr;
  for (const auto& at : n.node.attribute()) a = &at;
  if (!a || n.node.attribute_size() != 1) n.fail("needs exactly one value attribute");
  const std::string& k = a->name();
  if (k == "value" && a->has_t() && carried_type(a->t().data_type())) {
    Val v;
    v.konst = n.attr_tensor("value");
    v.type = TensorType{v.konst->dtype(), Shape(v.konst->shape().begin(), v.konst->shape().end())};
    v.onnx_type = a->t().data_type();
    return n.out_val(0, v);
  }
  if (k == "value") return n.out_const(0, n.attr_tensor("value"));
  if (k == "value_float") return n.out_const(0, Tensor::from<float>(DType::kF32, {}, {a->f()}));
  if (k == "value_int") return n.out_const(0, Tensor::from<int64_t>(DType::kI64, {}, {a->i()}));
  if (k == "value_floats") {
    std::vector<float> v(a->floats().begin(), a->floats().end());
    return n.out_const(0, Tensor::from<float>(DType::kF32, {static_cast<int64_t>(v.size())}, v));
  }
  if (k == "value_ints") {
    std::vector<int64_t> v(a->ints().begin(), a->ints().end());
    return n.out_const(0, Tensor::from<int64_t>(DType::kI64, {static_cast<int64_t>(v.size())}, v));
  }
  n.failf("attribute '{}' is not supported (rlx has no string or sparse tensors)", k);
}

void cast_to(NodeCtx& n, DType to) {
  if (auto s = n.sym(0); s && (is_integer(to) || to == DType::kBool) && n.in(0)->sym) {
    bool ok = true;
    for (auto& e : s->v) {
      if (e.is_static())
        e = SymInt(wrap_int(to, e.coef));
      else
        ok = ok && to != DType::kBool;
    }
    if (ok) {
      s->dtype = to;
      return n.out_sym(0, *s);
    }
  }
  // Small float constants convert on the host, so constant chains (Cast -> Range) stay known.
  if (auto k = n.konst(0);
      k && k->numel() <= kMaxSymElements && k->dtype() != DType::kC64 && to != DType::kC64) {
    Tensor out(to, k->shape());
    for (int64_t i = 0; i < k->numel(); ++i) {
      double v = k->scalar_at(i);
      switch (to) {
        case DType::kF32:
          out.as<float>()[i] = static_cast<float>(v);
          break;
        case DType::kF64:
          out.as<double>()[i] = v;
          break;
        case DType::kF16:
          out.as<uint16_t>()[i] = f32_to_f16(static_cast<float>(v));
          break;
        case DType::kBF16:
          out.as<uint16_t>()[i] = f32_to_bf16(static_cast<float>(v));
          break;
        case DType::kBool:
          out.as<uint8_t>()[i] = v != 0;
          break;
        default: {
          // float -> integer truncates toward zero (NaN -> 0), then wraps, like the kernels.
          int64_t iv = k->dtype() == DType::kI64 ? k->as<int64_t>()[i]
                       : std::isnan(v)           ? 0
                       : v >= 9.2e18             ? INT64_MAX
                       : v <= -9.2e18            ? INT64_MIN
                                                 : static_cast<int64_t>(v);
          set_int(out, i, iv);
        }
      }
    }
    return n.out_const(0, out);
  }
  n.out(0, n.b.convert(n.x(0), to));
}

// Casts from or to a type rlx carries (carried_types.h): small floats go through their codes,
// small integers wrap like any narrowing integer conversion.
void cast_carried(NodeCtx& n, int to_t) {
  GraphBuilder& b = n.b;
  auto from_c = carried_type(n.in(0)->onnx_type);
  auto to_c = carried_type(to_t);
  ValueId x = n.x(0);
  if (from_c && from_c->float_code) x = decode_small_float(b, x, from_c->onnx_type);
  DType xd = b.type(x).dtype;
  if (!to_c) {
    auto to = dtype_from_onnx(to_t);
    if (!to) n.failf("casts to {} are not supported", describe_onnx_dtype(to_t));
    return n.out(0, b.convert(x, *to));
  }
  ValueId y;
  if (to_c->float_code) {
    ValueId xf = xd == DType::kF64 ? x : b.convert(x, DType::kF32);
    y = encode_small_float(b, xf, to_t, n.attr_i("saturate", 1) != 0);
  } else {
    y = wrap_small_int(b, b.convert(x, DType::kI64), *to_c);
  }
  n.out(0, y);
  n.cv.lookup(n.node.output(0))->onnx_type = to_t;
}

Tensor filled(DType dt, std::vector<int64_t> shape, const Tensor& value) {
  Tensor t(dt, std::move(shape));
  size_t es = dtype_size(dt);
  for (int64_t i = 0; i < t.numel(); ++i)
    std::memcpy(static_cast<char*>(t.data()) + i * es, value.data(), es);
  return t;
}

}  // namespace

void register_shape_ops(OpTable& t) {
  t["Constant"] = constant_node;
  t["Identity"] = [](NodeCtx& n) {
    Val v = *n.in(0);
    n.out_val(0, v);
  };
  t["Shape"] = [](NodeCtx& n) {
    const Shape& s = n.shape(0);
    int64_t r = static_cast<int64_t>(s.size());
    int64_t start = n.attr_i("start", 0), end = n.attr_i("end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = std::clamp<int64_t>(start, 0, r);
    end = std::clamp<int64_t>(end, start, r);
    SymTensor out;
    out.shape = {end - start};
    for (int64_t i = start; i < end; ++i) out.v.push_back(SymInt::from_dim(s[i]));
    n.out_sym(0, out);
  };
  t["Size"] = [](NodeCtx& n) {
    SymTensor out;
    SymInt p(1);
    for (const Dim& d : n.shape(0)) p = sym_mul(p, SymInt::from_dim(d));
    out.v = {p};
    n.out_sym(0, out);
  };
  t["Reshape"] = [](NodeCtx& n) {
    std::vector<SymInt> spec;
    if (n.opset < 5) {
      for (int64_t v : n.attr_ints("shape")) spec.emplace_back(v);
    } else {
      spec = n.need_syms(1, "the target shape");
    }
    reshape_to(n, reshape_target(n, n.shape(0), spec, n.attr_i("allowzero", 0) != 0));
  };
  t["Flatten"] = [](NodeCtx& n) {
    const Shape& s = n.shape(0);
    int64_t r = static_cast<int64_t>(s.size());
    int64_t axis = n.attr_i("axis", 1);
    if (axis < 0) axis += r;
    if (axis < 0 || axis > r)
      n.failf("axis {} is out of range for rank {}", n.attr_i("axis", 1), r);
    Shape lead(s.begin(), s.begin() + axis), tail(s.begin() + axis, s.end());
    reshape_to(n, Shape{dim_product(lead), dim_product(tail)});
  };
  t["Squeeze"] = [](NodeCtx& n) {
    const Shape& s = n.shape(0);
    auto axes = axes_operand(n, 13, 1, "axes");
    Shape out;
    if (axes.empty()) {
      for (const Dim& d : s)
        if (!(d.is_static() && d.value == 1)) out.push_back(d);
    } else {
      axes = norm_axes(n, axes, static_cast<int64_t>(s.size()));
      for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) {
        bool drop = std::find(axes.begin(), axes.end(), i) != axes.end();
        if (drop && !(s[i].is_static() && s[i].value == 1))
          n.failf("dim {} has size {}, only size-1 dims can be squeezed", i, s[i].str());
        if (!drop) out.push_back(s[i]);
      }
    }
    reshape_to(n, out);
  };
  t["Unsqueeze"] = [](NodeCtx& n) {
    const Shape& s = n.shape(0);
    auto axes = axes_operand(n, 13, 1, "axes");
    int64_t r = static_cast<int64_t>(s.size() + axes.size());
    axes = norm_axes(n, axes, r);
    Shape out;
    size_t k = 0;
    for (int64_t i = 0; i < r; ++i) {
      if (std::find(axes.begin(), axes.end(), i) != axes.end())
        out.push_back(1);
      else
        out.push_back(s.at(k++));
    }
    reshape_to(n, out);
  };
  t["Transpose"] = [](NodeCtx& n) {
    int64_t r = n.rank(0);
    std::vector<int64_t> perm = n.attr_ints("perm");
    if (!n.has_attr("perm"))
      for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
    if (static_cast<int64_t>(perm.size()) != r)
      n.failf("perm has {} entries for rank {}", perm.size(), r);
    for (int64_t& p : perm) p = n.norm_axis(p, r);
    bool identity = true;
    for (int64_t i = 0; i < r; ++i) identity = identity && perm[i] == i;
    if (identity) return n.out_val(0, *n.in(0));
    n.out(0, n.b.transpose(n.x(0), perm));
  };
  t["Concat"] = [](NodeCtx& n) {
    if (n.num_inputs() < 1) n.fail("needs at least one input");
    int64_t r = n.rank(0);
    if (r == 0) n.fail("cannot concatenate scalars (Concat needs operands of rank 1 or more)");
    int64_t axis = n.axis_attr("axis", 0, std::max<int64_t>(r, 1));
    for (int i = 1; i < n.num_inputs(); ++i)
      if (n.has(i) && n.rank(i) != r)
        n.failf("operand {} has rank {}, operand 0 rank {}: Concat needs equal ranks", i,
                n.rank(i), r);
    // Host fold: every operand known (shape vectors being assembled).
    std::vector<SymTensor> syms;
    for (int i = 0; i < n.num_inputs(); ++i)
      if (n.has(i))
        if (auto s = n.sym(i)) syms.push_back(*s);
    int present = 0;
    for (int i = 0; i < n.num_inputs(); ++i) present += n.has(i);
    if (static_cast<int>(syms.size()) == present && present > 0) {
      SymTensor out = syms[0];
      std::vector<int64_t> shape = out.shape;
      if (shape.empty()) n.fail("cannot concatenate scalars");
      shape[axis] = 0;
      int64_t outer = 1;
      for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
      for (auto& s : syms) {
        if (s.shape.size() != shape.size()) n.fail("operands have different ranks");
        shape[axis] += s.shape[axis];
      }
      out.v.clear();
      for (int64_t o = 0; o < outer; ++o)
        for (auto& s : syms) {
          int64_t chunk = outer ? s.numel() / std::max<int64_t>(outer, 1) : 0;
          out.v.insert(out.v.end(), s.v.begin() + o * chunk, s.v.begin() + (o + 1) * chunk);
        }
      out.shape = shape;
      return n.out_sym(0, out);
    }
    std::vector<ValueId> xs;
    for (int i = 0; i < n.num_inputs(); ++i) {
      if (!n.has(i)) continue;
      // Empty operands add nothing (and may carry a placeholder shape in other dims).
      const Dim& d = n.shape(i).at(axis);
      if (d.is_static() && d.value == 0 && present > 1) continue;
      xs.push_back(n.x(i));
    }
    if (xs.empty()) xs.push_back(n.x(0));
    n.out(0, n.b.concat(xs, axis));
  };
  t["Expand"] = [](NodeCtx& n) {
    Shape target = shape_from_syms(n, n.need_syms(1, "the target shape"), "the target shape");
    Shape out = broadcast_shapes(n.shape(0), target);
    // Folded on the host only while the result is small, as every fold is (kMaxSymElements):
    // an Expand to a huge shape is a graph op, never a host vector of that size.
    if (auto s = n.sym(0); s && is_static(out) && fits_sym(as_static(n, out, "the result"))) {
      SymTensor shape_src;
      shape_src.shape = as_static(n, out, "the result");
      shape_src.v.assign(num_elements(shape_src.shape), SymInt(0));
      if (auto r = fold_binary(*s, shape_src, s->dtype,
                               [](const SymInt& a, const SymInt&) { return a; }))
        return n.out_sym(0, *r);
    }
    n.out(0, n.b.broadcast_to(n.x(0), out));
  };
  t["Tile"] = [](NodeCtx& n) {
    auto reps = n.need_ints(1, "repeats");
    const Shape& s = n.shape(0);
    if (reps.size() != s.size())
      n.failf("repeats has {} entries for rank {}", reps.size(), s.size());
    Shape wide, spread, out;
    IntList dims;
    for (size_t i = 0; i < s.size(); ++i) {
      if (reps[i] < 0) n.fail("repeats must be non-negative");
      wide.push_back(reps[i]);
      wide.push_back(s[i]);
      dims.push_back(static_cast<int64_t>(2 * i + 1));
      out.push_back(dim_product({Dim(reps[i]), s[i]}));
    }
    ValueId x = n.b.broadcast_in_dim(n.x(0), wide, dims);
    n.out(0, n.b.reshape(x, out));
  };
  t["ConstantOfShape"] = [](NodeCtx& n) {
    Tensor value = n.has_attr("value") ? n.attr_tensor("value") : Tensor(DType::kF32, {1});
    if (value.numel() != 1) n.fail("value must hold exactly one element");
    Shape s = shape_from_syms(n, n.need_syms(0, "the shape"), "the shape");
    if (is_static(s) && num_elements(as_static(n, s, "the shape")) <= kMaxSymElements)
      return n.out_const(0, filled(value.dtype(), as_static(n, s, "the shape"), value));
    Tensor scalar(value.dtype(), {});
    std::memcpy(scalar.data(), value.data(), dtype_size(value.dtype()));
    n.out(0, n.b.broadcast_in_dim(n.b.constant(scalar), s, {}));
  };
  t["Range"] = [](NodeCtx& n) {
    DType dt = n.dtype(0);
    auto start = n.konst(0), limit = n.konst(1), delta = n.konst(2);
    if (start && limit && delta) {
      for (const auto* t : {&*start, &*limit, &*delta})
        if (t->numel() != 1) n.failf("start, limit and delta must be scalars, got {} elements", t->numel());
      double s0 = start->scalar_at(0), l = limit->scalar_at(0), d = delta->scalar_at(0);
      if (d == 0) n.fail("delta is 0");
      double fc = std::max(std::ceil((l - s0) / d), 0.0);
      if (!(fc < 1e12)) n.fail("the range has too many elements");
      auto count = static_cast<int64_t>(fc);
      n.check_count(count, "the range");
      Tensor out(dt, {count});
      for (int64_t i = 0; i < count; ++i) {
        switch (dt) {
          case DType::kF32:
            out.as<float>()[i] =
                static_cast<float>(start->as<float>()[0] + i * delta->as<float>()[0]);
            break;
          case DType::kF64:
            out.as<double>()[i] = s0 + i * d;
            break;
          case DType::kI64:
            out.as<int64_t>()[i] = start->as<int64_t>()[0] + i * delta->as<int64_t>()[0];
            break;
          case DType::kI32:
            out.as<int32_t>()[i] =
                static_cast<int32_t>(start->as<int32_t>()[0] + i * delta->as<int32_t>()[0]);
            break;
          case DType::kI16:
            out.as<int16_t>()[i] =
                static_cast<int16_t>(start->as<int16_t>()[0] + i * delta->as<int16_t>()[0]);
            break;
          case DType::kF16:
            out.as<uint16_t>()[i] = f32_to_f16(static_cast<float>(s0 + i * d));
            break;
          case DType::kBF16:
            out.as<uint16_t>()[i] = f32_to_bf16(static_cast<float>(s0 + i * d));
            break;
          default:
            n.failf("dtype {} is not supported", dtype_name(dt));
        }
      }
      return n.out_const(0, out);
    }
    if (is_float(dt)) {
      n.need_const(0, "start"), n.need_const(1, "limit"), n.need_const(2, "delta");
      n.fail("start, limit and delta must be known when the model is compiled");
    }
    // A symbolic limit: 0, 1, ..., limit - 1 as an iota over a symbolic dim.
    auto s = n.need_syms(0, "start"), l = n.need_syms(1, "limit"), d = n.need_syms(2, "delta");
    if (!(s[0].is_static() && s[0].coef == 0 && d[0].is_static() && d[0].coef == 1))
      n.failf("a symbolic limit ({}) needs start 0 and delta 1", l[0].str());
    auto dim = l[0].to_dim();
    if (!dim) n.fail("the limit is negative");
    n.out(0, iota(n.b, Shape{*dim}, 0, dt));
  };
  t["Cast"] = [](NodeCtx& n) {
    int to_t = static_cast<int>(n.attr_i("to", 0));
    if (carried_type(to_t) || n.in(0)->onnx_type) return cast_carried(n, to_t);
    auto to = dtype_from_onnx(to_t);
    if (!to) n.failf("casts to {} are not supported", describe_onnx_dtype(to_t));
    cast_to(n, *to);
  };
  t["CastLike"] = [](NodeCtx& n) {
    int to_t = n.in(1)->onnx_type ? n.in(1)->onnx_type : onnx_from_dtype(n.dtype(1));
    if (n.in(1)->onnx_type || n.in(0)->onnx_type) return cast_carried(n, to_t);
    cast_to(n, n.dtype(1));
  };
  t["Dropout"] = [](NodeCtx& n) {
    // Training mode drops at random; only a ratio of 0 (the identity) is supported there.
    bool training = n.opset >= 12 ? n.has(2) && n.need_scalar(2, "training_mode") != 0
                                  : n.attr_i("is_test", 1) == 0 && n.opset < 7;
    if (training) {
      double ratio =
          n.opset >= 12 ? (n.has(1) ? n.need_scalar(1, "ratio") : 0.5) : n.attr_f("ratio", 0.5f);
      if (ratio != 0)
        n.fail("training mode with a non-zero ratio drops at random; rlx imports inference graphs");
    }
    n.out_val(0, *n.in(0));
    if (n.wants(1)) {
      DType md = n.opset >= 10 ? DType::kBool : n.dtype(0);
      n.out(1, n.b.broadcast_in_dim(n.b.scalar(md, 1.0), n.shape(0), {}));
    }
  };
  t["DepthToSpace"] = [](NodeCtx& n) {
    auto s = static_shape(n, n.type(0), "the input");
    if (s.size() != 4) n.fail("needs a rank-4 input");
    int64_t bs = n.attr_i("blocksize", 0), N = s[0], C = s[1], H = s[2], W = s[3];
    if (bs <= 0 || C % (bs * bs)) n.failf("blocksize {} does not divide {} channels", bs, C);
    bool crd = n.attr_s("mode", "DCR") == "CRD";
    int64_t c = C / (bs * bs);
    ValueId x = crd ? n.b.reshape(n.x(0), Shape{N, c, bs, bs, H, W})
                    : n.b.reshape(n.x(0), Shape{N, bs, bs, c, H, W});
    x = n.b.transpose(x, crd ? IntList{0, 1, 4, 2, 5, 3} : IntList{0, 3, 4, 1, 5, 2});
    n.out(0, n.b.reshape(x, Shape{N, c, H * bs, W * bs}));
  };
  t["SpaceToDepth"] = [](NodeCtx& n) {
    auto s = static_shape(n, n.type(0), "the input");
    if (s.size() != 4) n.fail("needs a rank-4 input");
    int64_t bs = n.attr_i("blocksize", 0), N = s[0], C = s[1], H = s[2], W = s[3];
    if (bs <= 0 || H % bs || W % bs) n.failf("blocksize {} does not divide the spatial dims", bs);
    ValueId x = n.b.reshape(n.x(0), Shape{N, C, H / bs, bs, W / bs, bs});
    x = n.b.transpose(x, IntList{0, 3, 5, 1, 2, 4});
    n.out(0, n.b.reshape(x, Shape{N, C * bs * bs, H / bs, W / bs}));
  };
  t["EyeLike"] = [](NodeCtx& n) {
    auto s = static_shape(n, n.type(0), "the input");
    if (s.size() != 2) n.fail("needs a rank-2 input");
    DType dt = n.dtype(0);
    if (n.has_attr("dtype")) {
      auto d = dtype_from_onnx(static_cast<int>(n.attr_i("dtype", 0)));
      if (!d) n.fail("unsupported dtype");
      dt = *d;
    }
    int64_t k = n.attr_i("k", 0);
    Shape sh{s[0], s[1]};
    ValueId diff = n.b.sub(iota(n.b, sh, 1), iota(n.b, sh, 0));
    ValueId on = n.b.binary("eq", diff, full_like(n.b, diff, static_cast<double>(k)));
    n.out(0, n.b.convert(on, dt));
  };
}

}  // namespace rlx::onnx
