// The update rules as MIR, and the learning-rate schedule both in the graph and on the host.
#include "rlx/core/optimizers.h"

#include <fmt/format.h>

#include <cmath>

#include "rlx/core/error.h"

namespace rlx {

namespace {

ValueId scalar_like(GraphBuilder& b, ValueId like, double v) { return b.scalar(b.type(like).dtype, v); }

ValueId times(GraphBuilder& b, ValueId x, ValueId scalar) {
  return b.mul(x, b.broadcast_in_dim(scalar, b.type(x).shape, {}));
}

ValueId times(GraphBuilder& b, ValueId x, double v) { return b.mul(x, b.full_like(x, v)); }

// lr(step) as a scalar of the graph: linear warm-up, then constant or cosine decay.
ValueId scheduled_lr(GraphBuilder& b, const OptimizerConfig& c, ValueId step) {
  const LrSchedule& s = c.schedule;
  ValueId lr = scalar_like(b, step, c.lr);
  if (s.kind == LrSchedule::Kind::kCosine && s.total_steps > 0) {
    // progress = min(max(step - warmup, 0), total) / total
    ValueId after = b.sub(step, scalar_like(b, step, static_cast<double>(s.warmup_steps)));
    after = b.binary("max", after, scalar_like(b, step, 0.0));
    after = b.binary("min", after, scalar_like(b, step, static_cast<double>(s.total_steps)));
    ValueId progress = b.mul(after, scalar_like(b, step, 1.0 / static_cast<double>(s.total_steps)));
    ValueId cosine = b.unary("cos", b.mul(progress, scalar_like(b, step, M_PI)));
    ValueId half = b.mul(b.add(cosine, scalar_like(b, step, 1.0)), scalar_like(b, step, 0.5));
    lr = b.add(scalar_like(b, step, s.min_lr), b.mul(half, scalar_like(b, step, c.lr - s.min_lr)));
  }
  if (s.warmup_steps > 0) {
    ValueId ramp = b.mul(b.add(step, scalar_like(b, step, 1.0)),
                         scalar_like(b, step, 1.0 / static_cast<double>(s.warmup_steps)));
    lr = b.mul(lr, b.binary("min", ramp, scalar_like(b, step, 1.0)));
  }
  return lr;
}

// Every gradient times min(1, clip / (norm + 1e-6)), norm = sqrt(sum_sq), the L2 norm of all of
// them together.
std::vector<ValueId> clipped(GraphBuilder& b, double clip, const std::vector<ValueId>& grads,
                             ValueId sum_sq) {
  ValueId norm = b.unary("sqrt", sum_sq);
  ValueId scale = b.div(scalar_like(b, sum_sq, clip), b.add(norm, scalar_like(b, sum_sq, 1e-6)));
  scale = b.binary("min", scale, scalar_like(b, sum_sq, 1.0));
  std::vector<ValueId> out;
  for (ValueId g : grads) out.push_back(times(b, g, b.convert(scale, b.type(g).dtype)));
  return out;
}

}  // namespace

ValueId sum_of_squares(GraphBuilder& b, const std::vector<ValueId>& grads, ValueId like) {
  ValueId total = scalar_like(b, like, 0.0);
  for (ValueId g : grads) {
    IntList axes;
    for (int64_t i = 0; i < b.type(g).rank(); ++i) axes.push_back(i);
    ValueId sq = b.mul(g, g);
    ValueId sum = axes.empty() ? sq : b.reduce(sq, axes, ReduceKind::kSum);
    total = b.add(total, b.convert(sum, b.type(like).dtype));
  }
  return total;
}

std::vector<std::string> optimizer_state_names(const OptimizerConfig& c) {
  if (c.kind == OptimizerConfig::Kind::kSgd) return c.momentum != 0.0 ? std::vector<std::string>{"m"} : std::vector<std::string>{};
  return {"m", "v"};
}

double learning_rate_at(const OptimizerConfig& c, int64_t step) {
  const LrSchedule& s = c.schedule;
  double lr = c.lr;
  if (s.kind == LrSchedule::Kind::kCosine && s.total_steps > 0) {
    double after = std::min<double>(std::max<double>(static_cast<double>(step - s.warmup_steps), 0.0),
                                    static_cast<double>(s.total_steps));
    lr = s.min_lr + 0.5 * (1.0 + std::cos(M_PI * after / static_cast<double>(s.total_steps))) * (c.lr - s.min_lr);
  }
  if (s.warmup_steps > 0) lr *= std::min(1.0, static_cast<double>(step + 1) / static_cast<double>(s.warmup_steps));
  return lr;
}

OptimizerUpdate append_optimizer(GraphBuilder& b, const OptimizerConfig& c, const OptimizerValues& v) {
  RLX_CHECK(v.params.size() == v.grads.size() && v.params.size() == v.state.size(),
            "optimizer: params, grads and state differ in count");
  std::vector<ValueId> grads = v.grads;
  if (c.clip_norm > 0) {
    const ValueId sum_sq =
        v.grad_sum_of_squares != kNoValue ? v.grad_sum_of_squares : sum_of_squares(b, v.grads, v.step);
    grads = clipped(b, c.clip_norm, v.grads, sum_sq);
  }
  ValueId lr = scheduled_lr(b, c, v.step);
  OptimizerUpdate out;
  // Adam's bias corrections 1 - beta^t, t = step + 1, shared by every parameter.
  ValueId t = b.add(v.step, scalar_like(b, v.step, 1.0));
  ValueId correct1 = kNoValue, correct2 = kNoValue;
  if (c.kind != OptimizerConfig::Kind::kSgd) {
    correct1 = b.sub(scalar_like(b, t, 1.0), b.binary("pow", scalar_like(b, t, c.beta1), t));
    correct2 = b.sub(scalar_like(b, t, 1.0), b.binary("pow", scalar_like(b, t, c.beta2), t));
  }
  for (size_t i = 0; i < v.params.size(); ++i) {
    ValueId p = v.params[i], g = grads[i];
    DType dt = b.type(p).dtype;
    ValueId lr_p = b.convert(lr, dt);
    std::vector<ValueId> state;
    if (c.kind == OptimizerConfig::Kind::kSgd) {
      if (c.weight_decay != 0) g = b.add(g, times(b, p, c.weight_decay));
      ValueId dir = g;
      if (c.momentum != 0) {
        ValueId m = b.add(times(b, v.state[i].at(0), c.momentum), g);
        state.push_back(m);
        dir = c.nesterov ? b.add(g, times(b, m, c.momentum)) : m;
      }
      out.params.push_back(b.sub(p, times(b, dir, lr_p)));
    } else {
      if (c.kind == OptimizerConfig::Kind::kAdamW && c.weight_decay != 0)
        p = b.sub(p, times(b, p, b.mul(lr_p, b.scalar(dt, c.weight_decay))));
      if (c.kind == OptimizerConfig::Kind::kAdam && c.weight_decay != 0) g = b.add(g, times(b, p, c.weight_decay));
      ValueId m = b.add(times(b, v.state[i].at(0), c.beta1), times(b, g, 1.0 - c.beta1));
      ValueId s = b.add(times(b, v.state[i].at(1), c.beta2), times(b, b.mul(g, g), 1.0 - c.beta2));
      state = {m, s};
      ValueId m_hat = times(b, m, b.convert(b.div(scalar_like(b, t, 1.0), correct1), dt));
      ValueId s_hat = times(b, s, b.convert(b.div(scalar_like(b, t, 1.0), correct2), dt));
      ValueId denom = b.add(b.unary("sqrt", s_hat), b.full_like(s_hat, c.eps));
      out.params.push_back(b.sub(p, times(b, b.div(m_hat, denom), lr_p)));
    }
    out.state.push_back(state);
  }
  return out;
}

}  // namespace rlx
