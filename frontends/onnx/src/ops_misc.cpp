// Less common ops expressed with MIR primitives: Einsum, CenterCropPad, AffineGrid, Det,
// MaxUnpool, ReverseSequence, TensorScatter, Col2Im, CausalConvWithState, LinearAttention.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "op_util.h"

namespace rlx::onnx {

namespace {

// ---- Einsum --------------------------------------------------------------------------------

struct Term {
  ValueId v;
  std::string letters;  // one letter per dim
};

// Reduces letters of t that `keep` does not contain.
Term sum_out(GraphBuilder& b, Term t, const std::string& keep) {
  std::vector<int64_t> axes;
  std::string rest;
  for (size_t i = 0; i < t.letters.size(); ++i) {
    if (keep.find(t.letters[i]) == std::string::npos)
      axes.push_back(static_cast<int64_t>(i));
    else
      rest += t.letters[i];
  }
  if (axes.empty()) return t;
  return {b.reduce(t.v, axes, ReduceKind::kSum), rest};
}

// Takes the diagonal of repeated letters ("ii" -> "i").
Term diagonal(GraphBuilder& b, Term t) {
  for (;;) {
    size_t p = std::string::npos, q = std::string::npos;
    for (size_t i = 0; i < t.letters.size() && p == std::string::npos; ++i)
      for (size_t j = i + 1; j < t.letters.size(); ++j)
        if (t.letters[i] == t.letters[j]) {
          p = i, q = j;
          break;
        }
    if (p == std::string::npos) return t;
    Shape s = b.type(t.v).shape;
    Shape sq{s[p], s[q]};
    ValueId eye = b.binary("eq", iota(b, sq, 0), iota(b, sq, 1));
    ValueId mask = b.broadcast_in_dim(eye, s, {static_cast<int64_t>(p), static_cast<int64_t>(q)});
    ValueId kept = b.select(mask, t.v, full_like(b, t.v, 0.0));
    t = {b.reduce(kept, {static_cast<int64_t>(q)}, ReduceKind::kSum),
         t.letters.substr(0, q) + t.letters.substr(q + 1)};
  }
}

Term contract(GraphBuilder& b, Term a, Term c, const std::string& keep) {
  // Letters in both and kept are batch dims, in both and not kept are contracted.
  IntList lb, rb, lc, rc;
  std::string batch, lfree, rfree;
  for (size_t i = 0; i < a.letters.size(); ++i) {
    char ch = a.letters[i];
    size_t j = c.letters.find(ch);
    if (j == std::string::npos) {
      lfree += ch;
      continue;
    }
    if (keep.find(ch) != std::string::npos)
      lb.push_back(i), rb.push_back(j), batch += ch;
    else
      lc.push_back(i), rc.push_back(j);
  }
  for (char ch : c.letters)
    if (a.letters.find(ch) == std::string::npos) rfree += ch;
  // Broadcast size-1 batch dims (ellipsis broadcasting) to the other operand's size.
  Shape sa = b.type(a.v).shape, sc = b.type(c.v).shape;
  for (size_t k = 0; k < lb.size(); ++k) {
    Dim& da = sa[lb[k]];
    Dim& dc = sc[rb[k]];
    if (da == dc) continue;
    if (da == Dim(1))
      da = dc;
    else
      dc = da;
  }
  ValueId av = b.broadcast_to(a.v, sa), cv = b.broadcast_to(c.v, sc);
  return {b.dot_general(av, cv, lb, rb, lc, rc), batch + lfree + rfree};
}

void einsum(NodeCtx& n) {
  GraphBuilder& b = n.b;
  std::string eq = n.attr_s("equation", "");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> specs;
  for (size_t s = 0;;) {
    size_t e = lhs.find(',', s);
    specs.push_back(lhs.substr(s, e == std::string::npos ? std::string::npos : e - s));
    if (e == std::string::npos) break;
    s = e + 1;
  }
  if (static_cast<int>(specs.size()) != n.num_inputs())
    n.fail("the equation names a different number of operands");
  // Ellipses become upper-case letters, aligned from the right across operands.
  int64_t ell = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    size_t p = specs[i].find("...");
    if (p != std::string::npos)
      ell = std::max<int64_t>(
          ell, n.rank(static_cast<int>(i)) - static_cast<int64_t>(specs[i].size() - 3));
  }
  std::string ell_letters;
  for (int64_t k = 0; k < ell; ++k) ell_letters += static_cast<char>('A' + k);
  std::vector<Term> terms;
  std::map<char, int> count;
  for (size_t i = 0; i < specs.size(); ++i) {
    std::string s = specs[i];
    size_t p = s.find("...");
    if (p != std::string::npos) {
      int64_t k = n.rank(static_cast<int>(i)) - static_cast<int64_t>(s.size() - 3);
      s = s.substr(0, p) + ell_letters.substr(ell - k) + s.substr(p + 3);
    }
    if (static_cast<int64_t>(s.size()) != n.rank(static_cast<int>(i)))
      n.failf("operand {} has rank {}, the equation gives it {} letters", i,
              n.rank(static_cast<int>(i)), s.size());
    for (char ch : std::set<char>(s.begin(), s.end())) ++count[ch];
    terms.push_back(diagonal(b, {n.x(static_cast<int>(i)), s}));
  }
  std::string out;
  if (arrow != std::string::npos) {
    out = eq.substr(arrow + 2);
    size_t p = out.find("...");
    if (p != std::string::npos) out = out.substr(0, p) + ell_letters + out.substr(p + 3);
  } else {
    // Implicit output: the ellipsis dims, then letters that appear once, alphabetically.
    out = ell_letters;
    std::string once;
    for (auto& [ch, c] : count) {
      bool appears_once = c == 1;
      size_t total = 0;
      for (auto& t : terms) total += std::count(t.letters.begin(), t.letters.end(), ch);
      if (appears_once && total == 1 && !std::isupper(static_cast<unsigned char>(ch))) once += ch;
    }
    out += once;
  }
  // Fold left to right, keeping letters needed by later operands or the output.
  Term acc = terms[0];
  for (size_t i = 1; i <= terms.size(); ++i) {
    std::string keep = out;
    for (size_t j = i; j < terms.size(); ++j) keep += terms[j].letters;
    if (i < terms.size()) {
      std::string keep_next = keep + terms[i].letters;
      acc = sum_out(b, acc, keep_next);
      Term rhs = sum_out(b, terms[i], keep + acc.letters);
      acc = contract(b, acc, rhs, keep);
    } else {
      acc = sum_out(b, acc, out);
    }
  }
  IntList perm;
  for (char ch : out) {
    size_t p = acc.letters.find(ch);
    if (p == std::string::npos) n.failf("output letter '{}' appears in no operand", ch);
    perm.push_back(static_cast<int64_t>(p));
  }
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i)
    identity = identity && perm[i] == static_cast<int64_t>(i);
  n.out(0, identity ? acc.v : b.transpose(acc.v, perm));
}

// ---- Shape-like ops --------------------------------------------------------------------------

void center_crop_pad(NodeCtx& n) {
  GraphBuilder& b = n.b;
  auto target = n.need_ints(1, "shape");
  int64_t r = n.rank(0);
  std::vector<int64_t> axes = n.attr_ints("axes");
  if (axes.empty())
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  for (int64_t& a : axes) a = n.norm_axis(a, r);
  if (target.size() != axes.size()) n.fail("shape must have one entry per axis");
  ValueId x = n.x(0);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i];
    Dim d = b.type(x).shape[a];
    if (!d.is_static()) n.fail("cropping a symbolic dim");
    n.check_count(target[i], "the crop");
    int64_t have = d.value, want = target[i];
    if (want < have) {
      int64_t start = (have - want) / 2;
      std::vector<int64_t> idx;
      for (int64_t k = 0; k < want; ++k) idx.push_back(start + k);
      x = take(b, x, a, idx);
    } else if (want > have) {
      IntList lo(r, 0), hi(r, 0);
      lo[a] = (want - have) / 2;
      hi[a] = want - have - lo[a];
      x = b.op("pad", {x, b.scalar(n.dtype(0), 0)}, {{"low", lo}, {"high", hi}});
    }
  }
  n.out(0, x);
}

void affine_grid(NodeCtx& n) {
  GraphBuilder& b = n.b;
  auto size = n.need_ints(1, "size");
  bool align = n.attr_i("align_corners", 0) != 0;
  int64_t sp = static_cast<int64_t>(size.size()) - 2;
  if (sp != 2 && sp != 3) n.fail("size must be [N, C, H, W] or [N, C, D, H, W]");
  DType dt = n.dtype(0);
  auto lin = [&](int64_t len) {
    std::vector<double> v(len);
    for (int64_t i = 0; i < len; ++i)
      v[i] = align ? (len == 1 ? 0.0 : -1.0 + 2.0 * i / (len - 1)) : (2.0 * i + 1) / len - 1;
    return v;
  };
  // Base grid [prod(spatial), sp + 1] with coordinates (x, y[, z], 1), x varying fastest.
  std::vector<int64_t> dims(size.begin() + 2, size.end());
  for (int64_t d : dims)
    if (d < 0) n.fail("size has a negative dim");
  int64_t P = num_elements(dims);
  n.check_count(P * (sp + 1), "the base grid");
  std::vector<double> base;
  std::vector<std::vector<double>> axes;
  for (int64_t d = 0; d < sp; ++d) axes.push_back(lin(dims[d]));
  for (int64_t p = 0; p < P; ++p) {
    std::vector<int64_t> c(sp);
    int64_t rem = p;
    for (int64_t d = sp - 1; d >= 0; --d) c[d] = rem % dims[d], rem /= dims[d];
    for (int64_t d = sp - 1; d >= 0; --d) base.push_back(axes[d][c[d]]);
    base.push_back(1.0);
  }
  ValueId g = b.convert(b.constant(Tensor::from<double>(DType::kF64, {P, sp + 1}, base)), dt);
  // grid[n, p, :] = theta[n] @ base[p]
  ValueId y = b.dot_general(n.x(0), g, {}, {}, {2}, {1});  // [N, sp, P]
  y = b.transpose(y, {0, 2, 1});
  Shape out{size[0]};
  for (int64_t d : dims) out.push_back(d);
  out.push_back(sp);
  n.out(0, b.reshape(y, out));
}

ValueId det_of(GraphBuilder& b, const std::vector<std::vector<ValueId>>& m) {
  size_t k = m.size();
  if (k == 1) return m[0][0];
  if (k == 2) return b.sub(b.mul(m[0][0], m[1][1]), b.mul(m[0][1], m[1][0]));
  ValueId acc = kNoValue;
  for (size_t j = 0; j < k; ++j) {
    std::vector<std::vector<ValueId>> minor;
    for (size_t i = 1; i < k; ++i) {
      std::vector<ValueId> row;
      for (size_t c = 0; c < k; ++c)
        if (c != j) row.push_back(m[i][c]);
      minor.push_back(row);
    }
    ValueId term = b.mul(m[0][j], det_of(b, minor));
    acc = acc == kNoValue ? term : (j % 2 ? b.sub(acc, term) : b.add(acc, term));
  }
  return acc;
}

void det(NodeCtx& n) {
  GraphBuilder& b = n.b;
  int64_t r = n.rank(0);
  const Shape& s = n.shape(0);
  if (r < 2 || !s[r - 1].is_static() || !(s[r - 1] == s[r - 2]))
    n.fail("needs square matrices in the last two dims");
  int64_t k = s[r - 1].value;
  if (k > 5)
    n.failf("determinants of {}x{} matrices are not supported (cofactor expansion up to 5x5)", k,
            k);
  Shape batch(s.begin(), s.end() - 2);
  std::vector<std::vector<ValueId>> m(k, std::vector<ValueId>(k));
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < k; ++j) {
      IntList start(r, 0), limit(r, -1);
      for (int64_t d = 0; d < r - 2; ++d)
        if (s[d].is_static()) limit[d] = s[d].value;
      start[r - 2] = i, limit[r - 2] = i + 1, start[r - 1] = j, limit[r - 1] = j + 1;
      m[i][j] = b.reshape(b.slice(n.x(0), start, limit), batch);
    }
  n.out(0, det_of(b, m));
}

// ---- Scatter-like ops ------------------------------------------------------------------------

void max_unpool(NodeCtx& n) {
  GraphBuilder& b = n.b;
  n.expect_rank(0, 3, 8);
  auto xs = static_shape(n, n.type(0), "X");
  size_t sp = xs.size() - 2;
  // The indices address the shape the pooling inferred; output_shape only pads its end.
  std::vector<int64_t> inferred(xs.begin(), xs.end());
  auto k = n.attr_ints("kernel_shape");
  auto st = n.attr_ints("strides"), pads = n.attr_ints("pads");
  for (size_t i = 0; i < sp; ++i) {
    int64_t s = st.empty() ? 1 : st[i], p = pads.empty() ? 0 : pads[i] + pads[i + sp];
    inferred[2 + i] = (xs[2 + i] - 1) * s + k.at(i) - p;
  }
  int64_t total = num_elements(inferred), m = num_elements(xs);
  ValueId zeros = b.broadcast_in_dim(b.scalar(n.dtype(0), 0), Shape{total}, {});
  ValueId idx = b.reshape(b.convert(n.x(1), DType::kI64), Shape{m});
  ValueId y = b.op("scatter", {zeros, idx, b.reshape(n.x(0), Shape{m})},
                   {{"axis", int64_t{0}}, {"reduce", std::string("none")}});
  y = b.reshape(y, Shape(inferred.begin(), inferred.end()));
  if (n.has(2)) {
    auto out = n.need_ints(2, "output_shape");
    if (out.size() != inferred.size()) n.fail("output_shape has the wrong rank");
    IntList lo(out.size(), 0), hi(out.size(), 0);
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i] < inferred[i]) n.fail("output_shape is smaller than the unpooled shape");
      hi[i] = out[i] - inferred[i];
    }
    y = b.op("pad", {y, b.scalar(n.dtype(0), 0)}, {{"low", lo}, {"high", hi}});
  }
  n.out(0, y);
}

void reverse_sequence(NodeCtx& n) {
  GraphBuilder& b = n.b;
  auto s = static_shape(n, n.type(0), "the input");
  int64_t taxis = n.attr_i("time_axis", 0), baxis = n.attr_i("batch_axis", 1);
  Shape sh(s.begin(), s.end());
  ValueId t = iota(b, sh, taxis);
  ValueId len = b.broadcast_in_dim(b.convert(n.x(1), DType::kI64), sh, {baxis});
  ValueId rev = b.sub(b.sub(len, full_like(b, len, 1.0)), t);
  ValueId idx = b.select(b.binary("lt", t, len), rev, t);
  n.out(0, gather_along(n, n.x(0), idx, taxis));
}

void tensor_scatter(NodeCtx& n) {
  GraphBuilder& b = n.b;
  auto cs = static_shape(n, n.type(0), "past_cache");
  auto us = static_shape(n, n.type(1), "update");
  int64_t r = static_cast<int64_t>(cs.size());
  int64_t axis = n.axis_attr("axis", -2, r);
  std::string mode = n.attr_s("mode", "linear");
  Shape ush(us.begin(), us.end());
  ValueId pos = iota(b, ush, axis);
  if (n.has(2)) pos = b.add(pos, b.broadcast_in_dim(b.convert(n.x(2), DType::kI64), ush, {0}));
  if (mode == "circular")
    pos = b.binary("rem", pos, full_like(b, pos, static_cast<double>(cs[axis])));
  // Flat offsets of the written elements in the cache.
  std::vector<int64_t> st(r, 1);
  for (int64_t d = r - 2; d >= 0; --d) st[d] = st[d + 1] * cs[d + 1];
  ValueId flat = b.mul(pos, full_like(b, pos, static_cast<double>(st[axis])));
  for (int64_t d = 0; d < r; ++d) {
    if (d == axis) continue;
    ValueId io = iota(b, ush, d);
    flat = b.add(flat, b.mul(io, full_like(b, io, static_cast<double>(st[d]))));
  }
  int64_t m = num_elements(us);
  ValueId y = b.op("scatter",
                   {b.reshape(n.x(0), Shape{num_elements(cs)}), b.reshape(flat, Shape{m}),
                    b.reshape(n.x(1), Shape{m})},
                   {{"axis", int64_t{0}}, {"reduce", std::string("none")}});
  n.out(0, b.reshape(y, Shape(cs.begin(), cs.end())));
}

void col2im(NodeCtx& n) {
  GraphBuilder& b = n.b;
  n.expect_rank(0, 3, 3);
  auto xs = static_shape(n, n.type(0), "the input");
  auto image = n.need_ints(1, "image_shape");
  auto block = n.need_ints(2, "block_shape");
  size_t sp = image.size();
  auto attr = [&](const char* name, size_t count, int64_t fb) {
    auto v = n.attr_ints(name);
    if (v.empty()) v.assign(count, fb);
    return v;
  };
  auto dil = attr("dilations", sp, 1), pads = attr("pads", 2 * sp, 0), st = attr("strides", sp, 1);
  if (dil.size() != sp || pads.size() != 2 * sp || st.size() != sp)
    n.fail("dilations, pads and strides do not match the image rank");
  for (size_t i = 0; i < sp; ++i)
    if (st[i] < 1 || dil[i] < 1) n.fail("strides and dilations must be positive");
  for (int64_t v : block)
    if (v <= 0) n.fail("block_shape must be positive");
  if (image.size() != block.size()) n.fail("image_shape and block_shape differ in length");
  int64_t K = num_elements(block), N = xs[0], C = xs[1] / K, L = xs[2];
  std::vector<int64_t> padded(sp), outs(sp);
  int64_t count = 1;
  for (size_t i = 0; i < sp; ++i) {
    padded[i] = image[i] + pads[i] + pads[i + sp];
    outs[i] = (padded[i] - ((block[i] - 1) * dil[i] + 1)) / st[i] + 1;
    count *= outs[i];
  }
  if (count != L) n.failf("{} blocks do not fit the image (expected {})", L, count);
  n.check_count(K * L, "the column table");
  // Column (k, l) adds to padded image position (l * stride + k * dilation).
  std::vector<int64_t> idx;
  for (int64_t k = 0; k < K; ++k)
    for (int64_t l = 0; l < L; ++l) {
      int64_t kr = k, lr = l, flat = 0;
      std::vector<int64_t> kc(sp), lc(sp);
      for (int64_t d = static_cast<int64_t>(sp) - 1; d >= 0; --d)
        kc[d] = kr % block[d], kr /= block[d], lc[d] = lr % outs[d], lr /= outs[d];
      for (size_t d = 0; d < sp; ++d) flat = flat * padded[d] + lc[d] * st[d] + kc[d] * dil[d];
      idx.push_back(flat);
    }
  int64_t P = num_elements(padded);
  ValueId x = b.reshape(b.transpose(b.reshape(n.x(0), Shape{N, C, K, L}), {2, 3, 0, 1}),
                        Shape{K * L, N, C});
  ValueId zeros = b.broadcast_in_dim(b.scalar(n.dtype(0), 0), Shape{P, N, C}, {});
  ValueId img =
      b.op("scatter", {zeros, b.constant(Tensor::from<int64_t>(DType::kI64, {K * L}, idx)), x},
           {{"axis", int64_t{0}}, {"reduce", std::string("add")}});
  Shape ps{N, C};
  for (int64_t p : padded) ps.push_back(p);
  ValueId y = b.transpose(img, {1, 2, 0});
  y = b.reshape(y, ps);
  for (size_t d = 0; d < sp; ++d) {
    std::vector<int64_t> keep;
    for (int64_t i = 0; i < image[d]; ++i) keep.push_back(pads[d] + i);
    y = take(b, y, 2 + d, keep);
  }
  n.out(0, y);
}

// ---- Recurrent state ops ---------------------------------------------------------------------

void causal_conv_with_state(NodeCtx& n) {
  GraphBuilder& b = n.b;
  auto xs = static_shape(n, n.type(0), "the input");
  auto ws = static_shape(n, n.type(1), "the weight");
  if (xs.size() != 3 || ws.size() != 3) n.fail("input must be [B, C, L] and weight [C, 1, k]");
  int64_t B = xs[0], C = xs[1], L = xs[2], k = ws[2];
  std::string act = n.attr_s("activation", "none");
  ValueId x = n.x(0);
  ValueId pad =
      n.has(3) ? n.x(3) : b.broadcast_in_dim(b.scalar(n.dtype(0), 0), Shape{B, C, k - 1}, {});
  ValueId padded = k > 1 ? b.concat({pad, x}, 2) : x;
  // Depthwise causal conv: y[b, c, t] = sum_j w[c, 0, j] * padded[b, c, t + j] (+ bias[c]).
  // Accumulated in f32 and rounded once, as onnx.reference's convolution.
  DType dt = n.dtype(0), acc = dt == DType::kF64 ? dt : DType::kF32;
  padded = b.convert(padded, acc);
  ValueId w = b.convert(b.reshape(n.x(1), Shape{C, k}), acc);
  ValueId y = kNoValue;
  for (int64_t j = 0; j < k; ++j) {
    ValueId xs_j = b.slice(padded, {0, 0, j}, {B, C, j + L});
    ValueId wj = b.broadcast_in_dim(b.reshape(b.slice(w, {0, j}, {C, j + 1}), Shape{C}),
                                    Shape{B, C, L}, {1});
    ValueId term = b.mul(xs_j, wj);
    y = y == kNoValue ? term : b.add(y, term);
  }
  if (n.has(2)) y = b.add(y, b.broadcast_in_dim(b.convert(n.x(2), acc), Shape{B, C, L}, {1}));
  y = b.convert(y, dt);
  if (act == "silu" || act == "swish") {
    ValueId yf = b.convert(y, DType::kF32);
    y = b.convert(b.mul(yf, b.unary("logistic", yf)), dt);
  } else if (act != "none") {
    n.failf("activation '{}' is not supported", act);
  }
  n.out(0, y);
  if (n.wants(1)) {
    int64_t total = L + k - 1;
    n.out(1, b.convert(b.slice(padded, {0, 0, total - (k - 1)}, {B, C, total}), dt));
  }
}

void linear_attention(NodeCtx& n) {
  GraphBuilder& b = n.b;
  std::string rule = n.attr_s("update_rule", "gated_delta");
  bool gating = rule == "gated" || rule == "gated_delta",
       delta = rule == "delta" || rule == "gated_delta";
  if (!gating && !delta && rule != "linear") n.failf("update_rule '{}' is not supported", rule);
  int64_t hq = n.attr_i("q_num_heads", 0), hkv = n.attr_i("kv_num_heads", 0);
  if (hq <= 0 || hkv <= 0 || hq % hkv)
    n.fail("q_num_heads must be a positive multiple of kv_num_heads");
  for (int i : {0, 1, 2}) n.expect_rank(i, 3, 3);
  if (n.has(4)) n.expect_rank(4, 3, 3);
  if (n.has(5)) n.expect_rank(5, 3, 3);
  if (n.has(3)) n.expect_rank(3, 4, 4);
  auto qs = static_shape(n, n.type(0), "query"), vs = static_shape(n, n.type(2), "value");
  int64_t B = qs[0], T = qs[1], dk = qs[2] / hq, dv = vs[2] / hkv, group = hq / hkv;
  DType dt = n.dtype(0), f = DType::kF32;
  auto heads = [&](ValueId x, int64_t h) {  // (B, T, H*D) -> (B, H, T, D) in f32
    Shape s = b.type(x).shape;
    return b.transpose(b.reshape(b.convert(x, f), Shape{B, T, h, s[2].value / h}), {0, 2, 1, 3});
  };
  ValueId q = heads(n.x(0), hq), k = heads(n.x(1), hkv), v = heads(n.x(2), hkv);
  std::optional<ValueId> decay, beta;
  if (gating) {
    if (!n.has(4)) n.fail("gated rules need a decay input");
    int64_t last = static_shape(n, n.type(4), "decay").back();
    ValueId d = b.convert(n.x(4), f);
    decay = last == hkv ? b.transpose(b.reshape(d, Shape{B, T, hkv, 1}), {0, 2, 1, 3})
                        : heads(n.x(4), hkv);
  }
  if (delta) {
    if (!n.has(5)) n.fail("delta rules need a beta input");
    int64_t last = static_shape(n, n.type(5), "beta").back();
    beta = b.transpose(b.reshape(b.convert(n.x(5), f), Shape{B, T, last, 1}), {0, 2, 1, 3});
  }
  Shape ss{B, hkv, dk, dv};
  ValueId state = n.has(3) ? b.convert(n.x(3), f) : b.broadcast_in_dim(b.scalar(f, 0), ss, {});
  double scale = n.attr_f("scale", 0.0f);
  if (scale == 0) scale = 1.0 / std::sqrt(static_cast<double>(dk));
  auto at = [&](ValueId x, int64_t t) {  // [B, H, T, D] -> [B, H, D]
    Shape s = b.type(x).shape;
    return b.reshape(b.slice(x, {0, 0, t, 0}, {B, s[1].value, t + 1, s[3].value}),
                     Shape{B, s[1], s[3]});
  };
  std::vector<ValueId> outs;
  for (int64_t t = 0; t < T; ++t) {
    ValueId qt = at(q, t), kt = at(k, t), vt = at(v, t);
    if (gating) {
      ValueId g = b.unary("exp", at(*decay, t));  // [B, Hkv, 1 or dk]
      Shape gs = b.type(g).shape;
      ValueId ge = gs[2] == Dim(1) ? b.broadcast_in_dim(b.reshape(g, Shape{B, hkv}), ss, {0, 1})
                                   : b.broadcast_in_dim(g, ss, {0, 1, 2});
      state = b.mul(state, ge);
    }
    if (delta) {
      ValueId retrieved = b.dot_general(state, kt, {0, 1}, {0, 1}, {2}, {2});  // [B, Hkv, dv]
      ValueId bt = at(*beta, t);                                               // [B, Hkv or 1, 1]
      ValueId diff = b.sub(vt, retrieved);
      vt = b.mul(b.broadcast_to(bt, b.type(diff).shape), diff);
    }
    ValueId outer =
        b.mul(b.broadcast_in_dim(kt, ss, {0, 1, 2}), b.broadcast_in_dim(vt, ss, {0, 1, 3}));
    state = b.add(state, outer);
    ValueId rs = state;
    if (group > 1)
      rs = b.reshape(b.broadcast_in_dim(state, Shape{B, hkv, group, dk, dv}, {0, 1, 3, 4}),
                     Shape{B, hq, dk, dv});
    ValueId o = b.dot_general(qt, rs, {0, 1}, {0, 1}, {2}, {2});  // [B, Hq, dv]
    outs.push_back(b.reshape(b.mul(o, full_like(b, o, scale)), Shape{B, 1, hq * dv}));
  }
  ValueId y = b.concat(outs, 1);
  n.out(0, b.convert(y, dt));
  if (n.wants(1)) n.out(1, b.convert(state, n.has(3) ? n.dtype(3) : dt));
}

}  // namespace

void register_misc_ops(OpTable& t) {
  t["Einsum"] = einsum;
  t["CenterCropPad"] = center_crop_pad;
  t["AffineGrid"] = affine_grid;
  t["Det"] = det;
  t["MaxUnpool"] = max_unpool;
  t["ReverseSequence"] = reverse_sequence;
  t["TensorScatter"] = tensor_scatter;
  t["Col2Im"] = col2im;
  t["CausalConvWithState"] = causal_conv_with_state;
  t["LinearAttention"] = linear_attention;
}

}  // namespace rlx::onnx
