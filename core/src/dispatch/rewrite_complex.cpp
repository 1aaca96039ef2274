// split-complex: a c64 node on a target without a complex kernel, computed on its real and
// imaginary parts. Operands are taken apart with Real/Imag and results put together with Complex
// (ops_complex.cpp: views of the c64 buffers as f32 pairs); between two split nodes the
// canonicalizer removes the put-together-then-taken-apart pair, so a chain of complex ops is one
// chain of f32 kernels. The formulas are the textbook ones, chosen where they differ for f32
// range and cancellation (division and magnitude scaled by the larger part, the stable square
// root), and without bool values where a branch-free form exists, since HLSL targets store no
// bool; atan2 is a polynomial (Abramowitz and Stegun 4.4.49, |error| <= 2e-8) because MIR has
// no atan.
#include "dispatch/rewrite_complex.h"

#include <fmt/format.h>

#include <limits>
#include <numbers>
#include <set>

#include "rlx/core/builder.h"
#include "rlx/core/error.h"

namespace rlx {

namespace {

struct Parts {
  ValueId re, im;
};

class ComplexBuilder {
 public:
  explicit ComplexBuilder(GraphBuilder& b) : b_(b) {}

  Parts split(ValueId v) { return {b_.op("Real", {v}), b_.op("Imag", {v})}; }

  // max(|re|, |im|), at least the smallest normal f32, so dividing by it is finite.
  ValueId scale(Parts x) {
    const ValueId hi = b_.binary("max", abs(x.re), abs(x.im));
    return b_.binary("max", hi, k(hi, std::numeric_limits<float>::min()));
  }
  ValueId join(Parts p) { return b_.op("Complex", {p.re, p.im}); }

  ValueId k(ValueId like, double v) { return b_.full_like(like, v); }
  ValueId neg(ValueId x) { return b_.unary("neg", x); }
  ValueId abs(ValueId x) { return b_.unary("abs", x); }
  ValueId sel(ValueId p, ValueId a, ValueId c) { return b_.select(p, a, c); }
  ValueId cmp(const char* op, ValueId a, ValueId c) { return b_.binary(op, a, c); }

  Parts mul(Parts x, Parts y) {
    return {b_.sub(b_.mul(x.re, y.re), b_.mul(x.im, y.im)),
            b_.add(b_.mul(x.re, y.im), b_.mul(x.im, y.re))};
  }

  // Both operands scaled by 1 / max(|c|, |d|) first, so c^2 + d^2 never overflows or
  // underflows (the idea of Smith's division, with no branch: HLSL targets hold no bool).
  Parts div(Parts x, Parts y) {
    const ValueId s = b_.div(k(y.re, 1.0), scale(y));
    const ValueId c = b_.mul(y.re, s), d = b_.mul(y.im, s);
    const ValueId den = b_.add(b_.mul(c, c), b_.mul(d, d));
    const ValueId re = b_.add(b_.mul(x.re, c), b_.mul(x.im, d));
    const ValueId im = b_.sub(b_.mul(x.im, c), b_.mul(x.re, d));
    return {b_.mul(b_.div(re, den), s), b_.mul(b_.div(im, den), s)};
  }

  // |x| = hi sqrt(1 + (lo / hi)^2) with hi, lo the larger and smaller part sizes: no square of
  // a part, so parts near the f32 limit do not overflow; no branch (zero is hi = 0). Both parts
  // infinite gives NaN, not infinity.
  ValueId magnitude(Parts x) {
    const ValueId ar = abs(x.re), ai = abs(x.im);
    const ValueId hi = b_.binary("max", ar, ai), lo = b_.binary("min", ar, ai);
    const ValueId r = b_.div(lo, scale(x));
    return b_.mul(hi, b_.unary("sqrt", b_.add(k(r, 1.0), b_.mul(r, r))));
  }

  ValueId atan2(ValueId y, ValueId x) {
    static constexpr double kA[] = {1.0,           -0.3333314528, 0.1999355085,
                                    -0.1420889944, 0.1065626393,  -0.0752896400,
                                    0.0429096138,  -0.0161657367, 0.0028662257};
    const ValueId ax = abs(x), ay = abs(y);
    const ValueId hi = b_.binary("max", ax, ay), lo = b_.binary("min", ax, ay);
    const ValueId zero = cmp("eq", hi, k(hi, 0.0));
    const ValueId t = sel(zero, k(hi, 0.0), b_.div(lo, sel(zero, k(hi, 1.0), hi)));
    const ValueId t2 = b_.mul(t, t);
    ValueId p = k(t, kA[8]);
    for (int i = 7; i >= 0; --i) p = b_.add(b_.mul(p, t2), k(t, kA[i]));
    ValueId r = b_.mul(p, t);
    r = sel(cmp("gt", ay, ax), b_.sub(k(r, std::numbers::pi / 2), r), r);
    r = sel(cmp("lt", x, k(x, 0.0)), b_.sub(k(r, std::numbers::pi), r), r);
    return sel(cmp("lt", y, k(y, 0.0)), neg(r), r);
  }

  Parts exp(Parts x) {
    const ValueId e = b_.unary("exp", x.re);
    return {b_.mul(e, b_.unary("cos", x.im)), b_.mul(e, b_.unary("sin", x.im))};
  }

  Parts log(Parts x) { return {b_.unary("log", magnitude(x)), atan2(x.im, x.re)}; }

  // The principal root without cancellation: t = sqrt((|x| + |re|) / 2) is the larger part's
  // size, the other part is im / 2t.
  Parts sqrt(Parts x) {
    const ValueId t = b_.unary("sqrt", b_.mul(b_.add(magnitude(x), abs(x.re)), k(x.re, 0.5)));
    const ValueId safe = sel(cmp("eq", t, k(t, 0.0)), k(t, 1.0), t);
    const ValueId u = b_.div(x.im, b_.mul(safe, k(t, 2.0)));
    const ValueId right = cmp("ge", x.re, k(x.re, 0.0));
    const ValueId signed_t = sel(cmp("lt", x.im, k(x.im, 0.0)), neg(t), t);
    return {sel(right, t, abs(u)), sel(right, u, signed_t)};
  }

  // sin(a + ib) = sin a cosh b + i cos a sinh b; cos(a + ib) = cos a cosh b - i sin a sinh b.
  Parts sin_cos(Parts x, bool is_sin) {
    const ValueId ep = b_.unary("exp", x.im), em = b_.unary("exp", neg(x.im));
    const ValueId ch = b_.mul(b_.add(ep, em), k(ep, 0.5)), sh = b_.mul(b_.sub(ep, em), k(ep, 0.5));
    const ValueId s = b_.unary("sin", x.re), c = b_.unary("cos", x.re);
    if (is_sin) return {b_.mul(s, ch), b_.mul(c, sh)};
    return {b_.mul(c, ch), neg(b_.mul(s, sh))};
  }

  // tanh(a + ib) = (tanh a + i tan b) / (1 + i tanh a tan b), multiplied through by cos^2 b so
  // no tangent is taken: re = t / d, im = sin b cos b (1 - t^2) / d, d = cos^2 b + t^2 sin^2 b,
  // t = tanh a. 1 - t^2 is 4u / (1 + u)^2 with u = exp(-2|a|): no cancellation, and nothing
  // overflows for large |a| (where cosh 2a would).
  Parts tanh(Parts x) {
    const ValueId t = b_.unary("tanh", x.re);
    const ValueId s = b_.unary("sin", x.im), c = b_.unary("cos", x.im);
    const ValueId u = b_.unary("exp", b_.mul(abs(x.re), k(x.re, -2.0)));
    const ValueId one_u = b_.add(k(u, 1.0), u);
    const ValueId sech2 = b_.div(b_.mul(u, k(u, 4.0)), b_.mul(one_u, one_u));
    const ValueId ts = b_.mul(t, s);
    const ValueId d = b_.add(b_.mul(c, c), b_.mul(ts, ts));
    return {b_.div(t, d), b_.div(b_.mul(b_.mul(s, c), sech2), d)};
  }

  // logistic z = (1 + tanh(z / 2)) / 2: exp(-z) would overflow for a large negative real part.
  Parts logistic(Parts x) {
    Parts t = tanh({b_.mul(x.re, k(x.re, 0.5)), b_.mul(x.im, k(x.im, 0.5))});
    return {b_.mul(b_.add(k(t.re, 1.0), t.re), k(t.re, 0.5)), b_.mul(t.im, k(t.im, 0.5))};
  }

  Parts pow(Parts x, Parts y) {
    Parts p = exp(mul(y, log(x)));
    // x^0 is 1 for every x, 0 included (exp(0 * log 0) would be NaN).
    const ValueId y0 =
        b_.binary("and", cmp("eq", y.re, k(y.re, 0.0)), cmp("eq", y.im, k(y.im, 0.0)));
    return {sel(y0, k(p.re, 1.0), p.re), sel(y0, k(p.im, 0.0), p.im)};
  }

  // The product of the elements along the last dim, by halving: log2(n) complex multiplies.
  Parts product_last(Parts x) {
    Shape s = b_.type(x.re).shape;
    const int64_t rank = static_cast<int64_t>(s.size());
    int64_t n = s.back().value;
    auto cut = [&](ValueId v, int64_t from, int64_t to) {
      IntList start(rank, 0), limit(rank, -1);
      start.back() = from, limit.back() = to;
      return b_.slice(v, start, limit);
    };
    if (n == 0) {
      Shape one_shape = s;
      one_shape.back() = Dim(1);
      const ValueId ones = b_.broadcast_in_dim(b_.scalar(DType::kF32, 1.0), one_shape, {});
      x = {ones, b_.full_like(ones, 0.0)};
      n = 1;
    }
    while (n > 1) {
      const int64_t h = n / 2;
      Parts pr =
          mul({cut(x.re, 0, h), cut(x.im, 0, h)}, {cut(x.re, h, 2 * h), cut(x.im, h, 2 * h)});
      if (n % 2) {
        pr.re = b_.concat({pr.re, cut(x.re, 2 * h, n)}, rank - 1);
        pr.im = b_.concat({pr.im, cut(x.im, 2 * h, n)}, rank - 1);
      }
      x = pr;
      n = h + n % 2;
    }
    s.pop_back();
    return {b_.reshape(x.re, s), b_.reshape(x.im, s)};
  }

 private:
  GraphBuilder& b_;
};

bool is_c64(const GraphBuilder& b, ValueId v) {
  return b.type(v).dtype == DType::kC64;
}

Parts product(ComplexBuilder& c, GraphBuilder& b, Parts x, const IntList& axes_in) {
  const int64_t rank = b.type(x.re).rank();
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes_in) reduced[a < 0 ? a + rank : a] = true;
  IntList perm;
  Shape kept, moved = {};
  int64_t n = 1;
  const Shape s = b.type(x.re).shape;
  for (int64_t d = 0; d < rank; ++d)
    if (!reduced[d]) perm.push_back(d), kept.push_back(s[d]);
  for (int64_t d = 0; d < rank; ++d)
    if (reduced[d]) {
      if (!s[d].is_static())
        throw_user_error(fmt::format("reduce_prod of c64 over dim {} needs a static size, got {}",
                                     d, s[d].str()));
      perm.push_back(d), n *= s[d].value;
    }
  Shape flat = kept;
  flat.push_back(Dim(n));
  auto arrange = [&](ValueId v) { return b.reshape(b.transpose(v, perm), flat); };
  return c.product_last({arrange(x.re), arrange(x.im)});
}

std::vector<ValueId> build_split(GraphBuilder& b, const Node& n, const std::vector<ValueId>& in) {
  ComplexBuilder c(b);
  const std::string& op = n.op;
  auto parts = [&](size_t i) { return c.split(in[i]); };
  auto each = [&](const std::vector<ValueId>& re_in, const std::vector<ValueId>& im_in) {
    return std::vector<ValueId>{c.join({b.op(op, re_in, n.attrs), b.op(op, im_in, n.attrs)})};
  };
  auto out = [&](Parts p) { return std::vector<ValueId>{c.join(p)}; };

  if (op == "add" || op == "sub") {
    Parts x = parts(0), y = parts(1);
    return out({b.binary(op, x.re, y.re), b.binary(op, x.im, y.im)});
  }
  if (op == "mul") return out(c.mul(parts(0), parts(1)));
  if (op == "div") return out(c.div(parts(0), parts(1)));
  if (op == "pow") return out(c.pow(parts(0), parts(1)));
  if (op == "neg") {
    Parts x = parts(0);
    return out({c.neg(x.re), c.neg(x.im)});
  }
  if (op == "abs") return {c.magnitude(parts(0))};
  if (op == "exp") return out(c.exp(parts(0)));
  if (op == "log") return out(c.log(parts(0)));
  if (op == "sqrt") return out(c.sqrt(parts(0)));
  if (op == "rsqrt") {
    Parts r = c.sqrt(parts(0));
    return out(c.div({c.k(r.re, 1.0), c.k(r.re, 0.0)}, r));
  }
  if (op == "sin" || op == "cos") return out(c.sin_cos(parts(0), op == "sin"));
  if (op == "tanh") return out(c.tanh(parts(0)));
  if (op == "logistic") return out(c.logistic(parts(0)));
  if (op == "sign") {
    Parts x = parts(0);
    const ValueId m = c.magnitude(x);
    const ValueId zero = c.cmp("eq", m, c.k(m, 0.0)), safe = c.sel(zero, c.k(m, 1.0), m);
    return out(
        {c.sel(zero, c.k(m, 0.0), b.div(x.re, safe)), c.sel(zero, c.k(m, 0.0), b.div(x.im, safe))});
  }
  if (op == "eq" || op == "ne") {
    Parts x = parts(0), y = parts(1);
    return {
        b.binary(op == "eq" ? "and" : "or", b.binary(op, x.re, y.re), b.binary(op, x.im, y.im))};
  }
  if (op == "convert") {
    const DType to = n.attr_dtype("dtype");
    if (is_c64(b, in[0])) {
      if (to == DType::kC64) return {in[0]};
      // A complex number cast to a real type keeps its real part (numpy's astype, C's cast).
      return {b.convert(parts(0).re, to)};
    }
    const ValueId re = b.convert(in[0], DType::kF32);
    return out({re, b.full_like(re, 0.0)});
  }
  if (op == "select") {
    Parts x = parts(1), y = parts(2);
    return out({b.select(in[0], x.re, y.re), b.select(in[0], x.im, y.im)});
  }
  if (op == "broadcast_in_dim" || op == "reshape" || op == "transpose" || op == "slice" ||
      op == "reduce_sum") {
    Parts x = parts(0);
    return each({x.re}, {x.im});
  }
  if (op == "concat" || op == "pad") {
    std::vector<ValueId> re, im;
    for (size_t i = 0; i < in.size(); ++i) {
      Parts x = parts(i);
      re.push_back(x.re), im.push_back(x.im);
    }
    return each(re, im);
  }
  if (op == "gather") {
    Parts x = parts(0);
    return each({x.re, in[1]}, {x.im, in[1]});
  }
  if (op == "scatter") {
    Parts x = parts(0), u = parts(2);
    return each({x.re, in[1], u.re}, {x.im, in[1], u.im});
  }
  if (op == "reduce_prod") return out(product(c, b, parts(0), n.attr_ints("axes")));
  if (op == "dot_general") {
    Parts x = parts(0), y = parts(1);
    auto dot = [&](ValueId l, ValueId r) { return b.op("dot_general", {l, r}, n.attrs); };
    return out({b.sub(dot(x.re, y.re), dot(x.im, y.im)), b.add(dot(x.re, y.im), dot(x.im, y.re))});
  }
  if (op == "constant") {
    const Tensor& t = n.attr_tensor("value");
    std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
    Tensor re(DType::kF32, shape), im(DType::kF32, shape);
    const float* v = t.as<float>();
    for (int64_t i = 0; i < t.numel(); ++i)
      re.as<float>()[i] = v[2 * i], im.as<float>()[i] = v[2 * i + 1];
    return out({b.constant(std::move(re)), b.constant(std::move(im))});
  }
  throw_user_error(fmt::format("split-complex has no complex form of {}", op));
}

}  // namespace

Rewrite split_complex() {
  Rewrite r;
  r.name = "split-complex";
  r.op = "*";
  r.summary = "c64 computed on f32 real and imaginary parts";
  r.applies = [](const Graph& g, const Node& n) {
    // The boundary ops are how the parts are reached; splitting them again would recurse.
    static const std::set<std::string> kBoundary = {"bitcast", "Real", "Imag", "Complex", "Conj"};
    if (kBoundary.count(n.op)) return Verdict::no(n.op + " is itself a complex boundary op");
    for (const auto* list : {&n.inputs, &n.outputs})
      for (ValueId v : *list)
        if (g.type(v).dtype == DType::kC64) return Verdict::yes();
    return Verdict::no("no c64 operand");
  };
  r.build = build_split;
  return r;
}

}  // namespace rlx
