// split-i64: an i64 node on a target without 64-bit integers (WebGPU in browsers, SwiftShader)
// computed exactly on (low, high) i32 words. The i64 tensors themselves stay i64 in memory (the
// program's token ids and positions come in as the caller wrote them); kernels read and write them
// as word pairs through the bitcast view (ops/pair_views.h), and between two split nodes the
// canonicaliser removes the put-together-then-taken-apart pairs, as for complex numbers.
//
// Nothing wraps where i64 would not: sums carry into the high word, comparisons order by the high
// word then the unsigned low word, conversions to floats weigh the high word by 2^32. An index
// read from a pair whose high word is not the sign of its low word is outside every axis, so it
// reaches gather and scatter as INT32_MIN, whose range check reports it. Products are the low 64
// bits of the full product, as i64's; a maximum or minimum is two i32 reductions (high words,
// then the low words that go with the extreme high word); sums and products halve the reduced
// length log2(n) times, so they need static sizes. Quotients and remainders (C's truncating
// ones) are exact too: an f32 estimate of the quotient refined four times on the exact
// remainder, then moved by one where the remainder is on the wrong side or too large.
#include "dispatch/rewrite_int64.h"

#include <fmt/format.h>

#include <functional>
#include <limits>
#include <set>

#include "ops/pair_views.h"
#include "rlx/core/builder.h"
#include "rlx/core/error.h"

namespace rlx {

namespace {

struct Words {
  ValueId lo, hi;  // i32; lo read as unsigned where it matters
};

class WordBuilder {
 public:
  explicit WordBuilder(GraphBuilder& b) : b_(b) {}

  Words split(ValueId v) {
    return {ops::pair_part(b_, v, DType::kI32, 0), ops::pair_part(b_, v, DType::kI32, 1)};
  }
  ValueId join(Words w) { return ops::pair_join(b_, w.lo, w.hi, DType::kI64); }

  ValueId k(ValueId like, double v) { return b_.full_like(like, v); }
  // The high word of x sign-extended: -1 for negative x, else 0.
  ValueId sign_word(ValueId x) { return b_.select(b_.binary("lt", x, k(x, 0)), k(x, -1), k(x, 0)); }
  Words widen(ValueId x32) { return {x32, sign_word(x32)}; }

  // Unsigned comparison of i32 bits without a u32 type (WGSL as rlx renders it has none):
  // adding 2^31 (wrapping) maps unsigned order onto signed order.
  ValueId unsigned_less(ValueId a, ValueId c, bool or_equal = false) {
    const ValueId bias = k(a, std::numeric_limits<int32_t>::min());
    return b_.binary(or_equal ? "le" : "lt", b_.add(a, bias), b_.add(c, bias));
  }
  ValueId bit(ValueId p) { return b_.convert(p, DType::kI32); }
  // x mod 2^16 from truncating remainders, not a bitwise and: MIL (ane) has no bitwise
  // integer ops, and every target with i32 has rem.
  ValueId low16(ValueId x) {
    const ValueId r = b_.binary("rem", x, k(x, 65536));
    return b_.binary("rem", b_.add(r, k(x, 65536)), k(x, 65536));
  }
  // x >> 16 as unsigned: x minus its low half is a multiple of 2^16, so the division is exact.
  ValueId high16(ValueId x) { return low16(b_.div(b_.sub(x, low16(x)), k(x, 65536))); }

  Words add(Words a, Words c) {
    const ValueId lo = b_.add(a.lo, c.lo);
    return {lo, b_.add(b_.add(a.hi, c.hi), bit(unsigned_less(lo, a.lo)))};
  }
  Words sub(Words a, Words c) {
    return {b_.sub(a.lo, c.lo), b_.sub(b_.sub(a.hi, c.hi), bit(unsigned_less(a.lo, c.lo)))};
  }
  Words neg(Words a) { return sub({k(a.lo, 0), k(a.hi, 0)}, a); }

  // The low 64 bits of a * c (i64's wrapping product): the low words' full 64-bit product from
  // their 16-bit halves (i32 arithmetic wraps modulo 2^32, carries found by unsigned compares),
  // plus the cross terms of the high words, which only reach the high word.
  Words mul(Words a, Words c) {
    const ValueId a0 = low16(a.lo), a1 = high16(a.lo), c0 = low16(c.lo), c1 = high16(c.lo);
    const ValueId p00 = b_.mul(a0, c0), p01 = b_.mul(a0, c1), p10 = b_.mul(a1, c0),
                  p11 = b_.mul(a1, c1);
    const ValueId mid = b_.add(p01, p10);
    const ValueId lo = b_.add(p00, b_.mul(low16(mid), k(mid, 65536)));
    ValueId hi = b_.add(p11, high16(mid));
    hi = b_.add(hi, b_.add(b_.mul(bit(unsigned_less(mid, p01)), k(mid, 65536)),
                           bit(unsigned_less(lo, p00))));
    hi = b_.add(hi, b_.add(b_.mul(a.hi, c.lo), b_.mul(a.lo, c.hi)));
    return {lo, hi};
  }

  ValueId equal(Words a, Words c) {
    return b_.binary("and", b_.binary("eq", a.lo, c.lo), b_.binary("eq", a.hi, c.hi));
  }
  // a < c (or a <= c with `or_equal`): the high words signed, ties by the low words unsigned.
  ValueId less(Words a, Words c, bool or_equal) {
    const ValueId lo = unsigned_less(a.lo, c.lo, or_equal);
    return b_.binary("or", b_.binary("lt", a.hi, c.hi),
                     b_.binary("and", b_.binary("eq", a.hi, c.hi), lo));
  }
  // The largest (or smallest) value over the node's axes, at any size: the extreme high word
  // first, then the extreme low word (unsigned, by the bias) among the elements that have it.
  Words extreme(Words x, const Node& n, bool max) {
    const char* reduce = max ? "reduce_max" : "reduce_min";
    const IntList& axes = n.attr_ints("axes");
    const Shape s = b_.type(x.hi).shape;
    const int64_t rank = static_cast<int64_t>(s.size());
    IntList kept_dims;
    Shape kept;
    for (int64_t d = 0; d < rank; ++d) {
      bool r = false;
      for (int64_t a : axes) r |= (a < 0 ? a + rank : a) == d;
      if (!r) kept_dims.push_back(d), kept.push_back(s[d]);
    }
    const Attrs attrs = {{"axes", axes}};
    const ValueId hi = b_.op(reduce, {x.hi}, attrs);
    const ValueId bias = k(x.lo, std::numeric_limits<int32_t>::min());
    const ValueId losing =
        k(x.lo, max ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int32_t>::max());
    const ValueId has_hi = b_.binary("eq", x.hi, b_.broadcast_in_dim(hi, s, kept_dims));
    const ValueId lo = b_.op(reduce, {b_.select(has_hi, b_.add(x.lo, bias), losing)}, attrs);
    return {b_.sub(lo, k(lo, std::numeric_limits<int32_t>::min())), hi};
  }

  Words pick(ValueId p, Words a, Words c) {
    return {b_.select(p, a.lo, c.lo), b_.select(p, a.hi, c.hi)};
  }

  // i32 indices for gather and scatter: a pair outside i32 becomes INT32_MIN, out of every axis.
  ValueId index(ValueId v) {
    const Words w = split(v);
    const ValueId fits = b_.binary("eq", w.hi, sign_word(w.lo));
    return b_.select(fits, w.lo, k(w.lo, std::numeric_limits<int32_t>::min()));
  }

  // An integer-valued f32 as words (its value modulo 2^64): below 2^31 in size through i32;
  // larger values are multiples of 2^8, so the high word floor(x / 2^32) and the low word
  // x - high * 2^32 are exact in f32, each taken modulo 2^32 into i32 bits.
  Words from_float(ValueId x) {
    const ValueId small = b_.binary("lt", b_.unary("abs", x), k(x, 2147483648.0));
    const Words narrow = widen(b_.convert(b_.select(small, x, k(x, 0.0)), DType::kI32));
    const ValueId hi = b_.unary("floor", b_.mul(x, k(x, 1.0 / 4294967296.0)));
    const ValueId lo = b_.sub(x, b_.mul(hi, k(x, 4294967296.0)));
    auto bits = [&](ValueId f) {
      const ValueId wraps = b_.binary("ge", f, k(f, 2147483648.0));
      return b_.convert(b_.select(wraps, b_.sub(f, k(f, 4294967296.0)), f), DType::kI32);
    };
    return pick(small, narrow, {bits(lo), bits(hi)});
  }

  // |a| < |c| read as unsigned 64-bit magnitudes (|INT64_MIN| is 2^63).
  ValueId smaller_magnitude(Words a, Words c) {
    const Words ma = magnitude(a), mc = magnitude(c);
    return b_.binary("or", unsigned_less(ma.hi, mc.hi),
                     b_.binary("and", b_.binary("eq", ma.hi, mc.hi), unsigned_less(ma.lo, mc.lo)));
  }
  Words magnitude(Words a) { return pick(negative(a), neg(a), a); }
  ValueId negative(Words a) { return b_.binary("lt", a.hi, k(a.hi, 0)); }

  // n / d and n % d as C computes them (truncated quotient, remainder with n's sign), and 0
  // for both where d is 0 (rlx's integer division by zero); INT64_MIN / -1 wraps. Each round
  // takes q' = trunc(f32(r) / f32(d)) (relative error below 2^-22) and r -= q' d exactly on
  // the words (the true r fits i64, so the wrapping products give it), so |r| falls from 2^63
  // below 2^41 + |d|, 2^19 + |d|, then about |d|; two passes of one-step moves leave
  // 0 <= r sign(n) < |d|.
  std::pair<Words, Words> divide(Words n, Words d) {
    const ValueId zero = k(n.lo, 0);
    const ValueId df = to_float(d, DType::kF32);
    const ValueId safe = b_.select(b_.binary("eq", df, k(df, 0.0)), k(df, 1.0), df);
    Words q{zero, zero}, r = n;
    for (int round = 0; round < 4; ++round) {
      const ValueId ratio = b_.div(to_float(r, DType::kF32), safe);
      const ValueId t = b_.select(b_.binary("lt", ratio, k(ratio, 0.0)), b_.unary("ceil", ratio),
                                  b_.unary("floor", ratio));
      const Words step = from_float(t);
      q = add(q, step);
      r = sub(r, mul(step, d));
    }
    const ValueId n_neg = negative(n), same_sign = b_.binary("eq", n_neg, negative(d));
    const Words one{k(n.lo, 1), zero};
    for (int pass = 0; pass < 2; ++pass) {
      const ValueId nonzero = b_.unary("not", equal(r, {zero, zero}));
      const ValueId r_on_n_side = b_.binary("eq", negative(r), n_neg);
      const ValueId wrong_side = b_.binary("and", nonzero, b_.unary("not", r_on_n_side));
      const ValueId too_far = b_.binary(
          "and", b_.binary("and", nonzero, r_on_n_side), b_.unary("not", smaller_magnitude(r, d)));
      // r + d with q - 1 moves r up by |d| when d > 0: toward n's side from below, or back from
      // too far below; r - d with q + 1 the other way.
      const ValueId up = b_.binary("or", b_.binary("and", wrong_side, same_sign),
                                   b_.binary("and", too_far, b_.unary("not", same_sign)));
      const ValueId down = b_.binary("or", b_.binary("and", wrong_side, b_.unary("not", same_sign)),
                                     b_.binary("and", too_far, same_sign));
      r = pick(up, add(r, d), pick(down, sub(r, d), r));
      q = pick(up, sub(q, one), pick(down, add(q, one), q));
    }
    const ValueId by_zero = equal(d, {zero, zero});
    const Words none{zero, zero};
    return {pick(by_zero, none, q), pick(by_zero, none, r)};
  }

  // A value that fits 32 bits converts from its low word (one rounding, as i64 would); a larger
  // one is hi * 2^32 plus the unsigned low word, one rounding more where it has more significant
  // bits than the float.
  ValueId to_float(Words w, DType to) {
    const ValueId hi = b_.convert(w.hi, to);
    const ValueId lo = b_.convert(w.lo, to);
    const ValueId unsigned_lo =
        b_.select(b_.binary("lt", w.lo, k(w.lo, 0)), b_.add(lo, k(lo, 4294967296.0)), lo);
    const ValueId wide = b_.add(b_.mul(hi, k(hi, 4294967296.0)), unsigned_lo);
    return b_.select(b_.binary("eq", w.hi, sign_word(w.lo)), lo, wide);
  }

 private:
  GraphBuilder& b_;
};

bool is_i64(const GraphBuilder& b, ValueId v) {
  return b.type(v).dtype == DType::kI64;
}

// A reduction of i64 words over `axes`: the reduced dims moved last and flattened, then halved
// log2(n) times with `combine` (the remainder of an odd length carried along). `empty` gives the
// (low, high) words of the result of reducing nothing.
Words reduce_words(GraphBuilder& b, Words x, const IntList& axes,
                   const std::function<Words(Words, Words)>& combine,
                   std::pair<int32_t, int32_t> empty) {
  const Shape s = b.type(x.lo).shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes) reduced[a < 0 ? a + rank : a] = true;
  IntList perm;
  Shape kept;
  int64_t n = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (!reduced[d]) perm.push_back(d), kept.push_back(s[d]);
  for (int64_t d = 0; d < rank; ++d)
    if (reduced[d]) {
      if (!s[d].is_static())
        throw_user_error(
            fmt::format("split-i64 reduces dim {} only at a static size, got {}", d, s[d].str()));
      perm.push_back(d), n *= s[d].value;
    }
  Shape flat = kept;
  flat.push_back(Dim(std::max<int64_t>(n, 1)));
  const int64_t last = static_cast<int64_t>(kept.size());
  if (n == 0) {
    const ValueId lo = b.broadcast_in_dim(b.scalar(DType::kI32, empty.first), flat, {});
    x = {lo, b.broadcast_in_dim(b.scalar(DType::kI32, empty.second), flat, {})};
    n = 1;
  } else {
    x = {b.reshape(b.transpose(x.lo, perm), flat), b.reshape(b.transpose(x.hi, perm), flat)};
  }
  auto cut = [&](ValueId v, int64_t from, int64_t to) {
    IntList start(last + 1, 0), limit(last + 1, -1);
    start.back() = from, limit.back() = to;
    return b.slice(v, start, limit);
  };
  while (n > 1) {
    const int64_t h = n / 2;
    Words r =
        combine({cut(x.lo, 0, h), cut(x.hi, 0, h)}, {cut(x.lo, h, 2 * h), cut(x.hi, h, 2 * h)});
    if (n % 2) {
      r.lo = b.concat({r.lo, cut(x.lo, 2 * h, n)}, last);
      r.hi = b.concat({r.hi, cut(x.hi, 2 * h, n)}, last);
    }
    x = r;
    n = h + n % 2;
  }
  return {b.reshape(x.lo, kept), b.reshape(x.hi, kept)};
}

std::vector<ValueId> build_words(GraphBuilder& b, const Node& n, const std::vector<ValueId>& in) {
  WordBuilder w(b);
  const std::string& op = n.op;
  auto words = [&](size_t i) { return w.split(in[i]); };
  auto out = [&](Words x) { return std::vector<ValueId>{w.join(x)}; };
  // The same op on the low and on the high words, other operands as they are.
  auto each = [&](std::vector<size_t> paired) {
    std::vector<ValueId> lo = in, hi = in;
    for (size_t i : paired) {
      const Words x = words(i);
      lo[i] = x.lo, hi[i] = x.hi;
    }
    return out({b.op(op, lo, n.attrs), b.op(op, hi, n.attrs)});
  };
  auto refuse = [&](const std::string& why) -> std::vector<ValueId> {
    throw_user_error(fmt::format("split-i64 has no i32-pair form of {}: {}", op, why));
  };

  if (op == "constant") {
    const Tensor& t = n.attr_tensor("value");
    std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
    Tensor lo(DType::kI32, shape), hi(DType::kI32, shape);
    for (int64_t i = 0; i < t.numel(); ++i) {
      const auto v = static_cast<uint64_t>(t.as<int64_t>()[i]);
      lo.as<int32_t>()[i] = static_cast<int32_t>(static_cast<uint32_t>(v));
      hi.as<int32_t>()[i] = static_cast<int32_t>(static_cast<uint32_t>(v >> 32));
    }
    return out({b.constant(std::move(lo)), b.constant(std::move(hi))});
  }
  if (op == "dim_size") {  // sizes never reach 2^31
    Attrs a = n.attrs;
    a["dtype"] = DType::kI32;
    // Of an i64 operand, its low words: the same shape, which is all dim_size reads.
    const ValueId of = is_i64(b, in[0]) ? words(0).lo : in[0];
    const ValueId lo = b.op("dim_size", {of}, a);
    return out({lo, w.k(lo, 0)});
  }
  if (op == "iota") {  // sizes never reach 2^31
    Attrs a = n.attrs;
    a["dtype"] = DType::kI32;
    const ValueId lo = b.op("iota", {}, a);
    return out({lo, w.k(lo, 0)});
  }
  if (op == "convert") {
    const DType to = n.attr_dtype("dtype"), from = b.type(in[0]).dtype;
    if (from == DType::kI64) {
      const Words x = words(0);
      if (to == DType::kI64) return {in[0]};
      if (to == DType::kBool)
        return {
            b.binary("or", b.binary("ne", x.lo, w.k(x.lo, 0)), b.binary("ne", x.hi, w.k(x.hi, 0)))};
      if (is_float(to)) return {w.to_float(x, to)};
      if (is_integer(to) && to != DType::kU64) return {b.convert(x.lo, to)};  // wraps, as i64 would
      return refuse(fmt::format("no conversion to {}", dtype_name(to)));
    }
    if (from == DType::kU32)
      return out({b.convert(in[0], DType::kI32), w.k(b.convert(in[0], DType::kI32), 0)});
    if (from == DType::kBool || (is_integer(from) && from != DType::kU64))
      return out(w.widen(b.convert(in[0], DType::kI32)));
    return refuse(
        fmt::format("converting {} to i64 is not implemented on words", dtype_name(from)));
  }
  if (op == "add") return out(w.add(words(0), words(1)));
  if (op == "sub") return out(w.sub(words(0), words(1)));
  if (op == "neg") return out(w.neg(words(0)));
  if (op == "mul") return out(w.mul(words(0), words(1)));
  if (op == "div" || op == "rem") {
    auto [q, r] = w.divide(words(0), words(1));
    return out(op == "div" ? q : r);
  }
  if (op == "abs") {
    const Words x = words(0);
    return out(w.pick(b.binary("lt", x.hi, w.k(x.hi, 0)), w.neg(x), x));
  }
  if (op == "eq") return {w.equal(words(0), words(1))};
  if (op == "ne") return {b.unary("not", w.equal(words(0), words(1)))};
  if (op == "lt" || op == "le") return {w.less(words(0), words(1), op == "le")};
  if (op == "gt" || op == "ge") return {w.less(words(1), words(0), op == "ge")};
  if (op == "max" || op == "min") {
    const Words x = words(0), y = words(1);
    const ValueId x_less = w.less(x, y, false);
    return out(op == "max" ? w.pick(x_less, y, x) : w.pick(x_less, x, y));
  }
  if (op == "reduce_sum" || op == "reduce_prod" || op == "reduce_max" || op == "reduce_min") {
    std::function<Words(Words, Words)> combine;
    std::pair<int32_t, int32_t> empty{0, 0};
    if (op == "reduce_sum") combine = [&](Words a, Words c) { return w.add(a, c); };
    if (op == "reduce_prod")
      combine = [&](Words a, Words c) { return w.mul(a, c); }, empty = {1, 0};
    if (op == "reduce_max" || op == "reduce_min")
      return out(w.extreme(words(0), n, op == "reduce_max"));
    return out(reduce_words(b, words(0), n.attr_ints("axes"), combine, empty));
  }
  if (op == "select") return each({1, 2});
  if (op == "broadcast_in_dim" || op == "reshape" || op == "transpose" || op == "slice")
    return each({0});
  if (op == "concat" || op == "pad") {
    std::vector<size_t> all(in.size());
    for (size_t i = 0; i < in.size(); ++i) all[i] = i;
    return each(all);
  }
  if (op == "gather" || op == "scatter") {
    if (op == "scatter" && is_i64(b, in[0]) && n.attr_string("reduce", "none") == "add")
      return refuse("a scatter-add of i64 values would need carries between the words");
    std::vector<ValueId> args = in;
    if (is_i64(b, in[1])) args[1] = w.index(in[1]);
    if (!is_i64(b, in[0])) return {b.op(op, args, n.attrs)};
    const Words x = words(0);
    std::vector<ValueId> lo = args, hi = args;
    lo[0] = x.lo, hi[0] = x.hi;
    if (op == "scatter") {
      const Words u = words(2);
      lo[2] = u.lo, hi[2] = u.hi;
    }
    return out({b.op(op, lo, n.attrs), b.op(op, hi, n.attrs)});
  }
  return refuse(
      "only moves, arithmetic, comparisons, reductions and conversions of i64 values are "
      "emulated");
}

}  // namespace

Rewrite split_int64() {
  Rewrite r;
  r.name = "split-i64";
  r.op = "*";
  r.summary = "i64 computed exactly on (low, high) i32 words";
  r.applies = [](const Graph& g, const Node& n) {
    if (n.op == "bitcast") return Verdict::no("bitcast is how the words are reached");
    for (const auto* list : {&n.inputs, &n.outputs})
      for (ValueId v : *list)
        if (g.type(v).dtype == DType::kI64) return Verdict::yes();
    return Verdict::no("no i64 operand");
  };
  r.build = build_words;
  return r;
}

}  // namespace rlx
