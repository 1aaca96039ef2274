// A small host interpreter for MIR primitives on constants, with the cpu target's scalar
// semantics (f16/bf16/f32 computed in float and rounded per op, f64 in double, integers in int64
// wrapped to their width). It folds constant-only ONNX subgraphs (a Range's trip count computed
// from constants, window lengths, ...) so ops that need compile-time values get them.
#include "host_eval.h"

#include <cstdint>
#include <cmath>
#include <cstring>
#include <map>

#include "rlx/core/half.h"
#include "rlx/core/scalar_eval.h"

namespace rlx::onnx {

namespace {

struct HVal {
  DType dt = DType::kF32;
  std::vector<int64_t> shape;
  std::vector<double> f;   // float dtypes
  std::vector<int64_t> i;  // integers and bool
  bool is_f() const { return is_float(dt); }
  int64_t numel() const {
    return is_f() ? static_cast<int64_t>(f.size()) : static_cast<int64_t>(i.size());
  }
};

double round_to(DType d, double x) {
  switch (d) {
    case DType::kF16:
      return f16_to_f32(f32_to_f16(static_cast<float>(x)));
    case DType::kBF16:
      return bf16_to_f32(f32_to_bf16(static_cast<float>(x)));
    case DType::kF32:
      return static_cast<float>(x);
    default:
      return x;
  }
}

int64_t wrap(DType d, int64_t x) {
  switch (d) {
    case DType::kBool:
      return x != 0;
    case DType::kI8:
      return static_cast<int8_t>(x);
    case DType::kU8:
      return static_cast<uint8_t>(x);
    case DType::kI16:
      return static_cast<int16_t>(x);
    case DType::kI32:
      return static_cast<int32_t>(x);
    default:
      return x;
  }
}

std::optional<HVal> from_tensor(const Tensor& t) {
  if (t.dtype() == DType::kC64) return std::nullopt;
  HVal h;
  h.dt = t.dtype();
  h.shape = t.shape();
  for (int64_t k = 0; k < t.numel(); ++k) {
    if (h.is_f())
      h.f.push_back(t.scalar_at(k));
    else if (t.dtype() == DType::kI64)
      h.i.push_back(t.as<int64_t>()[k]);
    else
      h.i.push_back(static_cast<int64_t>(t.scalar_at(k)));
  }
  return h;
}

Tensor to_tensor(const HVal& h) {
  Tensor t(h.dt, h.shape);
  for (int64_t k = 0; k < h.numel(); ++k) {
    switch (h.dt) {
      case DType::kF32:
        t.as<float>()[k] = static_cast<float>(h.f[k]);
        break;
      case DType::kF64:
        t.as<double>()[k] = h.f[k];
        break;
      case DType::kF16:
        t.as<uint16_t>()[k] = f32_to_f16(static_cast<float>(h.f[k]));
        break;
      case DType::kBF16:
        t.as<uint16_t>()[k] = f32_to_bf16(static_cast<float>(h.f[k]));
        break;
      case DType::kI64:
        t.as<int64_t>()[k] = h.i[k];
        break;
      case DType::kI32:
        t.as<int32_t>()[k] = static_cast<int32_t>(h.i[k]);
        break;
      case DType::kI16:
        t.as<int16_t>()[k] = static_cast<int16_t>(h.i[k]);
        break;
      case DType::kI8:
        t.as<int8_t>()[k] = static_cast<int8_t>(h.i[k]);
        break;
      default:
        t.as<uint8_t>()[k] = static_cast<uint8_t>(h.i[k]);
        break;
    }
  }
  return t;
}

// Row-major strides. A tensor here holds at most max_elements elements, so a product that
// overflows belongs to one with a zero dim (no element is ever addressed): it saturates instead
// of wrapping.
std::vector<int64_t> strides(const std::vector<int64_t>& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int64_t d = static_cast<int64_t>(s.size()) - 2; d >= 0; --d)
    if (__builtin_mul_overflow(st[d + 1], s[d + 1], &st[d])) st[d] = INT64_MAX;
  return st;
}

// Output element k of shape `out` reads input element map(coords).
template <typename F>
HVal gather_map(const HVal& in, std::vector<int64_t> out, DType dt, F&& src_index) {
  HVal r;
  r.dt = dt;
  r.shape = out;
  int64_t n = num_elements(out);
  std::vector<int64_t> c(out.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t s = src_index(c);
    if (in.is_f())
      r.f.push_back(s < 0 ? 0.0 : in.f[s]);
    else
      r.i.push_back(s < 0 ? 0 : in.i[s]);
    for (int64_t d = static_cast<int64_t>(out.size()) - 1; d >= 0; --d) {
      if (++c[d] < out[d]) break;
      c[d] = 0;
    }
  }
  return r;
}

// The shared host semantics of MIR elementwise ops (rlx/core/scalar_eval.h).
std::optional<double> funary(const std::string& op, double x) { return scalar::float_unary(op, x); }
std::optional<double> fbinary(const std::string& op, double a, double b) {
  return scalar::float_binary(op, a, b);
}
std::optional<int64_t> ibinary(const std::string& op, int64_t a, int64_t b) {
  return scalar::int_binary(op, a, b);
}
template <typename T>
std::optional<bool> cmp(const std::string& op, T a, T b) {
  return scalar::compare(op, a, b);
}

std::optional<HVal> eval(const Node& n, const std::vector<const HVal*>& in,
                         const TensorType& out_t) {
  const std::string& op = n.op;
  if (!is_static(out_t.shape)) return std::nullopt;
  std::vector<int64_t> out = static_dims(out_t.shape);
  DType dt = out_t.dtype;
  HVal r;
  r.dt = dt;
  r.shape = out;
  if (op == "constant") return from_tensor(n.attr_tensor("value"));
  if (op == "convert") {
    const HVal& x = *in[0];
    for (int64_t k = 0; k < x.numel(); ++k) {
      if (is_float(dt))
        r.f.push_back(round_to(dt, x.is_f() ? x.f[k] : static_cast<double>(x.i[k])));
      else if (dt == DType::kBool)
        r.i.push_back(x.is_f() ? x.f[k] != 0 : x.i[k] != 0);
      else
        r.i.push_back(x.is_f() ? scalar::float_to_int(dt, x.f[k]) : wrap(dt, x.i[k]));
    }
    return r;
  }
  if (op == "select") {
    for (int64_t k = 0; k < in[0]->numel(); ++k) {
      const HVal& s = in[0]->i[k] ? *in[1] : *in[2];
      if (s.is_f())
        r.f.push_back(s.f[k]);
      else
        r.i.push_back(s.i[k]);
    }
    return r;
  }
  if (op == "iota") {
    int64_t d = n.attr_int("dim");
    auto st = strides(out);
    for (int64_t k = 0; k < num_elements(out); ++k) {
      int64_t v = (k / st[d]) % out[d];
      if (is_float(dt))
        r.f.push_back(static_cast<double>(v));
      else
        r.i.push_back(v);
    }
    return r;
  }
  if (in.size() == 1 && funary(op, 0) && in[0]->is_f()) {
    for (double x : in[0]->f) r.f.push_back(round_to(dt, *funary(op, x)));
    return r;
  }
  if (in.size() == 1 && (op == "neg" || op == "abs" || op == "sign" || op == "not") &&
      !in[0]->is_f()) {
    for (int64_t x : in[0]->i) {
      int64_t v = op == "neg"    ? static_cast<int64_t>(0 - static_cast<uint64_t>(x))
                  : op == "abs"  ? (x < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(x)) : x)
                  : op == "sign" ? (x > 0) - (x < 0)
                                 : (dt == DType::kBool ? !x : ~x);
      r.i.push_back(wrap(dt, v));
    }
    return r;
  }
  if (in.size() == 2 && in[0]->shape == in[1]->shape &&
      (cmp<double>(op, 0, 0) || fbinary(op, 0, 1) || ibinary(op, 0, 1))) {
    const HVal &a = *in[0], &b = *in[1];
    for (int64_t k = 0; k < a.numel(); ++k) {
      if (auto c = a.is_f() ? cmp(op, a.f[k], b.f[k]) : cmp(op, a.i[k], b.i[k])) {
        r.i.push_back(*c);
      } else if (a.is_f()) {
        auto v = fbinary(op, a.f[k], b.f[k]);
        if (!v) return std::nullopt;
        r.f.push_back(round_to(dt, *v));
      } else {
        auto v = ibinary(op, a.i[k], b.i[k]);
        if (!v) return std::nullopt;
        r.i.push_back(wrap(dt, *v));
      }
    }
    return r;
  }
  if (op == "reshape") {
    r.f = in[0]->f;
    r.i = in[0]->i;
    return r;
  }
  if (op == "broadcast_in_dim" || op == "transpose" || op == "slice") {
    const HVal& x = *in[0];
    auto st = strides(x.shape);
    if (op == "broadcast_in_dim") {
      const IntList& dims = n.attr_ints("dims");
      return gather_map(x, out, dt, [&](const std::vector<int64_t>& c) {
        int64_t s = 0;
        for (size_t i = 0; i < dims.size(); ++i) s += (x.shape[i] == 1 ? 0 : c[dims[i]]) * st[i];
        return s;
      });
    }
    if (op == "transpose") {
      const IntList& perm = n.attr_ints("perm");
      return gather_map(x, out, dt, [&](const std::vector<int64_t>& c) {
        int64_t s = 0;
        for (size_t i = 0; i < perm.size(); ++i) s += c[i] * st[perm[i]];
        return s;
      });
    }
    const IntList& start = n.attr_ints("start");
    IntList stride = n.has_attr("strides") ? n.attr_ints("strides") : IntList(start.size(), 1);
    return gather_map(x, out, dt, [&](const std::vector<int64_t>& c) {
      int64_t s = 0;
      for (size_t i = 0; i < c.size(); ++i) s += (start[i] + c[i] * stride[i]) * st[i];
      return s;
    });
  }
  if (op == "concat") {
    int64_t axis = n.attr_int("axis");
    if (axis < 0) axis += static_cast<int64_t>(out.size());
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= out[d];
    for (int64_t o = 0; o < outer; ++o)
      for (const HVal* x : in) {
        int64_t chunk = x->numel() / std::max<int64_t>(outer, 1);
        if (x->is_f())
          r.f.insert(r.f.end(), x->f.begin() + o * chunk, x->f.begin() + (o + 1) * chunk);
        else
          r.i.insert(r.i.end(), x->i.begin() + o * chunk, x->i.begin() + (o + 1) * chunk);
      }
    return r;
  }
  if (op == "gather") {
    const HVal& x = *in[0];
    int64_t axis = n.attr_int("axis");
    if (axis < 0) axis += static_cast<int64_t>(x.shape.size());
    int64_t outer = 1, inner = 1, len = x.shape[axis];
    for (int64_t d = 0; d < axis; ++d) outer *= x.shape[d];
    for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j : in[1]->i) {
        int64_t row = j < 0 ? j + len : j;
        if (row < 0 || row >= len) return std::nullopt;
        for (int64_t k = 0; k < inner; ++k) {
          int64_t s = (o * len + row) * inner + k;
          if (x.is_f())
            r.f.push_back(x.f[s]);
          else
            r.i.push_back(x.i[s]);
        }
      }
    return r;
  }
  if (op == "pad") {
    const HVal& x = *in[0];
    const IntList& lo = n.attr_ints("low");
    auto st = strides(x.shape);
    HVal g = gather_map(x, out, dt, [&](const std::vector<int64_t>& c) {
      int64_t s = 0;
      for (size_t i = 0; i < c.size(); ++i) {
        int64_t p = c[i] - lo[i];
        if (p < 0 || p >= x.shape[i]) return int64_t{-1};
        s += p * st[i];
      }
      return s;
    });
    // Padded places (marked -1 above read 0) take the pad value.
    auto st_out = strides(out);
    for (int64_t k = 0; k < num_elements(out); ++k) {
      bool inside = true;
      for (size_t i = 0; i < out.size(); ++i) {
        int64_t p = (k / st_out[i]) % out[i] - lo[i];
        inside = inside && p >= 0 && p < x.shape[i];
      }
      if (!inside) {
        if (g.is_f())
          g.f[k] = in[1]->f[0];
        else
          g.i[k] = in[1]->i[0];
      }
    }
    return g;
  }
  if (op.rfind("reduce_", 0) == 0) {
    const HVal& x = *in[0];
    IntList axes = n.attr_ints("axes");
    size_t rank = x.shape.size();
    std::vector<bool> red(rank, false);
    for (int64_t a : axes) red[a < 0 ? a + rank : a] = true;
    std::vector<int64_t> kept;
    for (size_t d = 0; d < rank; ++d) kept.push_back(red[d] ? 1 : x.shape[d]);
    auto kst = strides(kept), xst = strides(x.shape);
    int64_t nout = num_elements(kept);
    std::string kind = op.substr(7);
    double fid = kind == "sum" ? 0 : kind == "prod" ? 1 : kind == "max" ? -INFINITY : INFINITY;
    int64_t iid = kind == "sum" ? 0 : kind == "prod" ? 1 : kind == "max" ? INT64_MIN : INT64_MAX;
    std::vector<double> fa(nout, fid);
    std::vector<int64_t> ia(nout, iid);
    for (int64_t k = 0; k < x.numel(); ++k) {
      int64_t o = 0;
      for (size_t d = 0; d < rank; ++d) o += (red[d] ? 0 : (k / xst[d]) % x.shape[d]) * kst[d];
      if (x.is_f()) {
        double v = x.f[k];
        fa[o] = kind == "sum" ? fa[o] + v : kind == "prod" ? fa[o] * v : *fbinary(kind, fa[o], v);
      } else {
        int64_t v = x.i[k];
        ia[o] = *ibinary(kind == "sum" ? "add" : kind == "prod" ? "mul" : kind, ia[o], v);
      }
    }
    for (int64_t o = 0; o < nout; ++o) {
      if (x.is_f())
        r.f.push_back(round_to(dt, fa[o]));
      else
        r.i.push_back(wrap(dt, ia[o]));
    }
    return r;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::vector<Tensor>> host_eval(const Graph& g, int32_t first,
                                             const std::vector<ValueId>& outputs,
                                             int64_t max_elements) {
  std::map<ValueId, HVal> vals;
  for (int32_t k = first; k < static_cast<int32_t>(g.nodes.size()); ++k) {
    const Node& n = g.nodes[k];
    if (n.outputs.size() != 1 || !n.regions.empty()) return std::nullopt;
    std::vector<const HVal*> in;
    for (ValueId v : n.inputs) {
      auto it = vals.find(v);
      if (it == vals.end()) {
        // A value made before this node's conversion: only constants are known.
        int32_t p = g.values[v].producer;
        if (p < 0 || g.nodes[p].op != "constant") return std::nullopt;
        auto h = from_tensor(g.nodes[p].attr_tensor("value"));
        if (!h || h->numel() > max_elements) return std::nullopt;
        it = vals.emplace(v, std::move(*h)).first;
      }
      in.push_back(&it->second);
    }
    const TensorType& t = g.type(n.outputs[0]);
    if (!is_static(t.shape) || num_elements(static_dims(t.shape)) > max_elements)
      return std::nullopt;
    auto r = eval(n, in, t);
    if (!r) return std::nullopt;
    vals[n.outputs[0]] = std::move(*r);
  }
  std::vector<Tensor> out;
  for (ValueId v : outputs) {
    auto it = vals.find(v);
    if (it == vals.end()) return std::nullopt;
    out.push_back(to_tensor(it->second));
  }
  return out;
}

}  // namespace rlx::onnx
