// apply_precision: narrows a graph's f32 computation as the user's --precision asks. The nodes
// are walked once in order; a narrowed node reads the narrow twin of each f32 operand and a
// node left in f32 reads the wide twin of an operand that was narrowed, so a convert exists
// exactly where the two parts meet, once per value.
#include "rlx/core/precision.h"

#include <fmt/format.h>

#include <cmath>
#include <set>
#include <unordered_map>

#include "ops/op_family.h"
#include "rlx/core/error.h"
#include "rlx/core/half.h"
#include "rlx/core/op_registry.h"

namespace rlx {

namespace {

struct ModeSpelling {
  PrecisionMode mode;
  const char* name;
};
constexpr ModeSpelling kModes[] = {{PrecisionMode::kAsIs, "f32"},
                                   {PrecisionMode::kF16, "f16"},
                                   {PrecisionMode::kBF16, "bf16"},
                                   {PrecisionMode::kAmpF16, "amp-f16"},
                                   {PrecisionMode::kAmpBF16, "amp-bf16"}};

// The largest finite f16; a larger f32 weight would become infinity.
constexpr double kF16Max = 65504.0;

bool is_amp(PrecisionMode m) { return m == PrecisionMode::kAmpF16 || m == PrecisionMode::kAmpBF16; }

DType narrow_type(PrecisionMode m) {
  return m == PrecisionMode::kF16 || m == PrecisionMode::kAmpF16 ? DType::kF16 : DType::kBF16;
}

// The ops an AMP mode computes narrow: where the arithmetic is products, which tensor cores and
// wide vector units run at twice the rate or more, and whose f32 accumulation keeps the error at
// the narrow type's rounding of the operands.
const std::set<std::string>& amp_ops() {
  static const std::set<std::string> ops = {"MatMul", "Linear", "Conv", "Attention",
                                            "dot_general"};
  return ops;
}

// Ops that only move or select values: exact in any type, so under AMP they follow their
// operands into the narrow type instead of widening them (a head split between a product and
// attention stays narrow, no convert on either side).
const std::set<std::string>& movement_ops() {
  static const std::set<std::string> ops = {
      "reshape", "transpose", "broadcast_in_dim", "slice", "concat", "Reshape", "Transpose",
      "Concat"};
  return ops;
}

// The ops a whole-graph mode may narrow: the primitives and the HIR elementwise, shape and
// network ops. Solvers, sparse, splatting, quantized products and collectives keep their dtypes:
// their accuracy contracts are stated in f32 and f64, and their targets claim them there.
const std::set<std::string>& narrowable_ops() {
  static const std::set<std::string> ops = [] {
    std::set<std::string> names;
    for (auto family : {mir_ops, hir_ops, hir_nn_ops}) {
      OpFamily f;
      family(f);
      for (const OpDef& d : f.defs()) names.insert(d.name);
    }
    return names;
  }();
  return ops;
}

Tensor narrowed_weight(const Tensor& w, DType to, const std::string& name) {
  Tensor out(to, w.shape());
  const float* src = w.as<float>();
  uint16_t* dst = out.as<uint16_t>();
  const int64_t n = w.numel();
  for (int64_t i = 0; i < n; ++i) {
    if (to == DType::kF16 && std::isfinite(src[i]) && std::fabs(src[i]) > kF16Max)
      throw_user_error(
          fmt::format("--precision: weight '{}' holds {} at element {}, beyond f16's largest "
                      "finite value ({}); f16 would make it infinity: use bf16 or amp-bf16 "
                      "(f32's range), or f32",
                      name, src[i], i, kF16Max));
    dst[i] = to == DType::kF16 ? f32_to_f16(src[i]) : f32_to_bf16(src[i]);
  }
  return out;
}

class Narrowing {
 public:
  Narrowing(Graph& g, PrecisionMode mode) : g_(g), mode_(mode), narrow_(narrow_type(mode)) {
    for (const Value& v : g.values) was_f32_.push_back(v.type.dtype == DType::kF32);
    is_param_.insert(g.params.begin(), g.params.end());
  }

  PrecisionReport run() {
    report_.mode = precision_name(mode_);
    std::vector<Node> old = std::move(g_.nodes);
    g_.nodes.clear();
    for (Node& n : old) {
      const bool narrow = should_narrow(n);
      for (ValueId& v : n.inputs) v = narrow ? narrow_twin(v, n) : wide_twin(v, &n);
      flush_pending();
      if (narrow) {
        retype(n);
        report_.narrowed.push_back(
            fmt::format("{} computes in {}", user_text(n), dtype_name(narrow_)));
      }
      push(std::move(n));
    }
    for (ValueId& v : g_.outputs) {
      const ValueId wide = wide_twin(v, nullptr);
      // Callers find outputs by name: the f32 value keeps it, the narrow one is renamed.
      if (wide != v && g_.values[wide].name != g_.values[v].name) {
        std::string narrow_name =
            unique_name(g_.values[v].name + "_" + std::string(dtype_name(narrow_)));
        g_.reserve_name(narrow_name);
        g_.values[wide].name = g_.values[v].name;
        g_.values[v].name = std::move(narrow_name);
      }
      v = wide;
    }
    flush_pending();
    return std::move(report_);
  }

 private:
  bool was_f32(ValueId v) const {
    return v < static_cast<ValueId>(was_f32_.size()) && was_f32_[v];
  }

  // A convert's dtype is the model's own choice (an index turned into a float, a float into an
  // integer), so it is never narrowed; nor is a loop, whose body keeps its types.
  bool should_narrow(const Node& n) const {
    if (!n.regions.empty() || n.op == "convert" || n.op == "Cast") return false;
    bool reads_f32 = false;
    for (ValueId v : n.inputs) reads_f32 = reads_f32 || was_f32(v);
    if (!reads_f32) return false;
    if (!is_amp(mode_)) return narrowable_ops().count(n.op) != 0;
    if (amp_ops().count(n.op)) return true;
    if (!movement_ops().count(n.op)) return false;
    for (ValueId v : n.inputs)
      if (was_f32(v) && g_.type(v).dtype != narrow_) return false;
    return true;
  }

  // The narrow value standing for f32 value v: the source of a widening convert from the narrow
  // type (exact, so the pair cancels), a narrowed copy of a weight, or a new convert.
  ValueId narrow_twin(ValueId v, const Node& user) {
    if (g_.type(v).dtype != DType::kF32) return v;
    if (auto it = narrow_of_.find(v); it != narrow_of_.end()) return it->second;
    ValueId twin = kNoValue;
    if (const int32_t p = g_.values[v].producer; p >= 0) {
      const Node& producer = g_.nodes.at(p);
      if ((producer.op == "convert" || producer.op == "Cast") &&
          g_.type(producer.inputs[0]).dtype == narrow_)
        twin = producer.inputs[0];
    }
    if (twin == kNoValue && is_param_.count(v) && g_.weights.count(g_.values[v].name)) {
      const std::string name = g_.values[v].name;
      twin = g_.add_param(unique_name(name + "." + std::string(dtype_name(narrow_))),
                          TensorType{narrow_, g_.type(v).shape},
                          narrowed_weight(g_.weights.at(name), narrow_, name));
      report_.weights.push_back(fmt::format("{}: f32 -> {}", name, dtype_name(narrow_)));
    }
    if (twin == kNoValue) twin = add_convert(v, narrow_, user_text(user));
    narrow_of_[v] = twin;
    return twin;
  }

  // The f32 value standing for v, which a narrowed node now produces in the narrow type; `user`
  // is the node reading it (nullptr: a graph output), described only when a convert is added.
  ValueId wide_twin(ValueId v, const Node* user) {
    if (!was_f32(v) || g_.type(v).dtype == DType::kF32) return v;
    if (auto it = wide_of_.find(v); it != wide_of_.end()) return it->second;
    return wide_of_[v] = add_convert(v, DType::kF32, user ? user_text(*user) : "a graph output");
  }

  // Converts wait in pending_ until the node that needs them is reached, which keeps SSA order.
  ValueId add_convert(ValueId v, DType to, const std::string& user) {
    Node c;
    c.op = "convert";
    c.inputs = {v};
    c.attrs["dtype"] = to;
    c.loc = "precision " + report_.mode;
    const std::string from = g_.values[v].name;
    c.outputs = std::vector<ValueId>{g_.add_value(
        unique_name(from + "_" + std::string(dtype_name(to))), TensorType{to, g_.type(v).shape})};
    report_.casts.push_back(fmt::format("%{} {} -> {} for {}", from,
                                        dtype_name(g_.type(v).dtype), dtype_name(to), user));
    pending_.push_back(std::move(c));
    return pending_.back().outputs[0];
  }

  // `base` itself when the graph has no such value yet, which keeps names readable.
  std::string unique_name(const std::string& base) {
    return g_.find_value(base) ? g_.fresh_name(base + "_") : base;
  }

  void flush_pending() {
    for (Node& c : pending_) push(std::move(c));
    pending_.clear();
  }

  void push(Node n) {
    for (ValueId v : n.outputs) g_.values[v].producer = static_cast<int32_t>(g_.nodes.size());
    g_.nodes.push_back(std::move(n));
  }

  void retype(const Node& n) {
    std::vector<TensorType> in;
    for (ValueId v : n.inputs) in.push_back(g_.type(v));
    const std::vector<TensorType> out = OpRegistry::instance().get(n.op).infer(in, n);
    for (size_t k = 0; k < n.outputs.size() && k < out.size(); ++k)
      g_.values[n.outputs[k]].type = out[k];
  }

  std::string user_text(const Node& n) const {
    std::string text = n.outputs.empty() ? n.op : "%" + g_.values[n.outputs[0]].name;
    text += " (" + n.op;
    if (!n.loc.empty()) text += " '" + n.loc + "'";
    return text + ")";
  }

  Graph& g_;
  PrecisionMode mode_;
  DType narrow_;
  std::vector<bool> was_f32_;
  std::set<ValueId> is_param_;
  std::unordered_map<ValueId, ValueId> narrow_of_, wide_of_;
  std::vector<Node> pending_;
  PrecisionReport report_;
};

}  // namespace

PrecisionMode parse_precision(const std::string& text) {
  for (const ModeSpelling& m : kModes)
    if (text == m.name) return m.mode;
  throw_user_error(
      fmt::format("'{}' is not a precision rlx offers: give {}", text, kPrecisionChoices));
}

std::string precision_name(PrecisionMode mode) {
  for (const ModeSpelling& m : kModes)
    if (mode == m.mode) return m.name;
  return "f32";
}

PrecisionReport apply_precision(Graph& g, PrecisionMode mode) {
  if (mode == PrecisionMode::kAsIs) return PrecisionReport{precision_name(mode), {}, {}, {}};
  return Narrowing(g, mode).run();
}

}  // namespace rlx
