// Attention (opset 23/24) and RotaryEmbedding (opset 23), following onnx.reference: 3-D inputs
// split into heads, KV cache concatenation, grouped KV heads repeated per query head, boolean or
// additive masks, causal masking aligned bottom-right with the cache, softcap, and the optional
// QK output.
#include <cmath>

#include "op_util.h"
#include "proto_io.h"

namespace rlx::onnx {

namespace {

// [B, S, H*D] -> [B, H, S, D].
ValueId split_heads(NodeCtx& n, ValueId x, int64_t heads) {
  GraphBuilder& b = n.b;
  Shape s = b.type(x).shape;
  if (!s[2].is_static() || heads <= 0 || s[2].value % heads)
    n.failf("hidden size {} does not split into {} heads", s[2].str(), heads);
  return b.transpose(b.reshape(x, Shape{s[0], s[1], heads, s[2].value / heads}), {0, 2, 1, 3});
}

void attention(NodeCtx& n) {
  GraphBuilder& b = n.b;
  int64_t r = n.rank(0);
  if (r != 3 && r != 4) n.fail("Q must be rank 3 or 4");
  n.expect_rank(1, r, r);
  n.expect_rank(2, r, r);
  if (n.has(3)) n.expect_rank(3, 1, 4);
  if (n.has(4)) n.expect_rank(4, 4, 4);
  if (n.has(5)) n.expect_rank(5, 4, 4);
  DType dt = n.dtype(0);
  ValueId q = n.x(0), k = n.x(1), v = n.x(2);
  if (r == 3) {
    q = split_heads(n, q, n.attr_i("q_num_heads", 0));
    k = split_heads(n, k, n.attr_i("kv_num_heads", 0));
    v = split_heads(n, v, n.attr_i("kv_num_heads", 0));
  }
  int64_t past = 0;
  if (n.has(4)) {
    Dim ps = n.shape(4)[2];
    if (!ps.is_static()) n.fail("a symbolic past length is not supported");
    past = ps.value;
    k = b.concat({n.x(4), k}, 2);
  }
  if (n.has(5)) v = b.concat({n.x(5), v}, 2);
  n.out(1, k);
  n.out(2, v);
  Shape qs = b.type(q).shape, ks = b.type(k).shape;
  if (!qs[1].is_static() || !ks[1].is_static() || !qs[3].is_static())
    n.fail("head counts and head size must be static");
  int64_t hq = qs[1].value, hkv = ks[1].value;
  if (hkv <= 0 || hq % hkv) n.failf("{} query heads are not a multiple of {} kv heads", hq, hkv);
  auto expand = [&](ValueId kv) {
    if (hq == hkv) return kv;
    Shape s = b.type(kv).shape;
    Shape wide{s[0], hkv, hq / hkv, s[2], s[3]};
    return b.reshape(b.broadcast_in_dim(kv, wide, {0, 1, 3, 4}), Shape{s[0], hq, s[2], s[3]});
  };
  ValueId ke = expand(k), ve = expand(v);
  double scale = n.has_attr("scale") ? n.attr_f("scale", 1.0f)
                                     : 1.0 / std::sqrt(static_cast<double>(qs[3].value));
  double sq = std::sqrt(scale);
  ValueId qk = b.dot_general(b.mul(q, full_like(b, q, sq)), b.mul(ke, full_like(b, ke, sq)), {0, 1},
                             {0, 1}, {3}, {3});
  Shape ss = b.type(qk).shape;  // [B, H, Sq, Sk]
  double softcap = n.attr_f("softcap", 0.0f);
  if (softcap > 0)
    qk = b.mul(b.unary("tanh", b.div(qk, full_like(b, qk, softcap))), full_like(b, qk, softcap));
  ValueId softcapped = qk;
  // Additive bias: 0 where attending, -inf where masked.
  std::optional<ValueId> bias;
  auto add_bias = [&](ValueId m) { bias = bias ? broadcast_binary(b, "add", *bias, m) : m; };
  if (n.has(3)) {
    ValueId m = n.x(3);
    Shape ms = b.type(m).shape;
    if (!ms.back().is_static() || !ss[3].is_static()) n.fail("mask and key lengths must be static");
    int64_t pad = ss[3].value - ms.back().value;
    bool boolean = b.type(m).dtype == DType::kBool;
    if (boolean)
      m = b.select(m, full_like(b, b.convert(m, dt), 0.0),
                   full_like(b, b.convert(m, dt), -INFINITY));
    if (pad > 0) {
      IntList lo(ms.size(), 0), hi(ms.size(), 0);
      hi.back() = pad;
      m = b.op("pad", {m, b.scalar(dt, -INFINITY)}, {{"low", lo}, {"high", hi}});
    }
    add_bias(b.convert(m, dt));
  }
  if (n.attr_i("is_causal", 0)) {
    Shape qkshape{ss[2], ss[3]};
    ValueId i = iota(b, qkshape, 0), j = iota(b, qkshape, 1);
    ValueId allowed = b.binary("le", j, b.add(i, full_like(b, i, static_cast<double>(past))));
    ValueId zero = b.broadcast_in_dim(b.scalar(dt, 0), qkshape, {}),
            ninf = b.broadcast_in_dim(b.scalar(dt, -INFINITY), qkshape, {});
    add_bias(b.select(allowed, zero, ninf));
  }
  if (n.has(6)) {
    // nonpad_kv_seqlen [B]: keys at or past the length of their batch row are padding.
    ValueId len = b.convert(n.x(6), DType::kI64);
    Shape bk{ss[0], ss[3]};
    ValueId keep = b.binary("lt", iota(b, bk, 1), b.broadcast_in_dim(len, bk, {0}));
    ValueId m = b.select(keep, b.broadcast_in_dim(b.scalar(dt, 0), bk, {}),
                         b.broadcast_in_dim(b.scalar(dt, -INFINITY), bk, {}));
    add_bias(b.reshape(m, Shape{ss[0], 1, 1, ss[3]}));
  }
  ValueId scores = bias ? b.add(qk, b.broadcast_to(*bias, ss)) : qk;
  int64_t mode = n.attr_i("qk_matmul_output_mode", 0);
  DType sdt = dt;
  if (n.has_attr("softmax_precision")) {
    if (auto d = dtype_from_onnx(static_cast<int>(n.attr_i("softmax_precision", 1)))) sdt = *d;
  }
  ValueId sc = b.convert(scores, sdt);
  ValueId e = b.unary("exp", b.sub(sc, b.reduce_keep(sc, {3}, ReduceKind::kMax)));
  ValueId p = b.convert(b.div(e, b.reduce_keep(e, {3}, ReduceKind::kSum)), dt);
  ValueId y = b.dot_general(p, ve, {0, 1}, {0, 1}, {3}, {2});  // [B, H, Sq, Dv]
  if (r == 3) {
    Shape ys = b.type(y).shape;
    y = b.reshape(b.transpose(y, {0, 2, 1, 3}), Shape{ys[0], ys[2], dim_product({ys[1], ys[3]})});
  }
  n.out(0, y);
  // As onnx.reference: modes 0 and 1 give the (softcapped) product, 2 adds the mask, 3 is the
  // softmax.
  if (n.wants(3)) n.out(3, mode <= 1 ? softcapped : mode == 2 ? scores : p);
}

void rotary(NodeCtx& n) {
  GraphBuilder& b = n.b;
  int64_t r = n.rank(0);
  ValueId x = n.x(0);
  Shape orig = n.shape(0);
  if (r == 4) {
    x = b.transpose(x, {0, 2, 1, 3});  // [B, S, H, D]
  } else if (r == 3) {
    int64_t heads = n.attr_i("num_heads", 0);
    if (heads <= 0 || !orig[2].is_static() || orig[2].value % heads)
      n.fail("num_heads must divide the hidden size");
    x = b.reshape(x, Shape{orig[0], orig[1], heads, orig[2].value / heads});
  } else {
    n.fail("input must be rank 3 or 4");
  }
  Shape s = b.type(x).shape;
  if (!s[3].is_static()) n.fail("the head size must be static");
  int64_t head = s[3].value;
  int64_t rot = n.attr_i("rotary_embedding_dim", 0);
  if (rot == 0) rot = head;
  if (rot > head || rot % 2)
    n.failf("rotary_embedding_dim {} does not fit head size {}", rot, head);
  int64_t half = rot / 2;
  bool inter = n.attr_i("interleaved", 0) != 0;
  n.expect_rank(1, 2, 3);
  n.expect_rank(2, 2, 3);
  ValueId cos = n.x(1), sin = n.x(2);
  if (n.has(3)) {
    ValueId pos = n.x(3);
    cos = b.op("gather", {cos, pos}, {{"axis", int64_t{0}}});
    sin = b.op("gather", {sin, pos}, {{"axis", int64_t{0}}});
  }
  // cos/sin [B, S, half] (or [S, half]) -> [B, S, 1, half] broadcast over heads.
  auto spread = [&](ValueId c) {
    Shape cs = b.type(c).shape;
    Shape target{s[0], s[1], s[2], half};
    if (cs.size() == 3) return b.broadcast_in_dim(c, target, {0, 1, 3});
    return b.broadcast_in_dim(c, target, {1, 3});
  };
  ValueId c = spread(cos), sn = spread(sin);
  auto part = [&](int64_t from, int64_t to, int64_t stride) {
    std::vector<int64_t> idx;
    for (int64_t i = from; i < to; i += stride) idx.push_back(i);
    return take(b, x, 3, idx);
  };
  ValueId x1 = inter ? part(0, rot, 2) : part(0, half, 1);
  ValueId x2 = inter ? part(1, rot, 2) : part(half, rot, 1);
  ValueId re = b.sub(b.mul(c, x1), b.mul(sn, x2));
  ValueId im = b.add(b.mul(sn, x1), b.mul(c, x2));
  ValueId rotated;
  if (inter) {
    Shape s5{s[0], s[1], s[2], half, 1};
    rotated = b.concat({b.reshape(re, s5), b.reshape(im, s5)}, 4);
    rotated = b.reshape(rotated, Shape{s[0], s[1], s[2], rot});
  } else {
    rotated = b.concat({re, im}, 3);
  }
  ValueId y = rot < head ? b.concat({rotated, part(rot, head, 1)}, 3) : rotated;
  y = r == 4 ? b.transpose(y, {0, 2, 1, 3}) : b.reshape(y, orig);
  n.out(0, y);
}

}  // namespace

void register_attention_ops(OpTable& t) {
  t["Attention"] = attention;
  t["RotaryEmbedding"] = rotary;
}

}  // namespace rlx::onnx
