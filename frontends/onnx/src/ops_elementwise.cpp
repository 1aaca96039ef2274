// Arithmetic, comparison, logical and bitwise ops with numpy broadcasting, and their host
// folding when both operands are known integers (shape arithmetic).
#include <cmath>

#include "op_util.h"

namespace rlx::onnx {

namespace {

// Opset < 7 binary ops broadcast only with broadcast=1 and an explicit axis.
ValueId legacy_align(NodeCtx& n, ValueId a, ValueId y) {
  if (n.opset >= 7 || !n.attr_i("broadcast", 0)) return y;
  int64_t ra = n.b.type(a).rank(), ry = n.b.type(y).rank();
  if (!n.has_attr("axis") || ry == 0) return y;
  int64_t axis = n.axis_attr("axis", 0, ra);
  Shape s = n.b.type(y).shape;
  for (int64_t i = axis + ry; i < ra; ++i) s.push_back(1);
  return n.b.reshape(y, s);
}

void binary_op(NodeCtx& n, const std::string& prim, const SymBinary& fold, bool compare) {
  if (n.dtype(0) != n.dtype(1))
    n.failf("operands have different dtypes ({} and {})", dtype_name(n.dtype(0)),
            dtype_name(n.dtype(1)));
  DType out = compare ? DType::kBool : n.dtype(0);
  if (fold) {
    auto a = n.sym(0), c = n.sym(1);
    if (a && c)
      if (auto r = fold_binary(*a, *c, out, fold)) return n.out_sym(0, *r);
  }
  ValueId x = n.x(0), y = legacy_align(n, x, n.x(1));
  n.out(0, broadcast_binary(n.b, prim, x, y));
}

std::optional<SymInt> static_only(const SymInt& a, const SymInt& b,
                                  const std::function<int64_t(int64_t, int64_t)>& f) {
  if (!a.is_static() || !b.is_static()) return std::nullopt;
  return SymInt(f(a.coef, b.coef));
}

void variadic(NodeCtx& n, const std::string& prim, bool mean) {
  if (n.num_inputs() < 1) n.fail("needs at least one input");
  ValueId acc = n.x(0);
  for (int i = 1; i < n.num_inputs(); ++i) acc = broadcast_binary(n.b, prim, acc, n.x(i));
  if (mean) acc = n.b.div(acc, full_like(n.b, acc, static_cast<double>(n.num_inputs())));
  n.out(0, acc);
}

// Python-style modulo (sign of the divisor) from the truncating remainder.
ValueId floor_mod(GraphBuilder& b, ValueId x, ValueId y) {
  ValueId r = b.binary("rem", x, y);
  ValueId zero = full_like(b, r, 0.0);
  ValueId fix = b.binary("and", b.binary("ne", r, zero),
                         b.binary("ne", b.binary("lt", r, zero), b.binary("lt", y, zero)));
  return b.select(fix, b.add(r, y), r);
}

}  // namespace

void register_elementwise_ops(OpTable& t) {
  auto arith = [&](const char* name, const char* prim, SymBinary fold) {
    t[name] = [prim = std::string(prim), fold](NodeCtx& n) { binary_op(n, prim, fold, false); };
  };
  arith("Add", "add", [](const SymInt& a, const SymInt& b) { return sym_add(a, b); });
  arith("Sub", "sub", [](const SymInt& a, const SymInt& b) -> std::optional<SymInt> {
    auto nb = sym_neg(b);
    return nb ? sym_add(a, *nb) : std::nullopt;
  });
  arith("Mul", "mul",
        [](const SymInt& a, const SymInt& b) -> std::optional<SymInt> { return sym_mul(a, b); });
  arith("Div", "div", [](const SymInt& a, const SymInt& b) { return sym_div(a, b, false); });
  for (auto [name, prim] :
       {std::pair{"Max", "max"}, {"Min", "min"}, {"Sum", "add"}, {"Mean", "add"}}) {
    std::string p = prim, nm = name;
    bool mean = nm == "Mean";
    SymBinary fold;
    if (nm == "Max") fold = [](const SymInt& a, const SymInt& b) { return sym_max(a, b); };
    if (nm == "Min") fold = [](const SymInt& a, const SymInt& b) { return sym_min(a, b); };
    t[name] = [p, mean, fold](NodeCtx& n) {
      if (n.num_inputs() == 2 && !mean) {
        if (n.dtype(0) != n.dtype(1)) n.fail("operands have different dtypes");
        if (fold) {
          auto a = n.sym(0), c = n.sym(1);
          if (a && c)
            if (auto r = fold_binary(*a, *c, a->dtype, fold)) return n.out_sym(0, *r);
        }
      }
      variadic(n, p, mean);
    };
  }
  t["Pow"] = [](NodeCtx& n) {
    ValueId x = n.x(0), y = n.x(1);
    DType dx = n.dtype(0), dy = n.dtype(1);
    if (dx == dy) return n.out(0, broadcast_binary(n.b, "pow", x, y));
    if (is_float(dx)) return n.out(0, broadcast_binary(n.b, "pow", x, n.b.convert(y, dx)));
    // Integer base with a float exponent: computed in f64, truncated back like a C cast.
    ValueId r =
        broadcast_binary(n.b, "pow", n.b.convert(x, DType::kF64), n.b.convert(y, DType::kF64));
    n.out(0, n.b.convert(r, dx));
  };
  t["Mod"] = [](NodeCtx& n) {
    if (n.dtype(0) != n.dtype(1)) n.fail("operands have different dtypes");
    bool fmod = n.attr_i("fmod", 0) != 0;
    if (!fmod && is_float(n.dtype(0))) n.fail("fmod must be 1 for floating-point operands");
    auto a = n.sym(0), c = n.sym(1);
    if (a && c) {
      auto r = fold_binary(*a, *c, a->dtype, [fmod](const SymInt& x, const SymInt& y) {
        return static_only(x, y, [fmod](int64_t p, int64_t q) -> int64_t {
          if (q == 0) return 0;
          int64_t m = p % q;
          if (!fmod && m != 0 && ((m < 0) != (q < 0))) m += q;
          return m;
        });
      });
      if (r) return n.out_sym(0, *r);
    }
    auto [x, y] = broadcast2(n.b, n.x(0), n.x(1));
    n.out(0, fmod ? n.b.binary("rem", x, y) : floor_mod(n.b, x, y));
  };

  auto compare = [&](const char* name, const char* prim,
                     std::function<std::optional<bool>(const SymInt&, const SymInt&)> f) {
    SymBinary fold = [f](const SymInt& a, const SymInt& b) -> std::optional<SymInt> {
      auto r = f(a, b);
      if (!r) return std::nullopt;
      return SymInt(*r ? 1 : 0);
    };
    t[name] = [prim = std::string(prim), fold](NodeCtx& n) { binary_op(n, prim, fold, true); };
  };
  compare("Equal", "eq", sym_eq);
  compare("Less", "lt", sym_lt);
  compare("Greater", "gt", [](const SymInt& a, const SymInt& b) { return sym_lt(b, a); });
  compare("LessOrEqual", "le", [](const SymInt& a, const SymInt& b) -> std::optional<bool> {
    auto r = sym_lt(b, a);
    return r ? std::optional<bool>(!*r) : std::nullopt;
  });
  compare("GreaterOrEqual", "ge", [](const SymInt& a, const SymInt& b) -> std::optional<bool> {
    auto r = sym_lt(a, b);
    return r ? std::optional<bool>(!*r) : std::nullopt;
  });

  auto logical = [&](const char* name, const char* prim,
                     std::function<int64_t(int64_t, int64_t)> f) {
    SymBinary fold = [f](const SymInt& a, const SymInt& b) { return static_only(a, b, f); };
    t[name] = [prim = std::string(prim), fold](NodeCtx& n) { binary_op(n, prim, fold, false); };
  };
  logical("And", "and", [](int64_t a, int64_t b) { return int64_t(a && b); });
  logical("Or", "or", [](int64_t a, int64_t b) { return int64_t(a || b); });
  logical("Xor", "xor", [](int64_t a, int64_t b) { return int64_t((a != 0) != (b != 0)); });
  logical("BitwiseAnd", "and", [](int64_t a, int64_t b) { return a & b; });
  logical("BitwiseOr", "or", [](int64_t a, int64_t b) { return a | b; });
  logical("BitwiseXor", "xor", [](int64_t a, int64_t b) { return a ^ b; });
  t["Not"] = [](NodeCtx& n) {
    if (auto s = n.sym(0); s && s->is_static()) {
      for (auto& e : s->v) e = SymInt(e.coef == 0 ? 1 : 0);
      return n.out_sym(0, *s);
    }
    n.out(0, n.b.unary("not", n.x(0)));
  };
  t["BitwiseNot"] = [](NodeCtx& n) { n.out(0, n.b.unary("not", n.x(0))); };
  t["BitShift"] = [](NodeCtx& n) {
    std::string dir = n.attr_s("direction", "");
    if (dir != "LEFT" && dir != "RIGHT") n.fail("direction must be LEFT or RIGHT");
    if (!is_unsigned(n.dtype(0)))
      n.failf("BitShift is defined on unsigned integers, not on {}", dtype_name(n.dtype(0)));
    auto [x, y] = broadcast2(n.b, n.x(0), n.x(1));
    // x << y = x * 2^y and x >> y = x / 2^y on unsigned values; 2^y wraps to 0 once y reaches
    // the width, which gives the 0 a full shift gives.
    ValueId p = n.b.binary("pow", full_like(n.b, y, 2.0), y);
    n.out(0, dir == "LEFT" ? n.b.mul(x, p) : n.b.div(x, p));
  };

  t["Where"] = [](NodeCtx& n) {
    if (n.dtype(1) != n.dtype(2)) n.fail("the two branches have different dtypes");
    auto c = n.sym(0), a = n.sym(1), e = n.sym(2);
    if (c && a && e) {
      // Fold through two broadcasts: cond ? a : e as (c, a) then with e.
      auto ca = fold_binary(
          *c, *a, DType::kI64, [](const SymInt& p, const SymInt& q) -> std::optional<SymInt> {
            if (!p.is_static()) return std::nullopt;
            return p.coef ? q : SymInt(INT64_MIN);  // marker: take the else branch
          });
      if (ca) {
        auto r = fold_binary(*ca, *e, a->dtype,
                             [](const SymInt& p, const SymInt& q) -> std::optional<SymInt> {
                               return p.is_static() && p.coef == INT64_MIN ? q : p;
                             });
        // The marker cannot be told apart from a genuine INT64_MIN; those do not occur in shapes.
        if (r) return n.out_sym(0, *r);
      }
    }
    ValueId cond = n.x(0), x = n.x(1), y = n.x(2);
    Shape s = broadcast_shapes(broadcast_shapes(n.b.type(cond).shape, n.b.type(x).shape),
                               n.b.type(y).shape);
    n.out(0, n.b.select(n.b.broadcast_to(cond, s), n.b.broadcast_to(x, s), n.b.broadcast_to(y, s)));
  };
}

}  // namespace rlx::onnx
