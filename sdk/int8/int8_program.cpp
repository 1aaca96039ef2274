// MIR (after an int8 target's dispatch) -> Int8Program, and the host reference that runs it.
#include "int8_program.h"

#include <fmt/format.h>

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

// A QMatMul waiting for what consumes its output (which decides its output format).
struct Pending {
  DenseLayer layer;
  std::vector<float> acc_scale;  // real value of one accumulator unit, per channel
};

void finish_int8(Pending& p, float next_scale, int32_t next_zero8, const std::string& target) {
  DenseLayer& l = p.layer;
  l.int8_out = true;
  l.zero_out = next_zero8;
  l.lo = l.relu ? std::max(next_zero8, -128) : -128;
  l.hi = 127;
  for (int32_t n = 0; n < l.n; ++n) {
    FixedPoint f = to_fixed_point(
        static_cast<double>(p.acc_scale[n]) / next_scale,
        fmt::format("{}: the requantization of channel {} of {}", target, n, l.name));
    l.m.push_back(f.m);
    l.r.push_back(static_cast<int8_t>(f.r));
  }
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
  const TensorType& in = g.type(g.inputs[0]);
  p.input_name = g.values[g.inputs[0]].name;
  p.output_name = g.values[g.outputs[0]].name;
  std::map<ValueId, int> uses;
  for (const Node& n : g.nodes)
    for (ValueId v : n.inputs) ++uses[v];
  for (ValueId v : g.outputs) ++uses[v];

  ValueId cur = g.inputs[0];
  std::optional<Pending> pending;
  auto after_softmax = [&](int32_t i) {
    if (p.softmax)
      throw_user_error(
          fmt::format("{}: {} follows the Softmax; the target lowers a Softmax "
                      "only as the end of the chain",
                      target, node_name(g, i)));
  };
  int32_t widest = 0;
  for (int32_t i = 0; i < static_cast<int32_t>(g.nodes.size()); ++i) {
    const Node& n = g.nodes[i];
    if (n.op == "constant") continue;
    if (n.op == "Softmax") {
      after_softmax(i);
      const int64_t rank = g.type(n.inputs[0]).rank();
      const int64_t axis = n.attr_int("axis", -1);
      if (!pending || n.inputs[0] != cur || (axis != -1 && axis != rank - 1))
        throw_user_error(
            fmt::format("{}: {} is not a Softmax over the last axis of the last "
                        "quantized dense layer, the one form the target lowers",
                        target, node_name(g, i)));
      p.softmax = true;
      cur = n.outputs[0];
      continue;
    }
    if (n.op == "Relu") {
      after_softmax(i);
      if (!pending || n.inputs[0] != cur || pending->layer.relu)
        throw_user_error(
            fmt::format("{}: {} does not follow a quantized dense layer; the "
                        "target fuses ReLU into the requantization of one",
                        target, node_name(g, i)));
      pending->layer.relu = true;
      cur = n.outputs[0];
      continue;
    }
    if (n.op != "QMatMul")
      throw_user_error(
          fmt::format("{}: {} is not part of an int8 dense chain (QMatMul with "
                      "calibrated activations, Relu); the target lowers only those "
                      "so far. {}",
                      target, node_name(g, i), how_to_quantize(target)));
    after_softmax(i);
    if (n.inputs.size() < 5)
      throw_user_error(
          fmt::format("{}: {} quantizes its activations per row at run time "
                      "(int8-dynamic), which needs float on the device. {}",
                      target, node_name(g, i), how_to_quantize(target)));
    if (n.inputs[0] != cur || uses[cur] != 1)
      throw_user_error(
          fmt::format("{}: {} is not fed by the chain's previous result alone; "
                      "the target lowers a chain of dense layers (one input, one "
                      "output, no branches)",
                      target, node_name(g, i)));
    Tensor w = need_constant(g, i, 1, "the weight", target);
    Tensor ws = need_constant(g, i, 2, "the weight scale", target);
    const float xs =
        static_cast<float>(need_constant(g, i, 3, "the activation scale", target).scalar_at(0));
    const int32_t xz8 =
        static_cast<int32_t>(
            need_constant(g, i, 4, "the activation zero point", target).scalar_at(0)) -
        128;
    const int32_t nn = static_cast<int32_t>(w.shape()[0]), k = static_cast<int32_t>(w.shape()[1]);
    std::optional<Tensor> bias;
    if (n.inputs.size() == 6) bias = need_constant(g, i, 5, "the bias", target);

    if (pending) {
      finish_int8(*pending, xs, xz8, target);
      widest = std::max(widest, pending->layer.n);
      p.layers.push_back(std::move(pending->layer));
    } else {
      int64_t numel = 1;
      for (const Dim& d : in.shape) numel = d.is_static() ? numel * d.value : -1;
      if (in.rank() < 1 || numel != k)
        throw_user_error(
            fmt::format("{}: the input {} is {}; the generated entry point "
                        "takes one sample of {} values (bind the batch to 1)",
                        target, p.input_name, in.str(), k));
      p.input_size = k;
      p.input_scale = xs;
      p.input_zero = xz8;
    }
    Pending next;
    DenseLayer& l = next.layer;
    l.name = n.loc.empty() ? g.values[n.outputs[0]].name : n.loc;
    l.n = nn;
    l.k = k;
    const int8_t* wq = w.as<int8_t>();
    l.w.assign(wq, wq + static_cast<size_t>(nn) * k);
    for (int32_t o = 0; o < nn; ++o) {
      const float s = xs * ws.as<float>()[o];
      next.acc_scale.push_back(s);
      int64_t row_sum = 0;
      for (int32_t j = 0; j < k; ++j) row_sum += wq[static_cast<size_t>(o) * k + j];
      const double b = bias ? std::nearbyint(static_cast<double>(bias->as<float>()[o]) / s) : 0.0;
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
    throw_user_error(fmt::format("{}: the graph has no quantized dense layer. {}", target,
                                 how_to_quantize(target)));
  if (g.outputs[0] != cur)
    throw_user_error(
        fmt::format("{}: the output {} is not the end of the dense chain", target, p.output_name));
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
  const int32_t aligned = (widest + 3) / 4 * 4;
  p.arena_bytes = p.layers.size() > 1 ? (p.layers.size() > 2 ? 2 : 1) * aligned : 0;
  if (p.softmax) {  // the accumulators and the exponentials, 4 bytes each
    p.softmax_offset = p.arena_bytes;
    p.arena_bytes += 8 * p.output_size;
  }
  return p;
}

std::vector<int32_t> run_reference(const Int8Program& p, const int8_t* input) {
  std::vector<int8_t> a(input, input + p.input_size), b;
  std::vector<int32_t> out(p.output_size);
  for (const DenseLayer& l : p.layers) {
    if (!l.int8_out) {
      rlx_cm_dense_s32(a.data(), l.w.data(), l.bias.data(), l.n, l.k, l.relu ? 1 : 0, out.data());
      if (p.softmax) {
        std::vector<uint32_t> e(p.output_size);
        std::vector<int8_t> probabilities(p.output_size);
        rlx_cm_softmax_s8(out.data(), p.softmax_m.data(), p.softmax_r.data(), p.output_size,
                          e.data(), probabilities.data());
        out.assign(probabilities.begin(), probabilities.end());
      }
      break;
    }
    b.assign(l.n, 0);
    rlx_cm_dense_s8(a.data(), l.w.data(), l.bias.data(), l.m.data(), l.r.data(), l.n, l.k,
                    l.zero_out, l.lo, l.hi, b.data());
    a.swap(b);
  }
  return out;
}

std::vector<int8_t> quantize_input(const Int8Program& p, const float* x) {
  quant::U8Params u8{p.input_scale, static_cast<uint8_t>(p.input_zero + 128)};
  std::vector<uint8_t> q(p.input_size);
  quant::quantize_u8(x, p.input_size, u8, q.data());
  std::vector<int8_t> out(p.input_size);
  for (int32_t i = 0; i < p.input_size; ++i) out[i] = static_cast<int8_t>(q[i] - 128);
  return out;
}

}  // namespace rlx::int8
