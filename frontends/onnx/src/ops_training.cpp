// ai.onnx.preview.training optimizers: Adagrad, Momentum and Adam update steps, elementwise
// over each (X, G, state...) group as the ONNX definitions give them.
#include "op_util.h"

namespace rlx::onnx {

namespace {

// Inputs R (learning rate), T (step), then `groups` lists of `count` tensors each.
struct Opt {
  NodeCtx& n;
  GraphBuilder& b;
  int count;
  ValueId at(int group, int i) { return n.x(2 + group * count + i); }
  ValueId like(ValueId v, ValueId scalar) {
    return b.broadcast_in_dim(b.convert(b.reshape(scalar, Shape{}), b.type(v).dtype),
                              b.type(v).shape, {});
  }
  ValueId c(ValueId v, double x) { return full_like(b, v, x); }
};

void adagrad(NodeCtx& n) {
  Opt o{n, n.b, (n.num_inputs() - 2) / 3};
  GraphBuilder& b = n.b;
  double decay = n.attr_f("decay_factor", 0.0f), eps = n.attr_f("epsilon", 1e-6f),
         norm = n.attr_f("norm_coefficient", 0.0f);
  for (int i = 0; i < o.count; ++i) {
    ValueId x = o.at(0, i), g = o.at(1, i), h = o.at(2, i);
    ValueId t = o.like(x, b.convert(n.x(1), n.dtype(2)));
    ValueId r = b.div(o.like(x, n.x(0)), b.add(o.c(x, 1), b.mul(t, o.c(x, decay))));
    ValueId gr = b.add(b.mul(o.c(x, norm), x), g);
    ValueId hn = b.add(h, b.mul(gr, gr));
    ValueId ha = b.add(b.unary("sqrt", hn), o.c(x, eps));
    n.out(i, b.sub(x, b.div(b.mul(r, gr), ha)));
    n.out(o.count + i, hn);
  }
}

void momentum(NodeCtx& n) {
  Opt o{n, n.b, (n.num_inputs() - 2) / 3};
  GraphBuilder& b = n.b;
  double alpha = n.attr_f("alpha", 0.0f), beta = n.attr_f("beta", 0.0f),
         norm = n.attr_f("norm_coefficient", 0.0f);
  bool nesterov = n.attr_s("mode", "standard") == "nesterov";
  for (int i = 0; i < o.count; ++i) {
    ValueId x = o.at(0, i), g = o.at(1, i), v = o.at(2, i);
    ValueId t = o.like(x, b.convert(n.x(1), DType::kF64));
    ValueId ba = b.select(b.binary("gt", t, o.c(t, 0)), o.c(x, beta), o.c(x, 1.0));
    ValueId gr = b.add(b.mul(o.c(x, norm), x), g);
    ValueId vn = b.add(b.mul(o.c(x, alpha), v), b.mul(ba, gr));
    ValueId r = o.like(x, n.x(0));
    ValueId step = nesterov ? b.add(gr, b.mul(o.c(x, alpha), vn)) : vn;
    n.out(i, b.sub(x, b.mul(r, step)));
    n.out(o.count + i, vn);
  }
}

void adam(NodeCtx& n) {
  Opt o{n, n.b, (n.num_inputs() - 2) / 4};
  GraphBuilder& b = n.b;
  double alpha = n.attr_f("alpha", 0.9f), beta = n.attr_f("beta", 0.999f),
         eps = n.attr_f("epsilon", 1e-6f);
  double norm = n.attr_f("norm_coefficient", 0.0f), post = n.attr_f("norm_coefficient_post", 0.0f);
  for (int i = 0; i < o.count; ++i) {
    ValueId x = o.at(0, i), g = o.at(1, i), v = o.at(2, i), h = o.at(3, i);
    ValueId t = o.like(x, n.x(1));
    ValueId gr = b.add(b.mul(o.c(x, norm), x), g);
    ValueId vn = b.add(b.mul(o.c(x, alpha), v), b.mul(o.c(x, 1 - alpha), gr));
    ValueId hn = b.add(b.mul(o.c(x, beta), h), b.mul(o.c(x, 1 - beta), b.mul(gr, gr)));
    ValueId hs = b.add(b.unary("sqrt", hn), o.c(x, eps));
    ValueId r = o.like(x, n.x(0));
    // Bias correction once a step has been taken: R sqrt(1 - beta^T) / (1 - alpha^T).
    ValueId corr = b.div(b.unary("sqrt", b.sub(o.c(x, 1), b.binary("pow", o.c(x, beta), t))),
                         b.sub(o.c(x, 1), b.binary("pow", o.c(x, alpha), t)));
    ValueId ra = b.select(b.binary("gt", t, o.c(t, 0)), b.mul(r, corr), r);
    ValueId xn = b.sub(x, b.div(b.mul(ra, vn), hs));
    n.out(i, b.mul(o.c(x, 1 - post), xn));
    n.out(o.count + i, vn);
    n.out(2 * o.count + i, hn);
  }
}

}  // namespace

void register_training_ops(OpTable& t) {
  t["ai.onnx.preview.training.Adagrad"] = adagrad;
  t["ai.onnx.preview.training.Momentum"] = momentum;
  t["ai.onnx.preview.training.Adam"] = adam;
}

}  // namespace rlx::onnx
