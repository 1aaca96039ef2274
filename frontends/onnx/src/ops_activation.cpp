// Unary math and activation functions, as compositions of MIR elementwise primitives.
#include <cmath>

#include "op_util.h"

namespace rlx::onnx {

namespace {

struct U {
  NodeCtx& n;
  GraphBuilder& b;
  ValueId c(ValueId like, double v) { return full_like(b, like, v); }
  ValueId sel(ValueId p, ValueId t, ValueId f) { return b.select(p, t, f); }
  ValueId lt(ValueId x, ValueId y) { return b.binary("lt", x, y); }
  ValueId gt(ValueId x, ValueId y) { return b.binary("gt", x, y); }
  ValueId un(const char* op, ValueId x) { return b.unary(op, x); }
};

void expect_float(NodeCtx& n, int i = 0) {
  if (!is_float(n.dtype(i)))
    n.failf("input {} must be a floating-point tensor, got {}", i, dtype_name(n.dtype(i)));
}

// atan as in Cephes' atanf: reduce |x| to [0, tan(pi/8)] with atan(x) = pi/2 - atan(1/x) and
// atan(x) = pi/4 + atan((x-1)/(x+1)), then an odd minimax polynomial; error about 1 ulp in f32.
ValueId atan(U& u, ValueId x) {
  GraphBuilder& b = u.b;
  ValueId ax = u.un("abs", x);
  ValueId big = u.gt(ax, u.c(x, 2.414213562373095));
  ValueId mid = b.binary("and", u.gt(ax, u.c(x, 0.4142135623730950)), u.un("not", big));
  ValueId t_big = b.div(u.c(x, -1.0), ax);
  ValueId t_mid = b.div(b.sub(ax, u.c(x, 1.0)), b.add(ax, u.c(x, 1.0)));
  ValueId t = u.sel(big, t_big, u.sel(mid, t_mid, ax));
  ValueId y0 = u.sel(big, u.c(x, M_PI_2), u.sel(mid, u.c(x, M_PI_4), u.c(x, 0.0)));
  ValueId z = b.mul(t, t);
  ValueId p = u.c(x, 8.05374449538e-2);
  for (double k : {-1.38776856032e-1, 1.99777106478e-1, -3.33329491539e-1})
    p = b.add(b.mul(p, z), u.c(x, k));
  ValueId r = b.add(y0, b.add(b.mul(b.mul(p, z), t), t));
  return u.sel(u.lt(x, u.c(x, 0.0)), b.unary("neg", r), r);
}

ValueId softplus(U& u, ValueId x) {
  // max(x, 0) + log(1 + exp(-|x|)): no overflow for large |x|.
  ValueId e = u.un("exp", u.un("neg", u.un("abs", x)));
  return u.b.add(u.b.binary("max", x, u.c(x, 0.0)), u.un("log", u.b.add(e, u.c(x, 1.0))));
}

void unary(OpTable& t, const char* name, bool float_only, std::function<ValueId(U&, ValueId)> f) {
  t[name] = [f, float_only](NodeCtx& n) {
    if (float_only) expect_float(n);
    U u{n, n.b};
    n.out(0, f(u, n.x(0)));
  };
}

}  // namespace

void register_activation_ops(OpTable& t) {
  for (auto [name, prim] : {std::pair{"Exp", "exp"},
                            {"Log", "log"},
                            {"Sqrt", "sqrt"},
                            {"Tanh", "tanh"},
                            {"Erf", "erf"},
                            {"Sin", "sin"},
                            {"Cos", "cos"},
                            {"Floor", "floor"},
                            {"Ceil", "ceil"},
                            {"Round", "round"},
                            {"Sigmoid", "logistic"}}) {
    std::string p = prim;
    unary(t, name, true, [p](U& u, ValueId x) { return u.b.unary(p, x); });
  }
  // Integer shape arithmetic (Neg of an axis count, Abs of a stride) folds on the host.
  for (auto [name, prim] : {std::pair{"Abs", "abs"}, {"Neg", "neg"}, {"Sign", "sign"}}) {
    std::string p = prim;
    t[name] = [p](NodeCtx& n) {
      if (auto s = n.sym(0); s && s->dtype != DType::kBool) {
        bool ok = true;
        for (auto& e : s->v) {
          if (p == "neg")
            e = *sym_neg(e);
          else if (e.is_static())
            e = SymInt(p == "abs" ? (e.coef < 0 ? -e.coef : e.coef) : (e.coef > 0) - (e.coef < 0));
          else if (p == "sign" && e.nonneg())
            e = SymInt(1);  // a symbolic size is > 0 here
          else if (!(p == "abs" && e.nonneg()))
            ok = false;
        }
        if (ok) {
          for (auto& e : s->v)
            if (e.is_static()) e = SymInt(wrap_int(s->dtype, e.coef));
          return n.out_sym(0, *s);
        }
      }
      n.out(0, n.b.unary(p, n.x(0)));
    };
  }
  unary(t, "Reciprocal", true, [](U& u, ValueId x) { return u.b.div(u.c(x, 1.0), x); });
  unary(t, "Tan", true, [](U& u, ValueId x) { return u.b.div(u.un("sin", x), u.un("cos", x)); });
  unary(t, "Sinh", true, [](U& u, ValueId x) {
    return u.b.mul(u.b.sub(u.un("exp", x), u.un("exp", u.un("neg", x))), u.c(x, 0.5));
  });
  unary(t, "Cosh", true, [](U& u, ValueId x) {
    return u.b.mul(u.b.add(u.un("exp", x), u.un("exp", u.un("neg", x))), u.c(x, 0.5));
  });
  unary(t, "Asinh", true, [](U& u, ValueId x) {
    // Odd symmetry keeps log's argument away from cancellation for negative x.
    ValueId ax = u.un("abs", x);
    ValueId r = u.un("log", u.b.add(ax, u.un("sqrt", u.b.add(u.b.mul(ax, ax), u.c(x, 1.0)))));
    return u.sel(u.lt(x, u.c(x, 0.0)), u.un("neg", r), r);
  });
  unary(t, "Acosh", true, [](U& u, ValueId x) {
    return u.un("log", u.b.add(x, u.un("sqrt", u.b.sub(u.b.mul(x, x), u.c(x, 1.0)))));
  });
  unary(t, "Atanh", true, [](U& u, ValueId x) {
    ValueId q = u.b.div(u.b.add(u.c(x, 1.0), x), u.b.sub(u.c(x, 1.0), x));
    return u.b.mul(u.un("log", q), u.c(x, 0.5));
  });
  unary(t, "Atan", true, [](U& u, ValueId x) { return atan(u, x); });
  unary(t, "Asin", true, [](U& u, ValueId x) {
    ValueId d = u.un("sqrt", u.b.sub(u.c(x, 1.0), u.b.mul(x, x)));
    return atan(u, u.b.div(x, d));
  });
  unary(t, "Acos", true, [](U& u, ValueId x) {
    ValueId d = u.un("sqrt", u.b.sub(u.c(x, 1.0), u.b.mul(x, x)));
    return u.b.sub(u.c(x, M_PI_2), atan(u, u.b.div(x, d)));
  });
  unary(t, "Relu", false, [](U& u, ValueId x) { return u.b.binary("max", x, u.c(x, 0.0)); });
  unary(t, "Softplus", true, softplus);
  unary(t, "Softsign", true,
        [](U& u, ValueId x) { return u.b.div(x, u.b.add(u.c(x, 1.0), u.un("abs", x))); });
  unary(t, "Mish", true, [](U& u, ValueId x) { return u.b.mul(x, u.un("tanh", softplus(u, x))); });
  unary(t, "IsNaN", true, [](U& u, ValueId x) { return u.b.binary("ne", x, x); });

  t["IsInf"] = [](NodeCtx& n) {
    expect_float(n);
    U u{n, n.b};
    ValueId x = n.x(0);
    ValueId pos = n.b.binary("eq", x, u.c(x, INFINITY)),
            neg = n.b.binary("eq", x, u.c(x, -INFINITY));
    bool dp = n.attr_i("detect_positive", 1), dn = n.attr_i("detect_negative", 1);
    ValueId none = n.b.binary("ne", pos, pos);
    n.out(0, dp && dn ? n.b.binary("or", pos, neg) : dp ? pos : dn ? neg : none);
  };
  t["LeakyRelu"] = [](NodeCtx& n) {
    expect_float(n);
    U u{n, n.b};
    ValueId x = n.x(0);
    double a = n.attr_f("alpha", 0.01f);
    n.out(0, u.sel(u.lt(x, u.c(x, 0.0)), n.b.mul(x, u.c(x, a)), x));
  };
  t["PRelu"] = [](NodeCtx& n) {
    U u{n, n.b};
    ValueId x = n.x(0);
    ValueId slope = n.b.broadcast_to(n.x(1), broadcast_shapes(n.shape(0), n.shape(1)));
    x = n.b.broadcast_to(x, n.b.type(slope).shape);
    n.out(0, u.sel(u.lt(x, u.c(x, 0.0)), n.b.mul(x, slope), x));
  };
  t["Elu"] = [](NodeCtx& n) {
    expect_float(n);
    U u{n, n.b};
    ValueId x = n.x(0);
    double a = n.attr_f("alpha", 1.0f);
    ValueId neg = n.b.mul(u.c(x, a), n.b.sub(u.un("exp", x), u.c(x, 1.0)));
    n.out(0, u.sel(u.lt(x, u.c(x, 0.0)), neg, x));
  };
  t["Selu"] = [](NodeCtx& n) {
    expect_float(n);
    U u{n, n.b};
    ValueId x = n.x(0);
    double a = n.attr_f("alpha", 1.67326319217681884765625f);
    double g = n.attr_f("gamma", 1.05070102214813232421875f);
    ValueId neg = n.b.mul(u.c(x, a), n.b.sub(u.un("exp", x), u.c(x, 1.0)));
    ValueId le = n.b.binary("le", x, u.c(x, 0.0));
    n.out(0, n.b.mul(u.c(x, g), u.sel(le, neg, x)));
  };
  t["Celu"] = [](NodeCtx& n) {
    expect_float(n);
    U u{n, n.b};
    ValueId x = n.x(0);
    double a = n.attr_f("alpha", 1.0f);
    ValueId e = n.b.mul(u.c(x, a), n.b.sub(u.un("exp", n.b.div(x, u.c(x, a))), u.c(x, 1.0)));
    n.out(0, n.b.add(n.b.binary("max", x, u.c(x, 0.0)), n.b.binary("min", e, u.c(x, 0.0))));
  };
  t["ThresholdedRelu"] = [](NodeCtx& n) {
    expect_float(n);
    U u{n, n.b};
    ValueId x = n.x(0);
    double a = n.attr_f("alpha", 1.0f);
    n.out(0, u.sel(u.gt(x, u.c(x, a)), x, u.c(x, 0.0)));
  };
  t["HardSigmoid"] = [](NodeCtx& n) {
    expect_float(n);
    U u{n, n.b};
    ValueId x = n.x(0);
    double a = n.attr_f("alpha", 0.2f), be = n.attr_f("beta", 0.5f);
    ValueId y = n.b.add(n.b.mul(x, u.c(x, a)), u.c(x, be));
    n.out(0, n.b.binary("max", u.c(x, 0.0), n.b.binary("min", u.c(x, 1.0), y)));
  };
  t["HardSwish"] = [](NodeCtx& n) {
    expect_float(n);
    U u{n, n.b};
    ValueId x = n.x(0);
    ValueId y = n.b.add(n.b.mul(x, u.c(x, 1.0 / 6.0)), u.c(x, 0.5));
    n.out(0, n.b.mul(x, n.b.binary("max", u.c(x, 0.0), n.b.binary("min", u.c(x, 1.0), y))));
  };
  t["Swish"] = [](NodeCtx& n) {
    expect_float(n);
    U u{n, n.b};
    ValueId x = n.x(0);
    double a = n.attr_f("alpha", 1.0f);
    n.out(0, n.b.mul(x, u.un("logistic", n.b.mul(x, u.c(x, a)))));
  };
  t["Shrink"] = [](NodeCtx& n) {
    U u{n, n.b};
    ValueId x = n.x(0);
    double bias = n.attr_f("bias", 0.0f), l = n.attr_f("lambd", 0.5f);
    ValueId lo = n.b.add(x, u.c(x, bias)), hi = n.b.sub(x, u.c(x, bias));
    n.out(0, u.sel(u.lt(x, u.c(x, -l)), lo, u.sel(u.gt(x, u.c(x, l)), hi, u.c(x, 0.0))));
  };
  t["Gelu"] = [](NodeCtx& n) {
    expect_float(n);
    std::string approx = n.attr_s("approximate", "none");
    if (approx != "none" && approx != "tanh")
      n.failf("approximate '{}' is not one of none, tanh", approx);
    n.out(0, n.b.op("GELU", {n.x(0)}, {{"approximate", approx}}));
  };
  t["Clip"] = [](NodeCtx& n) {
    ValueId x = n.x(0);
    U u{n, n.b};
    if (n.opset < 11) {
      x = n.b.binary("max", x, u.c(x, n.attr_f("min", -INFINITY)));
      return n.out(0, n.b.binary("min", x, u.c(x, n.attr_f("max", INFINITY))));
    }
    if (n.has(1)) x = n.b.binary("max", x, n.b.broadcast_to(n.x(1), n.b.type(x).shape));
    if (n.has(2)) x = n.b.binary("min", x, n.b.broadcast_to(n.x(2), n.b.type(x).shape));
    n.out(0, x);
  };
}

}  // namespace rlx::onnx
