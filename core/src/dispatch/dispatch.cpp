// The dispatch contract. Each node is lowered into the output graph by the first legal path;
// a failed attempt is rolled back so the output only ever holds legal nodes.
#include "rlx/core/dispatch.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "rlx/core/builder.h"
#include "rlx/core/error.h"
#include "rlx/core/op_registry.h"
#include "rlx/core/passes.h"

namespace rlx {

std::string_view path_name(LoweringPath p) {
  switch (p) {
    case LoweringPath::kNative: return "native";
    case LoweringPath::kSharedIr: return "shared-ir";
    case LoweringPath::kRewritten: return "rewritten";
  }
  return "";
}

namespace {

constexpr int kMaxDepth = 12;

std::string dtypes_of(const NodeSignature& s) {
  std::string out;
  for (size_t i = 0; i < s.inputs.size(); ++i) out += (i ? "," : "") + std::string(dtype_name(s.inputs[i].dtype));
  out += " -> ";
  for (size_t i = 0; i < s.outputs.size(); ++i) out += (i ? "," : "") + std::string(dtype_name(s.outputs[i].dtype));
  return out;
}

NodeSignature signature(const Graph& g, const Node& n) {
  NodeSignature s{n.op, {}, {}, n.attrs};
  for (ValueId v : n.inputs) s.inputs.push_back(g.type(v));
  for (ValueId v : n.outputs) s.outputs.push_back(g.type(v));
  return s;
}

struct Outcome {
  bool ok = false;
  LoweringPath path = LoweringPath::kSharedIr;
  std::string rewrite;               // rewrites used, here or by any piece ("a,b")
  std::string kernel;                // native: the claim's note
  std::vector<std::string> notes;    // shared IR: what the target said of its primitives, once each
  std::vector<std::string> refused;  // one line per refused path
  std::vector<ValueId> outputs;
};

class Lowerer {
 public:
  Lowerer(Graph& dst, const Target& t) : dst_(dst), target_(t) {}

  // Lowers node `n` of `src` (inputs already mapped into dst) into dst.
  Outcome lower(const Graph& src, const Node& n, const std::vector<ValueId>& ins, int depth) {
    Outcome out;
    if (depth > kMaxDepth) {
      out.refused.push_back("lowering recursed too deeply (a rewrite produces its own input)");
      return out;
    }
    const OpDef& def = OpRegistry::instance().get(n.op);
    NodeSignature sig = signature(src, n);
    if (def.level == OpLevel::kMir) {
      Verdict v = target_.accepts_primitive(sig);
      if (v.ok) {
        // An accepted primitive may carry a note of how the target runs it (bf16 products on
        // a CPU's AMX tiles): the report shows it on the node the primitive came from.
        Outcome o = copy(src, n, ins, LoweringPath::kSharedIr);
        if (!v.reason.empty()) o.notes.push_back(fmt::format("{}: {}", n.op, v.reason));
        return o;
      }
      out.refused.push_back(fmt::format("primitive: {}", v.reason));
    } else {
      Verdict v = target_.claim_native(sig);
      if (v.ok) {
        Outcome o = copy(src, n, ins, LoweringPath::kNative);
        o.kernel = v.reason;
        return o;
      }
      out.refused.push_back(fmt::format("native: {}", v.reason));
      if (!def.decompose) {
        out.refused.push_back(fmt::format("shared IR: {} has no MIR decomposition", n.op));
      } else {
        std::string why;
        std::set<std::string> used;
        std::vector<std::string> notes;
        auto r = expand(src, n, ins, def.decompose, depth, &why, &used, &notes);
        // A decomposition that is legal only because a piece of it was rewritten is a
        // rewritten lowering, and says which rewrite.
        if (r) {
          out.notes = std::move(notes);
          return with_rewrites(success(std::move(out), LoweringPath::kSharedIr, *r), used);
        }
        out.refused.push_back("shared IR: " + why);
      }
    }
    bool any = false;
    for (const Rewrite& rw : rewrites()) {
      if (rw.op != n.op && rw.op != "*") continue;
      Verdict a = rw.applies(src, n);
      if (!a.ok) {
        if (rw.op != "*") out.refused.push_back(fmt::format("rewritten: {}: {}", rw.name, a.reason));
        continue;
      }
      any = true;
      std::string why;
      std::set<std::string> used = {rw.name};
      std::vector<std::string> notes;
      auto r = expand(src, n, ins, rw.build, depth, &why, &used, &notes);
      if (r) {
        out.notes = std::move(notes);
        return with_rewrites(success(std::move(out), LoweringPath::kRewritten, *r), used);
      }
      out.refused.push_back(fmt::format("rewritten: {}: {}", rw.name, why));
    }
    if (!any && std::none_of(out.refused.begin(), out.refused.end(),
                             [](auto& s) { return s.rfind("rewritten", 0) == 0; }))
      out.refused.push_back(fmt::format("rewritten: no registered rewrite applies to {}", n.op));
    return out;
  }

 private:
  Graph& dst_;
  const Target& target_;

  static Outcome with_rewrites(Outcome o, const std::set<std::string>& used) {
    if (used.empty()) return o;
    o.path = LoweringPath::kRewritten;
    for (const auto& r : used) o.rewrite += (o.rewrite.empty() ? "" : ",") + r;
    return o;
  }

  Outcome success(Outcome o, LoweringPath p, const std::vector<ValueId>& outs) {
    o.ok = true;
    o.path = p;
    o.outputs = outs;
    return o;
  }

  Outcome copy(const Graph& src, const Node& n, const std::vector<ValueId>& ins, LoweringPath p) {
    Node c = n;
    c.inputs = ins;
    // Region bodies (while) go through the same contract, as graphs of their own.
    for (auto& r : c.regions) {
      DispatchResult sub = dispatch(*r, target_);
      run_default_passes(sub.graph);
      r = std::make_shared<Graph>(std::move(sub.graph));
    }
    c.outputs.clear();
    auto idx = static_cast<int32_t>(dst_.nodes.size());
    for (ValueId v : n.outputs) c.outputs.push_back(dst_.add_value({}, src.type(v), idx));
    dst_.nodes.push_back(std::move(c));
    Outcome o;
    return success(std::move(o), p, dst_.nodes.back().outputs);
  }

  // Builds the node's replacement in a scratch graph, then lowers each scratch node into dst.
  // Rolls dst back when any of them has no legal path.
  std::optional<std::vector<ValueId>> expand(const Graph& src, const Node& n,
                                             const std::vector<ValueId>& ins, const DecomposeFn& fn,
                                             int depth, std::string* why,
                                             std::set<std::string>* used,
                                             std::vector<std::string>* notes) {
    Graph tmp;
    GraphBuilder b(tmp);
    b.set_loc(n.loc);
    std::vector<ValueId> args;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      args.push_back(b.input("in" + std::to_string(i), src.type(n.inputs[i])));
    std::vector<ValueId> outs;
    try {
      outs = fn(b, n, args);
    } catch (const Error& e) {
      *why = e.what();
      return std::nullopt;
    }
    size_t node_mark = dst_.nodes.size();
    std::vector<ValueId> map(tmp.values.size(), kNoValue);
    for (size_t i = 0; i < args.size(); ++i) map[args[i]] = ins[i];
    for (const Node& sub : tmp.nodes) {
      std::vector<ValueId> sub_ins;
      for (ValueId v : sub.inputs) sub_ins.push_back(map[v]);
      Outcome o = lower(tmp, sub, sub_ins, depth + 1);
      if (!o.ok) {
        dst_.nodes.resize(node_mark);
        NodeSignature s = signature(tmp, sub);
        *why = fmt::format("needs {} ({}), and {}", sub.op, dtypes_of(s), join(o.refused));
        return std::nullopt;
      }
      for (size_t k = 0; k < sub.outputs.size(); ++k) map[sub.outputs[k]] = o.outputs[k];
      for (auto& note : o.notes)
        if (std::find(notes->begin(), notes->end(), note) == notes->end()) notes->push_back(note);
      if (!o.rewrite.empty()) {
        size_t at = 0;
        while (at <= o.rewrite.size()) {
          size_t comma = o.rewrite.find(',', at);
          used->insert(o.rewrite.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
          if (comma == std::string::npos) break;
          at = comma + 1;
        }
      }
    }
    std::vector<ValueId> result;
    for (ValueId v : outs) result.push_back(map[v]);
    return result;
  }

  static std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "; " : "") + v[i];
    return s;
  }
};

}  // namespace

DispatchResult dispatch(const Graph& hir, const Target& target) {
  DispatchResult res;
  Graph& g = res.graph;
  g.name = hir.name;
  g.weights = hir.weights;
  res.report.target = target.name();
  for (ValueId v : hir.inputs) res.report.inputs.push_back({hir.values[v].name, hir.type(v)});
  for (ValueId v : hir.outputs) res.report.outputs.push_back({hir.values[v].name, hir.type(v)});
  for (const Value& v : hir.values) g.reserve_name(v.name);
  std::vector<ValueId> map(hir.values.size(), kNoValue);
  for (ValueId v : hir.inputs) map[v] = g.add_input(hir.values[v].name, hir.type(v));
  for (ValueId v : hir.params) map[v] = g.add_param(hir.values[v].name, hir.type(v));
  Lowerer lowerer(g, target);
  for (int32_t i = 0; i < static_cast<int32_t>(hir.nodes.size()); ++i) {
    const Node& n = hir.nodes[i];
    std::vector<ValueId> ins;
    for (ValueId v : n.inputs) ins.push_back(map[v]);
    size_t before = g.nodes.size();
    Outcome o = lowerer.lower(hir, n, ins, 0);
    NodeSignature sig = signature(hir, n);
    if (!o.ok) {
      std::string msg = fmt::format(
          "cannot compile node {} for target '{}': no lowering path is legal\n  op {}, dtypes {}",
          hir.describe_node(i), target.name(), n.op, dtypes_of(sig));
      for (auto& r : o.refused) msg += "\n  " + r;
      msg += "\n  what to do: choose a target that supports this op and dtype (rlx --list-targets -v), "
             "or convert the model to a supported dtype";
      throw CompileError(msg);
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      map[n.outputs[k]] = o.outputs[k];
      // Keep the source's names on values this node created (not on inputs it passed through).
      Value& val = g.values[o.outputs[k]];
      if (val.producer >= static_cast<int32_t>(before)) val.name = hir.values[n.outputs[k]].name;
    }
    DispatchEntry e;
    e.value = n.outputs.empty() ? "" : hir.values[n.outputs[0]].name;
    e.op = n.op;
    e.loc = n.loc;
    e.dtypes = dtypes_of(sig);
    e.path = o.path;
    // Native: the claim's note (what the target runs, e.g. a quantized product's arithmetic).
    e.detail = o.path == LoweringPath::kNative ? o.kernel : o.rewrite;
    e.refused = o.refused;
    e.primitives = o.path == LoweringPath::kNative ? 0 : static_cast<int>(g.nodes.size() - before);
    e.notes = o.notes;
    for (ValueId v : n.outputs) e.outputs.push_back({hir.values[v].name, hir.type(v)});
    res.report.entries.push_back(std::move(e));
  }
  for (ValueId v : hir.outputs) g.outputs.push_back(map[v]);
  return res;
}

OpLegality op_legality(const std::string& op, DType dtype, const Target& target) {
  const OpDef& def = OpRegistry::instance().get(op);
  std::optional<OpSample> sample;
  try {
    sample = def.sample ? def.sample(dtype) : std::nullopt;
  } catch (const Error& e) {
    return {OpLegality::kNotApplicable, e.what()};
  }
  if (!sample) return {OpLegality::kNotApplicable, "the op is not defined at this dtype"};
  Graph g;
  std::vector<ValueId> ins;
  for (size_t i = 0; i < sample->inputs.size(); ++i)
    ins.push_back(g.add_input("in" + std::to_string(i), sample->inputs[i]));
  try {
    int32_t idx = g.add_node(op, ins, {}, sample->attrs);
    for (auto& t : infer_node(g, idx)) g.nodes[idx].outputs.push_back(g.add_value({}, t, idx));
  } catch (const Error& e) {
    return {OpLegality::kNotApplicable, e.what()};
  }
  Graph dst;
  for (auto& t : sample->inputs) dst.add_input({}, t);
  Lowerer lowerer(dst, target);
  try {
    Outcome o = lowerer.lower(g, g.nodes[0], dst.inputs, 0);
    if (!o.ok) {
      std::string why;
      for (auto& r : o.refused) why += (why.empty() ? "" : "; ") + r;
      return {OpLegality::kIllegal, why};
    }
    switch (o.path) {
      case LoweringPath::kNative: return {OpLegality::kNative, {}};
      case LoweringPath::kSharedIr: return {OpLegality::kSharedIr, {}};
      case LoweringPath::kRewritten: return {OpLegality::kRewritten, o.rewrite};
    }
  } catch (const Error& e) {
    return {OpLegality::kIllegal, e.what()};
  }
  return {OpLegality::kIllegal, "unreachable"};
}

}  // namespace rlx
