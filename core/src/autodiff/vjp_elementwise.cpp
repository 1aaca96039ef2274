// Vector-Jacobian rules of the elementwise primitives. Each rule gets the node, its inputs and
// the cotangent g of its result, and returns one cotangent per input (kNoValue: none, i.e. zero).
#include <cmath>

#include "autodiff/vjp_util.h"

namespace rlx::autodiff {

namespace {

using Ins = std::vector<ValueId>;

// A rule of one input whose derivative is built from (x, y): returns g * dy/dx (its conjugate
// for c64: vjp_util.h).
GradientFn unary_rule(ValueId (*derivative)(GraphBuilder&, ValueId x, ValueId y)) {
  return [derivative](GraphBuilder& b, const Node& n, const Ins& in, const Ins& ct) -> Ins {
    return {b.mul(ct[0], conj_if_complex(b, derivative(b, in[0], n.outputs[0])))};
  };
}

// Piecewise-constant ops: zero almost everywhere.
GradientFn zero_rule() {
  return [](GraphBuilder&, const Node&, const Ins& in, const Ins&) {
    return Ins(in.size(), kNoValue);
  };
}

void unary_rules(Rules& r) {
  r["neg"] = [](GraphBuilder& b, const Node&, const Ins&, const Ins& ct) -> Ins {
    return {b.unary("neg", ct[0])};
  };
  // |z| of a c64 z is real: its cotangent g (f32) becomes g z / |z| (sign of a c64 is z / |z|).
  r["abs"] = [](GraphBuilder& b, const Node&, const Ins& in, const Ins& ct) -> Ins {
    const DType d = b.type(in[0]).dtype;
    return {b.mul(b.convert(ct[0], d), b.unary("sign", in[0]))};
  };
  r["exp"] = unary_rule([](GraphBuilder&, ValueId, ValueId y) { return y; });
  r["log"] = [](GraphBuilder& b, const Node&, const Ins& in, const Ins& ct) -> Ins {
    return {b.div(ct[0], conj_if_complex(b, in[0]))};
  };
  r["sqrt"] = [](GraphBuilder& b, const Node& n, const Ins&, const Ins& ct) -> Ins {
    return {b.div(b.mul(ct[0], fill(b, ct[0], 0.5)), conj_if_complex(b, n.outputs[0]))};
  };
  // d x^-1/2 = -1/2 x^-3/2 = -1/2 y / x
  r["rsqrt"] = unary_rule([](GraphBuilder& b, ValueId x, ValueId y) {
    return b.div(b.mul(y, fill(b, y, -0.5)), x);
  });
  r["tanh"] = unary_rule([](GraphBuilder& b, ValueId, ValueId y) {
    return b.sub(fill(b, y, 1.0), b.mul(y, y));
  });
  r["erf"] = unary_rule([](GraphBuilder& b, ValueId x, ValueId) {
    ValueId e = b.unary("exp", b.unary("neg", b.mul(x, x)));
    return b.mul(e, fill(b, x, 2.0 / std::sqrt(M_PI)));
  });
  r["sin"] = unary_rule([](GraphBuilder& b, ValueId x, ValueId) { return b.unary("cos", x); });
  r["cos"] = unary_rule([](GraphBuilder& b, ValueId x, ValueId) {
    return b.unary("neg", b.unary("sin", x));
  });
  r["logistic"] = unary_rule([](GraphBuilder& b, ValueId, ValueId y) {
    return b.mul(y, b.sub(fill(b, y, 1.0), y));
  });
  for (const char* op : {"sign", "floor", "ceil", "round"}) r[op] = zero_rule();
}

// max/min: the larger (smaller) operand takes the cotangent; a tie splits it evenly, as the
// subgradient a central difference sees there.
GradientFn extremum_rule(const char* strict) {
  std::string cmp = strict;
  return [cmp](GraphBuilder& b, const Node&, const Ins& in, const Ins& ct) -> Ins {
    ValueId win_a = mask(b, b.binary(cmp, in[0], in[1]), ct[0]);
    ValueId tie = b.mul(mask(b, b.binary("eq", in[0], in[1]), ct[0]), fill(b, ct[0], 0.5));
    ValueId share_a = b.add(win_a, tie);
    ValueId share_b = b.sub(fill(b, ct[0], 1.0), share_a);
    return {b.mul(ct[0], share_a), b.mul(ct[0], share_b)};
  };
}

void binary_rules(Rules& r) {
  r["add"] = [](GraphBuilder&, const Node&, const Ins&, const Ins& ct) -> Ins {
    return {ct[0], ct[0]};
  };
  r["sub"] = [](GraphBuilder& b, const Node&, const Ins&, const Ins& ct) -> Ins {
    return {ct[0], b.unary("neg", ct[0])};
  };
  r["mul"] = [](GraphBuilder& b, const Node&, const Ins& in, const Ins& ct) -> Ins {
    return {b.mul(ct[0], conj_if_complex(b, in[1])), b.mul(ct[0], conj_if_complex(b, in[0]))};
  };
  r["div"] = [](GraphBuilder& b, const Node& n, const Ins& in, const Ins& ct) -> Ins {
    ValueId ga = b.div(ct[0], conj_if_complex(b, in[1]));
    return {ga, b.unary("neg", b.mul(ga, conj_if_complex(b, n.outputs[0])))};
  };
  r["max"] = extremum_rule("gt");
  r["min"] = extremum_rule("lt");
  // d a^b = b a^(b-1) da + a^b log(a) db; log is taken only where a > 0 (elsewhere the b side is
  // 0, as for integer powers of negative bases).
  r["pow"] = [](GraphBuilder& b, const Node& n, const Ins& in, const Ins& ct) -> Ins {
    ValueId a = in[0], e = in[1], y = n.outputs[0];
    if (is_complex(b.type(a).dtype)) {  // the principal branch: log a is defined off zero
      ValueId da = b.mul(e, b.binary("pow", a, b.sub(e, fill(b, e, 1.0))));
      return {b.mul(ct[0], conj_if_complex(b, da)),
              b.mul(ct[0], conj_if_complex(b, b.mul(y, b.unary("log", a))))};
    }
    ValueId ga = b.mul(ct[0], b.mul(e, b.binary("pow", a, b.sub(e, fill(b, e, 1.0)))));
    ValueId positive = b.binary("gt", a, fill(b, a, 0.0));
    ValueId safe_a = b.select(positive, a, fill(b, a, 1.0));
    ValueId gb = b.mul(ct[0], b.mul(y, b.unary("log", safe_a)));
    return {ga, b.select(positive, gb, fill(b, gb, 0.0))};
  };
  // rem(a, b) = a - b * trunc(a / b)
  r["rem"] = [](GraphBuilder& b, const Node&, const Ins& in, const Ins& ct) -> Ins {
    ValueId q = b.div(in[0], in[1]);
    ValueId trunc = b.select(b.binary("lt", q, fill(b, q, 0.0)), b.unary("ceil", q), b.unary("floor", q));
    return {ct[0], b.unary("neg", b.mul(ct[0], trunc))};
  };
}

void other_rules(Rules& r) {
  r["select"] = [](GraphBuilder& b, const Node&, const Ins& in, const Ins& ct) -> Ins {
    ValueId zero = fill(b, ct[0], 0.0);
    return {kNoValue, b.select(in[0], ct[0], zero), b.select(in[0], zero, ct[0])};
  };
  // Between float dtypes the cotangent converts back; from an integer there is none. c64 -> real
  // keeps the real part, so its cotangent is g + 0i; real -> c64 takes the real part of g.
  r["convert"] = [](GraphBuilder& b, const Node&, const Ins& in, const Ins& ct) -> Ins {
    DType from = b.type(in[0]).dtype;
    if (!is_float(from) && !is_complex(from)) return {kNoValue};
    return {b.convert(ct[0], from)};
  };
}

}  // namespace

void elementwise_rules(Rules& r) {
  unary_rules(r);
  binary_rules(r);
  other_rules(r);
}

}  // namespace rlx::autodiff
