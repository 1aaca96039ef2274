// Control flow with static structure: If (a known condition picks a branch; otherwise both run
// and a select picks the results), Loop with a trip count and condition known at import time and
// Scan over a static sequence length, both unrolled into the graph.
#include "op_util.h"

namespace rlx::onnx {

namespace {

constexpr int64_t kMaxUnroll = 4096;

const ::onnx::GraphProto& graph_attr(const NodeCtx& n, const char* name) {
  const auto* a = n.attr(name);
  if (!a || !a->has_g()) n.failf("attribute '{}' must be a graph", name);
  return a->g();
}

std::optional<bool> known_bool(const Val& v) {
  if (v.konst && v.konst->numel() == 1) return v.konst->scalar_at(0) != 0;
  if (v.sym && v.sym->numel() == 1 && v.sym->v[0].is_static()) return v.sym->v[0].coef != 0;
  return std::nullopt;
}

ValPtr scalar_val(DType d, double v) {
  auto p = std::make_shared<Val>();
  Tensor t(d, {});
  if (d == DType::kBool)
    t.as<uint8_t>()[0] = v != 0;
  else
    t.as<int64_t>()[0] = static_cast<int64_t>(v);
  p->konst = t;
  p->sym = sym_from_tensor(t);
  p->type = TensorType{d, {}};
  return p;
}

// Stacks per-iteration values along a new axis.
ValueId stack(NodeCtx& n, std::vector<ValueId> parts, int64_t axis) {
  GraphBuilder& b = n.b;
  for (ValueId& p : parts) {
    Shape s = b.type(p).shape;
    int64_t a = axis < 0 ? axis + static_cast<int64_t>(s.size()) + 1 : axis;
    s.insert(s.begin() + a, Dim(1));
    p = b.reshape(p, s);
  }
  int64_t a = axis < 0 ? axis + b.type(parts[0]).rank() : axis;
  return b.concat(parts, a);
}

void if_op(NodeCtx& n) {
  const auto& then_g = graph_attr(n, "then_branch");
  const auto& else_g = graph_attr(n, "else_branch");
  if (then_g.output_size() != n.num_outputs() || else_g.output_size() != n.num_outputs())
    n.failf("the branches return {} and {} values for {} outputs", then_g.output_size(),
            else_g.output_size(), n.num_outputs());
  if (auto c = known_bool(*n.in(0))) {
    auto outs = n.cv.convert_subgraph(*c ? then_g : else_g, {});
    for (int k = 0; k < n.num_outputs(); ++k) n.out_val(k, *outs.at(k));
    return;
  }
  // A run-time condition: both branches are computed and selected per output.
  auto t = n.cv.convert_subgraph(then_g, {});
  auto e = n.cv.convert_subgraph(else_g, {});
  ValueId cond = n.b.reshape(n.x(0), Shape{});
  for (int k = 0; k < n.num_outputs(); ++k) {
    if (!(t.at(k)->type == e.at(k)->type))
      n.failf(
          "output {} is {} in one branch and {} in the other; rlx needs one type when the "
          "condition is only known at run time",
          k, t[k]->type.str(), e[k]->type.str());
    ValueId tv = n.cv.materialize(*t[k]), ev = n.cv.materialize(*e[k]);
    n.out(k, n.b.select(n.b.broadcast_in_dim(cond, n.b.type(tv).shape, {}), tv, ev));
  }
}

void loop_op(NodeCtx& n) {
  const auto& body = graph_attr(n, "body");
  int64_t trips = n.has(0) ? n.need_int(0, "the trip count") : kMaxUnroll + 1;
  std::optional<bool> cond = true;
  if (n.has(1)) cond = n.need_scalar(1, "the loop condition") != 0;
  int carried = n.num_inputs() - 2;
  std::vector<ValPtr> state;
  for (int i = 0; i < carried; ++i) state.push_back(n.in(2 + i));
  int scans = body.output_size() - 1 - carried;
  if (carried < 0 || scans < 0) n.fail("the body's outputs do not fit the Loop");
  std::vector<std::vector<ValueId>> scan_parts(std::max(scans, 0));
  int64_t i = 0;
  for (; i < trips; ++i) {
    if (!cond)
      n.fail(
          "the loop condition depends on run-time values; rlx unrolls loops whose iterations are "
          "known when compiling");
    if (!*cond) break;
    if (i >= kMaxUnroll) n.failf("more than {} iterations to unroll", kMaxUnroll);
    std::vector<ValPtr> args{scalar_val(DType::kI64, static_cast<double>(i)),
                             scalar_val(DType::kBool, 1)};
    args.insert(args.end(), state.begin(), state.end());
    auto outs = n.cv.convert_subgraph(body, args);
    cond = known_bool(*outs[0]);
    for (int k = 0; k < carried; ++k) state[k] = outs[1 + k];
    for (int k = 0; k < scans; ++k)
      scan_parts[k].push_back(n.cv.materialize(*outs[1 + carried + k]));
  }
  for (int k = 0; k < carried; ++k) n.out_val(k, *state[k]);
  for (int k = 0; k < scans; ++k) {
    if (scan_parts[k].empty())
      n.fail("a loop with zero iterations has empty scan outputs of unknown shape");
    n.out(carried + k, stack(n, scan_parts[k], 0));
  }
}

void scan_op(NodeCtx& n) {
  if (n.opset < 9) n.fail("Scan before opset 9 (with sequence_lens) is not supported");
  const auto& body = graph_attr(n, "body");
  int m = static_cast<int>(n.attr_i("num_scan_inputs", 0));
  int states = n.num_inputs() - m;
  if (m <= 0 || states < 0) n.fail("num_scan_inputs does not fit the inputs");
  auto in_axes = n.attr_ints("scan_input_axes"), in_dirs = n.attr_ints("scan_input_directions");
  auto out_axes = n.attr_ints("scan_output_axes"), out_dirs = n.attr_ints("scan_output_directions");
  int64_t T = -1;
  std::vector<ValueId> xs;
  std::vector<int64_t> axes;
  for (int j = 0; j < m; ++j) {
    int64_t r = n.rank(states + j);
    int64_t a = n.norm_axis(j < static_cast<int>(in_axes.size()) ? in_axes[j] : 0, r);
    Dim d = n.shape(states + j)[a];
    if (!d.is_static()) n.fail("the scanned dim must be static");
    if (T >= 0 && d.value != T) n.fail("scan inputs have different lengths");
    T = d.value;
    xs.push_back(n.x(states + j));
    axes.push_back(a);
  }
  if (T > kMaxUnroll) n.failf("more than {} iterations to unroll", kMaxUnroll);
  std::vector<ValPtr> state;
  for (int i = 0; i < states; ++i) state.push_back(n.in(i));
  int outs_k = body.output_size() - states;
  if (outs_k < 0 || body.input_size() != states + m)
    n.fail("the body's inputs and outputs do not fit the Scan");
  std::vector<std::vector<ValueId>> parts(outs_k);
  for (int64_t t = 0; t < T; ++t) {
    std::vector<ValPtr> args = state;
    for (int j = 0; j < m; ++j) {
      bool rev = j < static_cast<int>(in_dirs.size()) && in_dirs[j];
      ValueId e = take(n.b, xs[j], axes[j], {rev ? T - 1 - t : t});
      Shape s = n.b.type(e).shape;
      s.erase(s.begin() + axes[j]);
      auto v = std::make_shared<Val>();
      v->id = n.b.reshape(e, s);
      v->type = n.b.type(v->id);
      args.push_back(v);
    }
    auto outs = n.cv.convert_subgraph(body, args);
    for (int i = 0; i < states; ++i) state[i] = outs[i];
    for (int k = 0; k < outs_k; ++k) parts[k].push_back(n.cv.materialize(*outs[states + k]));
  }
  for (int i = 0; i < states; ++i) n.out_val(i, *state[i]);
  for (int k = 0; k < outs_k; ++k) {
    if (parts[k].empty()) n.fail("a scan over zero elements has scan outputs of unknown shape");
    if (k < static_cast<int>(out_dirs.size()) && out_dirs[k])
      std::reverse(parts[k].begin(), parts[k].end());
    n.out(states + k, stack(n, parts[k], k < static_cast<int>(out_axes.size()) ? out_axes[k] : 0));
  }
}

}  // namespace

void register_control_ops(OpTable& t) {
  t["If"] = if_op;
  t["Loop"] = loop_op;
  t["Scan"] = scan_op;
}

}  // namespace rlx::onnx
