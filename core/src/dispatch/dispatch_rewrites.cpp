// Registered rewrites: alternative forms of a node that dispatch tries when neither a native nor
// the op's own decomposition is legal. A rewrite never changes results beyond the documented
// tolerance of the node's dtype.
#include <fmt/format.h>

#include <set>

#include "dispatch/rewrite_complex.h"
#include "dispatch/rewrite_int64.h"
#include "rlx/core/builder.h"
#include "rlx/core/dispatch.h"
#include "rlx/core/host_collectives.h"
#include "rlx/core/op_registry.h"

namespace rlx {

namespace {

bool narrow_float(DType d) { return d == DType::kF16 || d == DType::kBF16; }

// f16/bf16 on a target without 16-bit float arithmetic: convert operands to f32, compute, round
// the result once back to the node's dtype. Exact for data movement; for arithmetic the result
// is the f32 result rounded, which is within half an ulp of the 16-bit dtype per op.
Rewrite compute_in_f32() {
  Rewrite r;
  r.name = "compute-in-f32";
  r.op = "*";
  r.summary = "f16/bf16 operands computed in f32 and rounded back once";
  r.applies = [](const Graph& g, const Node& n) {
    static const std::set<std::string> kSkip = {"convert", "constant", "iota", "dim_size", "while", "Cast"};
    if (kSkip.count(n.op)) return Verdict::no("not applicable to " + n.op);
    bool narrow = false;
    for (ValueId v : n.inputs) narrow |= narrow_float(g.type(v).dtype);
    for (ValueId v : n.outputs) narrow |= narrow_float(g.type(v).dtype);
    return narrow ? Verdict::yes() : Verdict::no("no f16/bf16 operand");
  };
  r.build = [](GraphBuilder& b, const Node& n, const std::vector<ValueId>& in) {
    std::vector<ValueId> wide;
    for (ValueId v : in) wide.push_back(narrow_float(b.type(v).dtype) ? b.convert(v, DType::kF32) : v);
    std::vector<ValueId> outs = b.op_n(n.op, wide, n.attrs);
    // The node's own result dtypes say which results to round back.
    Graph probe;
    GraphBuilder pb(probe);
    std::vector<ValueId> pin;
    for (ValueId v : in) pin.push_back(pb.input({}, b.type(v)));
    std::vector<ValueId> orig = pb.op_n(n.op, pin, n.attrs);
    for (size_t k = 0; k < outs.size(); ++k) outs[k] = b.convert(outs[k], probe.type(orig[k]).dtype);
    return outs;
  };
  return r;
}

// Conv -> pad, im2col as a gather with a constant index table, one dot_general.
Rewrite conv_im2col() {
  Rewrite r;
  r.name = "conv-im2col";
  r.op = "Conv";
  r.summary = "2-D convolution as pad + gather (im2col) + dot_general";
  r.applies = [](const Graph&, const Node& n) {
    if (n.has_attr("dilations") && n.attr_ints("dilations") != IntList{1, 1})
      return Verdict::no("dilations other than 1 are not supported");
    if (n.attr_int("group", 1) != 1) return Verdict::no("grouped convolution is not supported");
    return Verdict::yes();
  };
  r.build = [](GraphBuilder& b, const Node& n, const std::vector<ValueId>& in) {
    TensorType tx = b.type(in[0]), tw = b.type(in[1]);
    IntList st = n.has_attr("strides") ? n.attr_ints("strides") : IntList{1, 1};
    IntList pads = n.has_attr("pads") ? n.attr_ints("pads") : IntList{0, 0, 0, 0};
    int64_t c = tx.shape[1].value, h = tx.shape[2].value, w = tx.shape[3].value;
    int64_t o = tw.shape[0].value, kh = tw.shape[2].value, kw = tw.shape[3].value;
    int64_t hp = h + pads[0] + pads[2], wp = w + pads[1] + pads[3];
    int64_t oh = (hp - kh) / st[0] + 1, ow = (wp - kw) / st[1] + 1;
    Dim nb = tx.shape[0];
    ValueId x = in[0];
    if (pads != IntList{0, 0, 0, 0})
      x = b.op("pad", {x, b.scalar(tx.dtype, 0.0)},
               {{"low", IntList{0, 0, pads[0], pads[1]}}, {"high", IntList{0, 0, pads[2], pads[3]}}});
    x = b.reshape(x, Shape{nb, c, hp * wp});
    Tensor idx(DType::kI64, {oh * ow, kh * kw});
    int64_t* p = idx.as<int64_t>();
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xx = 0; xx < ow; ++xx)
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j)
            p[(y * ow + xx) * kh * kw + i * kw + j] = (y * st[0] + i) * wp + (xx * st[1] + j);
    ValueId cols = b.op("gather", {x, b.constant(idx)}, {{"axis", int64_t{2}}});  // [N,C,P,K]
    cols = b.reshape(b.transpose(cols, {0, 2, 1, 3}), Shape{nb, oh * ow, c * kh * kw});
    ValueId wf = b.reshape(in[1], Shape{o, c * kh * kw});
    ValueId y = b.dot_general(cols, wf, {}, {}, {2}, {1});  // [N,P,O]
    if (in.size() == 3) y = b.add(y, b.broadcast_in_dim(in[2], b.type(y).shape, {2}));
    y = b.transpose(y, {0, 2, 1});
    return std::vector<ValueId>{b.reshape(y, Shape{nb, o, oh, ow})};
  };
  return r;
}

// A collective on a target without a collective engine: the same node marked for staging
// through the host (rlx/core/host_collectives.h). The target claims the marked node only when the
// user allowed staging, and otherwise refuses it saying how to allow it, so a collective is never
// staged silently. Tried first: staging moves the node's own dtype, where computing in f32 would
// add two conversions and the f32 traffic.
Rewrite host_staged_collective() {
  Rewrite r;
  r.name = "host-staged-collective";
  r.op = "*";
  r.summary = "a collective run on the host: device -> host copy, the cpu target's Gloo, copy back";
  r.applies = [](const Graph&, const Node& n) {
    if (!OpRegistry::instance().get(n.op).communicates) return Verdict::no("not a collective");
    if (n.has_attr(kStagingAttr)) return Verdict::no("already marked for host staging");
    return Verdict::yes();
  };
  r.build = [](GraphBuilder& b, const Node& n, const std::vector<ValueId>& in) {
    Attrs attrs = n.attrs;
    attrs[kStagingAttr] = std::string(kStagingHost);
    return b.op_n(n.op, in, attrs);
  };
  return r;
}

}  // namespace

const std::vector<Rewrite>& rewrites() {
  static const std::vector<Rewrite> kRewrites = {host_staged_collective(), conv_im2col(),
                                                 compute_in_f32(), split_complex(), split_int64()};
  return kRewrites;
}

}  // namespace rlx
