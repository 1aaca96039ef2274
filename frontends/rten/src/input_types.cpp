// Element types for graph inputs whose ValueNode has no dtype. rten only stored value dtypes from
// late 2024 on; older files (silero_vad.rten among them) leave them out and rten learns them from
// the tensors it is given. rlx compiles for one type, so it reads the model's use of the input:
// an input used as indices, as a shape, or combined with an int32 constant is int32 (rten has no
// int64: its converter narrows every integer to int32); anything else is float32. The decision
// and its evidence are reported in the model's metadata.
#include <fmt/format.h>

#include <set>

#include "translate.h"

namespace rlx::rten {

namespace {

using OT = fb::OperatorType;

// Operand positions that only ever hold integers.
bool integer_operand(OT op, size_t k) {
  switch (op) {
    case OT::Gather:
    case OT::GatherElements:
    case OT::GatherND:
    case OT::ScatterElements:
    case OT::ScatterND:
    case OT::Reshape:
    case OT::Expand:
    case OT::Tile:
    case OT::TopK:
    case OT::Squeeze:
    case OT::Unsqueeze:
    case OT::Split:
    case OT::Pad:
    case OT::CumSum:
    case OT::Trilu:
      return k == 1;
    case OT::Slice:
      return k >= 1;
    case OT::OneHot:
      return k <= 1;
    case OT::ConstantOfShape:
      return k == 0;
    case OT::Range:
      return true;
    case OT::Resize:
      return k == 3;
    default:
      return false;
  }
}

// Elementwise operators whose operands share one type.
bool same_type_operands(OT op) {
  switch (op) {
    case OT::Add:
    case OT::Sub:
    case OT::Mul:
    case OT::Div:
    case OT::Mod:
    case OT::Max:
    case OT::Min:
    case OT::Equal:
    case OT::Less:
    case OT::LessOrEqual:
    case OT::Greater:
    case OT::GreaterOrEqual:
    case OT::Where:
      return true;
    default:
      return false;
  }
}

bool int_constant(const fb::Node& n) {
  const fb::ConstantNode* c = n.data_as_ConstantNode();
  if (!c) return false;
  if (c->dtype()) return *c->dtype() != fb::ConstantDataType::Float32;
  return c->data_type() == fb::ConstantData::Int32Data ||
         c->data_type() == fb::ConstantData::Int8Data ||
         c->data_type() == fb::ConstantData::UInt8Data;
}

struct Walk {
  const std::set<std::string>& wanted;
  std::map<std::string, InferredType>& found;
  int depth = 0;

  void graph(const fb::Graph& g) {
    if (++depth > 16 || !g.nodes()) return;
    const auto& nodes = *g.nodes();
    auto candidate = [&](int32_t i) -> std::string {
      if (i < 0 || static_cast<uint32_t>(i) >= nodes.size()) return "";
      const fb::Node& n = *nodes.Get(static_cast<uint32_t>(i));
      if (n.data_type() != fb::NodeKind::ValueNode || !n.name()) return "";
      std::string name = n.name()->str();
      return wanted.count(name) && !found.count(name) ? name : "";
    };
    for (const fb::Node* n : nodes) {
      const fb::OperatorNode* op = n->data_as_OperatorNode();
      if (!op) continue;
      std::string op_name = n->name() ? n->name()->str() : "";
      const char* type = fb::EnumNameOperatorType(op->type());
      const auto* ins = op->inputs();
      for (size_t k = 0; ins && k < ins->size(); ++k) {
        std::string name = candidate(ins->Get(static_cast<uint32_t>(k)));
        if (name.empty()) continue;
        if (integer_operand(op->type(), k)) {
          found[name] = {::onnx::TensorProto::INT32,
                         fmt::format("integer operand {} of node '{}' ({})", k, op_name, type)};
          continue;
        }
        if (!same_type_operands(op->type())) continue;
        for (size_t j = 0; j < ins->size(); ++j) {
          int32_t other = ins->Get(static_cast<uint32_t>(j));
          if (j == k || other < 0 || static_cast<uint32_t>(other) >= nodes.size()) continue;
          if (op->type() == OT::Where && (j == 0 || k == 0)) continue;
          if (int_constant(*nodes.Get(static_cast<uint32_t>(other)))) {
            found[name] = {::onnx::TensorProto::INT32,
                           fmt::format("meets an int32 constant in node '{}' ({})", op_name, type)};
            break;
          }
        }
      }
      if (const auto* t = op->attrs_as_IfAttrs()) {
        if (t->then_branch()) graph(*t->then_branch());
        if (t->else_branch()) graph(*t->else_branch());
      }
      if (const auto* t = op->attrs_as_LoopAttrs(); t && t->body()) graph(*t->body());
    }
    --depth;
  }
};

}  // namespace

std::map<std::string, InferredType> infer_input_types(const fb::Model& model) {
  const fb::Graph& g = *model.graph();
  std::set<std::string> wanted;
  if (g.inputs() && g.nodes())
    for (uint32_t i : *g.inputs()) {
      if (i >= g.nodes()->size()) continue;  // the translation reports it
      const fb::Node& n = *g.nodes()->Get(i);
      const fb::ValueNode* v = n.data_as_ValueNode();
      if (v && !v->dtype() && n.name()) wanted.insert(n.name()->str());
    }
  std::map<std::string, InferredType> found;
  if (wanted.empty()) return found;
  Walk{wanted, found}.graph(g);
  for (const auto& name : wanted)
    if (!found.count(name))
      found[name] = {::onnx::TensorProto::FLOAT, "no integer use found; the default"};
  return found;
}

}  // namespace rlx::rten
