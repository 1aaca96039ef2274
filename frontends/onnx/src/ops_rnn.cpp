// RNN, GRU and LSTM, unrolled over the (static) sequence length: each step is a pair of
// dot_generals and elementwise gate math, per direction.
#include <cmath>

#include "op_util.h"

namespace rlx::onnx {

namespace {

struct Act {
  std::string name;
  double alpha = 0, beta = 0;
};

ValueId apply(GraphBuilder& b, const Act& a, ValueId x) {
  auto c = [&](double v) { return full_like(b, x, v); };
  const std::string& f = a.name;
  if (f == "Sigmoid") return b.unary("logistic", x);
  if (f == "Tanh") return b.unary("tanh", x);
  if (f == "Relu") return b.binary("max", x, c(0));
  if (f == "Affine") return b.add(b.mul(x, c(a.alpha)), c(a.beta));
  if (f == "LeakyRelu") return b.select(b.binary("lt", x, c(0)), b.mul(x, c(a.alpha)), x);
  if (f == "ThresholdedRelu") return b.select(b.binary("gt", x, c(a.alpha)), x, c(0));
  if (f == "ScaledTanh") return b.mul(c(a.alpha), b.unary("tanh", b.mul(x, c(a.beta))));
  if (f == "HardSigmoid")
    return b.binary("max", c(0), b.binary("min", c(1), b.add(b.mul(x, c(a.alpha)), c(a.beta))));
  if (f == "Elu")
    return b.select(b.binary("lt", x, c(0)), b.mul(c(a.alpha), b.sub(b.unary("exp", x), c(1))), x);
  if (f == "Softsign") return b.div(x, b.add(c(1), b.unary("abs", x)));
  if (f == "Softplus") return b.unary("log", b.add(b.unary("exp", x), c(1)));
  throw_user_error("activation '" + f + "' is not supported");
}

struct Rnn {
  NodeCtx& n;
  GraphBuilder& b;
  int64_t T;
  Dim B;  // may stay symbolic: only the sequence is unrolled
  int64_t H, gates;
  int dirs;
  bool batch_first;
  std::vector<Act> acts;  // per direction: gates' functions in ONNX order
  double clip = 0;

  // One direction's weight slice [gates*H, ...] of W, R, or bias [2*gates*H].
  ValueId dir_slice(ValueId w, int d) {
    Shape s = b.type(w).shape;
    s.erase(s.begin());
    return b.reshape(take(b, w, 0, {d}), s);
  }
  ValueId gate(ValueId v, int g) {  // columns [g*H, (g+1)*H) of [B, gates*H]
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < H; ++i) idx.push_back(g * H + i);
    return take(b, v, 1, idx);
  }
  ValueId proj(ValueId x, ValueId w) { return b.dot_general(x, w, {}, {}, {1}, {1}); }  // x w^T
  ValueId clipped(ValueId x) {
    if (clip <= 0) return x;
    return b.binary("min", b.binary("max", x, full_like(b, x, -clip)), full_like(b, x, clip));
  }
};

void rnn_family(NodeCtx& n, const std::string& kind) {
  GraphBuilder& b = n.b;
  int gates = kind == "RNN" ? 1 : kind == "GRU" ? 3 : 4;
  n.expect_rank(0, 3, 3);
  n.expect_rank(1, 3, 3);
  n.expect_rank(2, 3, 3);
  if (n.has(3)) n.expect_rank(3, 2, 2);
  bool bf = n.attr_i("layout", 0) != 0;
  const Shape xs = n.shape(0);
  const Dim& seq = bf ? xs[1] : xs[0];
  if (!seq.is_static())
    n.failf("X has symbolic sequence length '{}' ({}); rlx unrolls the steps, so it must be static",
            seq.sym, n.type(0).str());
  n.check_count(seq.value, "the unrolled sequence");
  int64_t T = seq.value;
  Dim B = bf ? xs[0] : xs[1];
  int64_t H = n.attr_i("hidden_size", 0);
  if (H <= 0) H = static_shape(n, n.type(2), "R")[2];
  std::string dir = n.attr_s("direction", "forward");
  int dirs = dir == "bidirectional" ? 2 : 1;
  if (n.attr_i("input_forget", 0)) n.fail("input_forget is not supported");
  Rnn r{n, b, T, B, H, gates, dirs, bf, {}, n.attr_f("clip", 0.0f)};
  // Activations: per direction, RNN 1, GRU 2 (f, g), LSTM 3 (f, g, h).
  int per = kind == "RNN" ? 1 : kind == "GRU" ? 2 : 3;
  const auto* al = n.attr("activations");
  auto alpha = n.attr_floats("activation_alpha"), beta = n.attr_floats("activation_beta");
  std::vector<std::string> defaults = kind == "RNN" ? std::vector<std::string>{"Tanh"}
                                      : kind == "GRU"
                                          ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                          : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  for (int i = 0; i < per * dirs; ++i) {
    Act a;
    a.name = al && i < al->strings_size() ? al->strings(i) : defaults[i % per];
    // Defaults as ONNX lists them for functions that take parameters.
    if (a.name == "LeakyRelu") a.alpha = 0.01;
    if (a.name == "HardSigmoid") a.alpha = 0.2, a.beta = 0.5;
    if (a.name == "Elu" || a.name == "ThresholdedRelu") a.alpha = 1.0;
    if (i < static_cast<int>(alpha.size())) a.alpha = alpha[i];
    if (i < static_cast<int>(beta.size())) a.beta = beta[i];
    r.acts.push_back(a);
  }
  ValueId X = n.x(0);
  if (bf) X = b.transpose(X, {1, 0, 2});  // [T, B, I]
  ValueId W = n.x(1), R = n.x(2);
  // Optional inputs; kNoValue when absent.
  auto opt = [&](int i, bool applies = true) { return applies && n.has(i) ? n.x(i) : kNoValue; };
  ValueId Bias = opt(3), h0 = opt(5), c0 = opt(6, kind == "LSTM"), P = opt(7, kind == "LSTM");
  ValueId lens = n.has(4) ? b.convert(n.x(4), DType::kI64) : kNoValue;
  bool lbr = n.attr_i("linear_before_reset", 0) != 0;
  DType dt = n.dtype(0);
  Shape bh{B, H};
  std::vector<std::vector<ValueId>> ys(dirs);
  std::vector<ValueId> last_h(dirs), last_c(dirs);
  for (int d = 0; d < dirs; ++d) {
    bool reverse = dir == "reverse" || d == 1;
    ValueId w = r.dir_slice(W, d), rr = r.dir_slice(R, d);
    std::optional<ValueId> wb, rb;
    if (Bias != kNoValue) {
      ValueId bb = r.dir_slice(Bias, d);
      std::vector<int64_t> lo, hi;
      for (int64_t i = 0; i < gates * H; ++i) lo.push_back(i), hi.push_back(gates * H + i);
      wb = b.broadcast_in_dim(take(b, bb, 0, lo), Shape{B, gates * H}, {1});
      rb = b.broadcast_in_dim(take(b, bb, 0, hi), Shape{B, gates * H}, {1});
    }
    ValueId h = h0 != kNoValue ? r.dir_slice(h0, d) : b.broadcast_in_dim(b.scalar(dt, 0), bh, {});
    ValueId c = c0 != kNoValue ? r.dir_slice(c0, d) : b.broadcast_in_dim(b.scalar(dt, 0), bh, {});
    auto peep = [&](int k) {
      ValueId p = r.dir_slice(P, d);
      std::vector<int64_t> idx;
      for (int64_t i = 0; i < H; ++i) idx.push_back(k * H + i);
      return b.broadcast_in_dim(take(b, p, 0, idx), bh, {1});
    };
    const Act* act = &r.acts[d * per];
    ys[d].resize(T);
    for (int64_t step = 0; step < T; ++step) {
      int64_t t = reverse ? T - 1 - step : step;
      ValueId xt = b.reshape(take(b, X, 0, {t}), Shape{B, b.type(X).shape[2]});
      ValueId xg = r.proj(xt, w), hg = r.proj(h, rr);
      if (wb) xg = b.add(xg, *wb);
      if (rb) hg = b.add(hg, *rb);
      ValueId h_new, c_new = c;
      if (kind == "RNN") {
        h_new = apply(b, act[0], r.clipped(b.add(xg, hg)));
      } else if (kind == "GRU") {
        ValueId z = apply(b, act[0], r.clipped(b.add(r.gate(xg, 0), r.gate(hg, 0))));
        ValueId rt = apply(b, act[0], r.clipped(b.add(r.gate(xg, 1), r.gate(hg, 1))));
        ValueId hh;
        if (lbr) {
          hh = b.add(r.gate(xg, 2), b.mul(rt, r.gate(hg, 2)));
        } else {
          // (r * H) Rh^T + Rbh: the recurrent product is recomputed with the reset state.
          std::vector<int64_t> idx;
          for (int64_t i = 0; i < H; ++i) idx.push_back(2 * H + i);
          ValueId rh = take(b, rr, 0, idx);
          hh = b.add(r.gate(xg, 2), r.proj(b.mul(rt, h), rh));
          if (rb) hh = b.add(hh, r.gate(*rb, 2));
        }
        ValueId ht = apply(b, act[1], r.clipped(hh));
        ValueId one = full_like(b, z, 1.0);
        h_new = b.add(b.mul(b.sub(one, z), ht), b.mul(z, h));
      } else {
        ValueId gi = b.add(r.gate(xg, 0), r.gate(hg, 0)), go = b.add(r.gate(xg, 1), r.gate(hg, 1));
        ValueId gf = b.add(r.gate(xg, 2), r.gate(hg, 2)), gc = b.add(r.gate(xg, 3), r.gate(hg, 3));
        if (P != kNoValue) gi = b.add(gi, b.mul(peep(0), c)), gf = b.add(gf, b.mul(peep(2), c));
        ValueId it = apply(b, act[0], r.clipped(gi)), ft = apply(b, act[0], r.clipped(gf));
        ValueId ct = apply(b, act[1], r.clipped(gc));
        c_new = b.add(b.mul(ft, c), b.mul(it, ct));
        if (P != kNoValue) go = b.add(go, b.mul(peep(1), c_new));
        ValueId ot = apply(b, act[0], r.clipped(go));
        h_new = b.mul(ot, apply(b, act[2], c_new));
      }
      ValueId y = h_new;
      if (lens != kNoValue) {
        // Steps past a row's length keep its state and output zeros.
        ValueId live =
            b.binary("lt",
                     b.broadcast_in_dim(b.constant(Tensor::from<int64_t>(DType::kI64, {}, {t})),
                                        Shape{B}, {}),
                     lens);
        live = b.broadcast_in_dim(live, bh, {0});
        h_new = b.select(live, h_new, h);
        c_new = b.select(live, c_new, c);
        y = b.select(live, y, full_like(b, y, 0.0));
      }
      h = h_new;
      c = c_new;
      ys[d][t] = y;
    }
    last_h[d] = h;
    last_c[d] = c;
  }
  if (n.wants(0)) {
    // Y [T, dirs, B, H] (layout 0) or [B, T, dirs, H] (layout 1).
    std::vector<ValueId> steps;
    for (int64_t t = 0; t < T; ++t) {
      std::vector<ValueId> per_dir;
      for (int d = 0; d < dirs; ++d) per_dir.push_back(b.reshape(ys[d][t], Shape{1, 1, B, H}));
      steps.push_back(b.concat(per_dir, 1));
    }
    ValueId y = b.concat(steps, 0);
    if (bf) y = b.transpose(y, {2, 0, 1, 3});
    n.out(0, y);
  }
  auto states = [&](std::vector<ValueId>& v) {
    std::vector<ValueId> parts;
    for (ValueId s : v) parts.push_back(b.reshape(s, Shape{1, B, H}));
    ValueId out = b.concat(parts, 0);
    return bf ? b.transpose(out, {1, 0, 2}) : out;
  };
  if (n.wants(1)) n.out(1, states(last_h));
  if (n.wants(2)) n.out(2, states(last_c));
}

}  // namespace

void register_rnn_ops(OpTable& t) {
  t["RNN"] = [](NodeCtx& n) { rnn_family(n, "RNN"); };
  t["GRU"] = [](NodeCtx& n) { rnn_family(n, "GRU"); };
  t["LSTM"] = [](NodeCtx& n) { rnn_family(n, "LSTM"); };
}

}  // namespace rlx::onnx
