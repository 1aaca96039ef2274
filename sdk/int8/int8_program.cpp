// MIR (after an int8 target's dispatch) -> Int8Program, and the host reference that runs it.
#include "int8_program.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "rlx/core/error.h"
#include "rlx/core/quantize.h"

extern "C" {
#include "rlx_cm_int8.h"
}

namespace rlx::int8 {

namespace {

std::string how_to_quantize(const std::string& target) {
  return fmt::format(
      "{} runs int8 graphs only: quantize the model with `rlx quantize --scheme int8` "
      "(calibrated activation ranges) and compile the quantized model",
      target);
}

// The constant behind a value (a constant node or a parameter with data), or nullopt.
std::optional<Tensor> constant_of(const Graph& g, ValueId v) {
  const Value& val = g.values.at(v);
  if (val.producer >= 0) {
    const Node& n = g.nodes.at(val.producer);
    if (n.op == "constant" && n.has_attr("value")) return n.attr_tensor("value");
    return std::nullopt;
  }
  auto w = g.weights.find(val.name);
  if (w != g.weights.end() && w->second.defined()) return w->second;
  return std::nullopt;
}

std::string node_name(const Graph& g, int32_t i) {
  return g.describe_node(i);
}

Tensor need_constant(const Graph& g, int32_t node, int input, const char* what,
                     const std::string& target) {
  std::optional<Tensor> t = constant_of(g, g.nodes[node].inputs[input]);
  if (!t)
    throw_user_error(
        fmt::format("{}: {} of {} is computed at run time; the target bakes it "
                    "into the generated code and needs a constant. {}",
                    target, what, node_name(g, node), how_to_quantize(target)));
  return *t;
}

// A quantized layer waiting for the layer that consumes its output, whose activation
// parameters decide its requantization; the pools between them work in that quantization.
struct Pending {
  Layer layer;
  std::vector<float> acc_scale;  // real value of one accumulator unit, per channel
  std::vector<Layer> pools;
  double clip_lo = -INFINITY, clip_hi = INFINITY;  // a fused Clip's bounds (real values)
  float skip_scale = 0;  // a fused residual Add: the skip's activation scale
};

// A value that feeds a quantized layer and, later, a residual Add: it stays in its buffer in
// the quantization of that layer's input until the Add.
struct Skip {
  ValueId value = -1;
  int32_t from = -1;  // the step that writes it; -1: the model's input
  float scale = 1;
  int32_t zero8 = 0;
};

void finish_int8(Pending& p, float next_scale, int32_t next_zero8, const std::string& target) {
  Layer& l = p.layer;
  l.int8_out = true;
  l.zero_out = next_zero8;
  l.lo = l.relu ? std::max(next_zero8, -128) : -128;
  l.hi = 127;
  // Rounding is monotone, so quantizing the clipped value is clamping the quantized one.
  auto quantized = [&](double real) {
    return static_cast<int32_t>(
        std::clamp(std::nearbyint(real / next_scale) + next_zero8, -128.0, 127.0));
  };
  if (std::isfinite(p.clip_lo)) l.lo = std::max(l.lo, quantized(p.clip_lo));
  if (std::isfinite(p.clip_hi)) l.hi = std::min(l.hi, quantized(p.clip_hi));
  l.hi = std::max(l.hi, l.lo);
  for (int32_t n = 0; n < l.n; ++n) {
    FixedPoint f = to_fixed_point(
        static_cast<double>(p.acc_scale[n]) / next_scale,
        fmt::format("{}: the requantization of channel {} of {}", target, n, l.name));
    l.m.push_back(f.m);
    l.r.push_back(static_cast<int8_t>(f.r));
  }
  for (Layer& pool : p.pools) pool.zero_in = next_zero8;
  if (l.residual) {
    FixedPoint f = to_fixed_point(
        static_cast<double>(p.skip_scale) / next_scale,
        fmt::format("{}: the rescaling of the residual added to {}", target, l.name));
    l.residual_m = f.m;
    l.residual_r = f.r;
  }
}

// Gives every step the arena slots it reads and writes: a step never writes the slot it reads
// nor one that holds a skip still to be added. Returns the number of slots.
int32_t assign_slots(std::vector<Layer>& layers) {
  const int32_t steps = static_cast<int32_t>(layers.size());
  std::vector<int32_t> kept_until(steps, -1);
  for (int32_t k = 0; k < steps; ++k)
    if (layers[k].residual && layers[k].residual_from >= 0) kept_until[layers[k].residual_from] = k;
  int32_t slots = 0;
  for (int32_t i = 0; i < steps; ++i) {
    Layer& l = layers[i];
    l.in_slot = i == 0 ? -1 : layers[i - 1].out_slot;
    if (l.residual) l.residual_slot = l.residual_from < 0 ? -1 : layers[l.residual_from].out_slot;
    if (i + 1 == steps) break;  // writes the caller's output
    std::vector<bool> busy(4, false);
    if (l.in_slot >= 0) busy[l.in_slot] = true;
    for (int32_t j = 0; j < i; ++j)
      if (kept_until[j] >= i && layers[j].out_slot >= 0) busy[layers[j].out_slot] = true;
    int32_t slot = 0;
    while (busy[slot]) ++slot;
    l.out_slot = slot;
    slots = std::max(slots, slot + 1);
  }
  return slots;
}

// The one-sample dims of a value ([1, C, H, W] -> {C, H, W}); the batch must be 1.
std::vector<int64_t> sample_dims(const Graph& g, ValueId v, const std::string& target) {
  const TensorType& t = g.type(v);
  std::vector<int64_t> dims;
  for (size_t i = 0; i < t.shape.size(); ++i) {
    if (!t.shape[i].is_static() || (i == 0 && t.rank() > 1 && t.shape[0].value != 1))
      throw_user_error(
          fmt::format("{}: {} is {}; the generated entry point takes one sample with static "
                      "dims (bind the batch to 1)",
                      target, g.values[v].name.empty() ? "a value" : g.values[v].name, t.str()));
    if (i > 0 || t.rank() == 1) dims.push_back(t.shape[i].value);
  }
  return dims;
}

int32_t numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return static_cast<int32_t>(n);
}

IntList ints_or(const Node& n, const char* key, IntList fallback) {
  return n.has_attr(key) ? n.attr_ints(key) : fallback;
}

// The window of a QConv or pool node over its input dims {C, H, W}.
Window window_of(const Node& n, const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                 int64_t kh, int64_t kw) {
  const IntList st = ints_or(n, "strides", {1, 1}), pads = ints_or(n, "pads", {0, 0, 0, 0});
  Window w;
  w.c = static_cast<int32_t>(in[0]);
  w.h = static_cast<int32_t>(in[1]);
  w.w = static_cast<int32_t>(in[2]);
  w.kh = static_cast<int32_t>(kh);
  w.kw = static_cast<int32_t>(kw);
  w.sh = static_cast<int32_t>(st[0]);
  w.sw = static_cast<int32_t>(st[1]);
  w.pt = static_cast<int32_t>(pads[0]);
  w.pl = static_cast<int32_t>(pads[1]);
  w.oh = static_cast<int32_t>(out[1]);
  w.ow = static_cast<int32_t>(out[2]);
  return w;
}

}  // namespace

FixedPoint to_fixed_point(double real, const std::string& what) {
  if (!(real > 0) || !std::isfinite(real))
    throw_user_error(
        fmt::format("{} has the multiplier {}, which is not a positive "
                    "finite number; the quantization parameters are broken",
                    what, real));
  int exp = 0;
  const double mant = std::frexp(real, &exp);  // real = mant * 2^exp, mant in [0.5, 1)
  int64_t m = std::llround(mant * 2147483648.0);
  if (m == (int64_t{1} << 31)) {
    m /= 2;
    ++exp;
  }
  const int r = 31 - exp;
  if (r < 1 || r > 62)
    throw_user_error(
        fmt::format("{} has the multiplier {}, outside what fixed point "
                    "with a 31-bit mantissa holds (2^-31 to 2^30); re-quantize with "
                    "activation ranges that are not degenerate",
                    what, real));
  return {static_cast<int32_t>(m), r};
}

Int8Program lower_int8(const Graph& g, const std::string& target) {
  if (g.inputs.size() != 1 || g.outputs.size() != 1)
    throw_user_error(
        fmt::format("{}: the graph has {} inputs and {} outputs; the generated "
                    "entry point takes one input and one output",
                    target, g.inputs.size(), g.outputs.size()));
  Int8Program p;
  p.input_name = g.values[g.inputs[0]].name;
  p.output_name = g.values[g.outputs[0]].name;
  std::map<ValueId, int> uses;
  for (const Node& n : g.nodes)
    for (ValueId v : n.inputs) ++uses[v];
  for (ValueId v : g.outputs) ++uses[v];

  ValueId cur = g.inputs[0];
  // The device keeps [C, H, W] activations as NHWC (rlx_cm_int8.h). `layout` is the [C, H, W] of
  // the current value's NHWC order; after a reshape that flattens it, `flattened` holds it until
  // a dense layer takes the value with its weight columns permuted to match.
  std::vector<int64_t> layout, flattened;
  if (std::vector<int64_t> d = sample_dims(g, cur, target); d.size() == 3) layout = d;
  auto multi_channel = [](const std::vector<int64_t>& d) { return d.size() == 3 && d[0] > 1; };
  std::optional<Pending> pending;
  int32_t widest = 0;
  // Every node but constants must take the chain's current value, and only it may use it.
  std::optional<Skip> skip;
  auto chained = [&](int32_t i, const char* what, bool may_keep = false) {
    const Node& n = g.nodes[i];
    const bool kept = may_keep && !skip && uses[cur] == 2;  // becomes a residual's skip
    if (n.inputs.empty() || n.inputs[0] != cur || (uses[cur] != 1 && !kept))
      throw_user_error(
          fmt::format("{}: {} is not fed by the chain's previous result alone; the target "
                      "lowers a chain of {} (one input, one output, no branches)",
                      target, node_name(g, i), what));
    if (p.softmax)
      throw_user_error(fmt::format(
          "{}: {} follows the Softmax; the target lowers a Softmax only as the end of the chain",
          target, node_name(g, i)));
  };
  auto need_pending = [&](int32_t i, const char* why) {
    if (!pending)
      throw_user_error(fmt::format("{}: {} comes before the first quantized layer; {}", target,
                                   node_name(g, i), why));
  };
  for (int32_t i = 0; i < static_cast<int32_t>(g.nodes.size()); ++i) {
    const Node& n = g.nodes[i];
    if (n.op == "constant") continue;
    if (n.op == "reshape") {
      chained(i, "layers");
      const std::vector<int64_t> out = sample_dims(g, n.outputs[0], target);
      if (out.size() == 3) {
        if (multi_channel(layout) && out != layout)
          throw_user_error(fmt::format(
              "{}: {} reshapes a [{}] activation into [{}]; the target keeps activations "
              "channels-last, and lowers only reshapes that flatten one for a dense layer",
              target, node_name(g, i), fmt::join(layout, ", "), fmt::join(out, ", ")));
        layout = out;
      } else if (!layout.empty()) {
        flattened = layout;  // NCHW order in the graph, NHWC on the device
        layout.clear();
      }
      cur = n.outputs[0];
      continue;
    }
    if (n.op == "Softmax") {
      chained(i, "layers");
      const int64_t rank = g.type(n.inputs[0]).rank();
      const int64_t axis = n.attr_int("axis", -1);
      if (!pending || pending->layer.kind != LayerKind::kDense || !pending->pools.empty() ||
          (axis != -1 && axis != rank - 1))
        throw_user_error(
            fmt::format("{}: {} is not a Softmax over the last axis of the last "
                        "quantized dense layer, the one form the target lowers",
                        target, node_name(g, i)));
      p.softmax = true;
      cur = n.outputs[0];
      continue;
    }
    if (n.op == "Relu") {
      chained(i, "layers");
      if (!pending || !pending->pools.empty() || pending->layer.relu)
        throw_user_error(
            fmt::format("{}: {} does not follow a quantized layer; the target fuses ReLU into "
                        "the requantization of the QMatMul or QConv before it",
                        target, node_name(g, i)));
      pending->layer.relu = true;
      cur = n.outputs[0];
      continue;
    }
    if (n.op == "Clip") {
      chained(i, "layers");
      if (!pending || !pending->pools.empty())
        throw_user_error(
            fmt::format("{}: {} does not follow a quantized layer; the target fuses Clip (ReLU6) "
                        "into the requantization of the QMatMul or QConv before it",
                        target, node_name(g, i)));
      if (n.has_attr("min")) pending->clip_lo = std::max(pending->clip_lo, n.attr_float("min", 0));
      if (n.has_attr("max")) pending->clip_hi = std::min(pending->clip_hi, n.attr_float("max", 0));
      cur = n.outputs[0];
      continue;
    }
    if (n.op == "Add") {
      const bool first = n.inputs.size() == 2 && n.inputs[0] == cur;
      const ValueId other = n.inputs.size() == 2 ? n.inputs[first ? 1 : 0] : -1;
      if (!skip || other != skip->value || (!first && n.inputs[1] != cur) || uses[cur] != 1 ||
          !pending || !pending->pools.empty() || pending->layer.residual ||
          std::isfinite(pending->clip_lo) || std::isfinite(pending->clip_hi) ||
          !(g.type(n.inputs[0]) == g.type(n.inputs[1])))
        throw_user_error(fmt::format(
            "{}: {} is not a residual Add the target lowers: the result of a quantized layer "
            "(ReLU allowed, no pool or clip between) plus a value of the same shape that also "
            "feeds a quantized layer earlier in the chain",
            target, node_name(g, i)));
      Layer& l = pending->layer;
      l.residual = true;
      l.residual_from = skip->from;
      l.residual_zero = skip->zero8;
      pending->skip_scale = skip->scale;
      l.pre_relu = l.relu;  // a ReLU seen so far acts on the accumulators, before the add
      l.relu = false;
      skip.reset();
      cur = n.outputs[0];
      continue;
    }
    if (n.op == "MaxPool" || n.op == "AveragePool") {
      chained(i, "layers");
      need_pending(i, "pools work on the int8 activations of a quantized layer");
      const std::vector<int64_t> in = sample_dims(g, n.inputs[0], target),
                                 out = sample_dims(g, n.outputs[0], target);
      const IntList k = n.attr_ints("kernel_shape");
      Layer pool;
      pool.kind = n.op == "MaxPool" ? LayerKind::kMaxPool : LayerKind::kAvgPool;
      pool.name = n.loc.empty() ? g.values[n.outputs[0]].name : n.loc;
      pool.win = window_of(n, in, out, k[0], k[1]);
      pool.in_size = numel(in);
      pool.out_size = numel(out);
      pending->pools.push_back(std::move(pool));
      layout = out;
      cur = n.outputs[0];
      continue;
    }
    const bool conv = n.op == "QConv";
    if (n.op != "QMatMul" && !conv)
      throw_user_error(
          fmt::format("{}: {} is not part of an int8 chain (QMatMul and QConv with calibrated "
                      "activations, Relu, MaxPool, AveragePool); the target lowers only those "
                      "so far. {}",
                      target, node_name(g, i), how_to_quantize(target)));
    const bool keeps = uses[cur] == 2;
    chained(i, "quantized layers", true);
    if (n.inputs.size() < 5)
      throw_user_error(
          fmt::format("{}: {} quantizes its activations per row at run time "
                      "(int8-dynamic), which needs float on the device. {}",
                      target, node_name(g, i), how_to_quantize(target)));
    Tensor w = need_constant(g, i, 1, "the weight", target);
    Tensor ws = need_constant(g, i, 2, "the weight scale", target);
    const float xs =
        static_cast<float>(need_constant(g, i, 3, "the activation scale", target).scalar_at(0));
    const int32_t xz8 =
        static_cast<int32_t>(
            need_constant(g, i, 4, "the activation zero point", target).scalar_at(0)) -
        128;
    std::optional<Tensor> bias;
    if (n.inputs.size() == 6) bias = need_constant(g, i, 5, "the bias", target);
    const std::vector<int64_t> in = sample_dims(g, n.inputs[0], target),
                               out = sample_dims(g, n.outputs[0], target);

    if (pending) {
      finish_int8(*pending, xs, xz8, target);
      widest = std::max(widest, pending->layer.out_size);
      p.layers.push_back(std::move(pending->layer));
      for (Layer& pool : pending->pools) {
        widest = std::max(widest, pool.out_size);
        p.layers.push_back(std::move(pool));
      }
    } else {
      const std::vector<int64_t> dims = sample_dims(g, g.inputs[0], target);
      p.input_size = numel(dims);
      if (dims.size() == 3) p.input_chw.assign(dims.begin(), dims.end());
      p.input_scale = xs;
      p.input_zero = xz8;
    }
    // The input is kept for a residual Add, in this layer's input quantization.
    if (keeps) skip = Skip{cur, static_cast<int32_t>(p.layers.size()) - 1, xs, xz8};
    Pending next;
    Layer& l = next.layer;
    l.kind = conv ? LayerKind::kConv : LayerKind::kDense;
    l.name = n.loc.empty() ? g.values[n.outputs[0]].name : n.loc;
    l.n = static_cast<int32_t>(w.shape()[0]);
    l.k = static_cast<int32_t>(w.numel() / w.shape()[0]);
    l.in_size = numel(in);
    l.out_size = numel(out);
    const int8_t* wq = w.as<int8_t>();
    l.w.assign(wq, wq + static_cast<size_t>(l.n) * l.k);
    if (conv) {
      if (in.size() != 3 || !flattened.empty())
        throw_user_error(fmt::format("{}: {} convolves a value that is not a [C, H, W] image "
                                     "(or was flattened before it)",
                                     target, node_name(g, i)));
      l.win = window_of(n, in, out, w.shape()[2], w.shape()[3]);
      l.win.group = static_cast<int32_t>(n.attr_int("group", 1));
      l.zero_in = xz8;
      // [n][c / group][kh][kw] -> [n][kh][kw][c / group], the order of an NHWC window.
      const int64_t cg = w.shape()[1], taps = w.shape()[2] * w.shape()[3];
      for (int32_t o = 0; o < l.n; ++o)
        for (int64_t ci = 0; ci < cg; ++ci)
          for (int64_t t = 0; t < taps; ++t)
            l.w[static_cast<size_t>(o) * l.k + t * cg + ci] =
                wq[static_cast<size_t>(o) * l.k + ci * taps + t];
      // Windows that meet padding add the input's zero point times the weights there: their sum
      // per kernel position, so a border window adds kh * kw sums, not every weight.
      const Window& v = l.win;
      const bool padded = v.pt > 0 || v.pl > 0 || (v.oh - 1) * v.sh + v.kh > v.h + v.pt ||
                          (v.ow - 1) * v.sw + v.kw > v.w + v.pl;
      if (padded && xz8 != 0)
        for (int32_t o = 0; o < l.n; ++o)
          for (int64_t t = 0; t < taps; ++t) {
            int32_t sum = 0;
            for (int64_t ci = 0; ci < cg; ++ci) sum += l.w[static_cast<size_t>(o) * l.k + t * cg + ci];
            l.taps.push_back(sum);
          }
      layout = out;
    } else {
      if (l.in_size != l.k)
        throw_user_error(fmt::format("{}: {} takes {} values per sample, its input holds {}",
                                     target, node_name(g, i), l.k, l.in_size));
      // A flattened [C, H, W] reaches the device as NHWC: column (c H + h) W + w of the graph's
      // weight multiplies element (h W + w) C + c.
      const std::vector<int64_t> from = !flattened.empty() ? flattened : layout;
      if (multi_channel(from)) {
        const int64_t ch = from[0], hw = from[1] * from[2];
        for (int32_t o = 0; o < l.n; ++o)
          for (int64_t c = 0; c < ch; ++c)
            for (int64_t q = 0; q < hw; ++q)
              l.w[static_cast<size_t>(o) * l.k + q * ch + c] =
                  wq[static_cast<size_t>(o) * l.k + c * hw + q];
      }
      flattened.clear();
      layout.clear();
    }
    for (int32_t o = 0; o < l.n; ++o) {
      const float sc = xs * ws.as<float>()[o];
      next.acc_scale.push_back(sc);
      // Padding reads the input's zero point, so the zero point's share covers the whole
      // kernel of a convolution as it does a dense row.
      int64_t row_sum = 0;
      for (int32_t j = 0; j < l.k; ++j) row_sum += wq[static_cast<size_t>(o) * l.k + j];
      const double b = bias ? std::nearbyint(static_cast<double>(bias->as<float>()[o]) / sc) : 0.0;
      const double folded = b - static_cast<double>(xz8) * static_cast<double>(row_sum);
      if (!(std::fabs(folded) < 2147483647.0))
        throw_user_error(
            fmt::format("{}: the bias of channel {} of {} is {} accumulator "
                        "units, more than int32 holds; the weight or activation "
                        "scale is degenerate",
                        target, o, node_name(g, i), folded));
      l.bias.push_back(static_cast<int32_t>(folded));
    }
    pending = std::move(next);
    cur = n.outputs[0];
  }
  if (!pending)
    throw_user_error(fmt::format("{}: the graph has no quantized layer. {}", target,
                                 how_to_quantize(target)));
  if (pending->layer.kind != LayerKind::kDense || !pending->pools.empty())
    throw_user_error(fmt::format(
        "{}: the chain ends with {}; the target's output is the int32 accumulators of a final "
        "quantized dense layer (QMatMul), so end the model with one",
        target, pending->pools.empty() ? pending->layer.name : pending->pools.back().name));
  if (g.outputs[0] != cur)
    throw_user_error(
        fmt::format("{}: the output {} is not the end of the chain", target, p.output_name));
  if (skip)
    throw_user_error(fmt::format(
        "{}: {} is read twice but never added back by a residual Add; the target lowers a chain "
        "whose only branch is a residual",
        target, g.values[skip->value].name));
  if (pending->layer.residual)
    throw_user_error(fmt::format(
        "{}: the last layer {} ends in a residual Add; its output is int32 accumulators, so end "
        "the model with a quantized dense layer after it",
        target, pending->layer.name));
  if (std::isfinite(pending->clip_lo) || std::isfinite(pending->clip_hi))
    throw_user_error(fmt::format(
        "{}: the last layer {} is clipped; its output is int32 accumulators, which the target "
        "does not clip: take the clip on the real outputs (acc * scale) instead",
        target, pending->layer.name));
  Pending& last = *pending;
  last.layer.int8_out = false;
  last.layer.out_scale = last.acc_scale;
  p.output_size = last.layer.n;
  if (p.softmax)
    for (int32_t o = 0; o < last.layer.n; ++o) {
      FixedPoint f =
          to_fixed_point(static_cast<double>(last.acc_scale[o]) * 4096.0,
                         fmt::format("{}: the logit scale of class {} of the Softmax", target, o));
      p.softmax_m.push_back(f.m);
      p.softmax_r.push_back(static_cast<int8_t>(f.r));
    }
  p.layers.push_back(std::move(last.layer));
  p.slot_bytes = (widest + 3) / 4 * 4;
  p.arena_bytes = assign_slots(p.layers) * p.slot_bytes;
  if (p.softmax) {  // the accumulators and the exponentials, 4 bytes each
    p.softmax_offset = p.arena_bytes;
    p.arena_bytes += 8 * p.output_size;
  }
  return p;
}

const char* layer_kind_name(LayerKind k) {
  switch (k) {
    case LayerKind::kDense: return "dense";
    case LayerKind::kConv: return "conv";
    case LayerKind::kMaxPool: return "max pool";
    case LayerKind::kAvgPool: return "average pool";
  }
  return "?";
}

bool Int8Program::has(LayerKind k) const {
  for (const Layer& l : layers)
    if (l.kind == k) return true;
  return false;
}

std::vector<int32_t> run_reference(const Int8Program& p, const int8_t* input) {
  std::vector<int8_t> arena(static_cast<size_t>(std::max(p.arena_bytes, 1)));
  auto at = [&](int32_t slot) {
    return slot < 0 ? const_cast<int8_t*>(input) : arena.data() + slot * p.slot_bytes;
  };
  std::vector<int32_t> out(p.output_size);
  for (const Layer& l : p.layers) {
    const int8_t* a = at(l.in_slot);
    if (!l.int8_out) {
      rlx_cm_dense_s32(a, l.w.data(), l.bias.data(), l.n, l.k, l.relu ? 1 : 0, out.data());
      if (p.softmax) {
        std::vector<uint32_t> e(p.output_size);
        std::vector<int8_t> probabilities(p.output_size);
        rlx_cm_softmax_s8(out.data(), p.softmax_m.data(), p.softmax_r.data(), p.output_size,
                          e.data(), probabilities.data());
        out.assign(probabilities.begin(), probabilities.end());
      }
      break;
    }
    int8_t* b = at(l.out_slot);
    const rlx_cm_window win{l.win.c,  l.win.h,  l.win.w,  l.win.kh, l.win.kw, l.win.sh,
                            l.win.sw, l.win.pt, l.win.pl, l.win.oh, l.win.ow, l.win.group};
    const rlx_cm_residual res{at(l.residual_slot), l.residual_zero, l.residual_m, l.residual_r,
                              l.pre_relu ? 1 : 0};
    const rlx_cm_residual* r = l.residual ? &res : nullptr;
    switch (l.kind) {
      case LayerKind::kDense:
        rlx_cm_dense_s8(a, l.w.data(), l.bias.data(), l.m.data(), l.r.data(), l.n, l.k, r,
                        l.zero_out, l.lo, l.hi, b);
        break;
      case LayerKind::kConv:
        rlx_cm_conv_s8(a, &win, l.w.data(), l.taps.empty() ? nullptr : l.taps.data(),
                       l.bias.data(), l.m.data(), l.r.data(), l.n, r, l.zero_in, l.zero_out, l.lo,
                       l.hi, b);
        break;
      case LayerKind::kMaxPool: rlx_cm_maxpool_s8(a, &win, b); break;
      case LayerKind::kAvgPool: rlx_cm_avgpool_s8(a, &win, l.zero_in, b); break;
    }
  }
  return out;
}

std::vector<int8_t> quantize_input(const Int8Program& p, const float* x) {
  quant::U8Params u8{p.input_scale, static_cast<uint8_t>(p.input_zero + 128)};
  std::vector<uint8_t> q(p.input_size);
  quant::quantize_u8(x, p.input_size, u8, q.data());
  std::vector<int8_t> out(p.input_size);
  const int32_t c = p.input_chw.empty() ? 1 : p.input_chw[0];
  const int32_t hw = c > 1 ? p.input_size / c : p.input_size;
  for (int32_t ch = 0; ch < c; ++ch)
    for (int32_t i = 0; i < hw; ++i) out[i * c + ch] = static_cast<int8_t>(q[ch * hw + i] - 128);
  return out;
}

}  // namespace rlx::int8
