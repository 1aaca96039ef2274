// Graph structure: node names, captures, inputs and outputs, constants, operators with the Casts
// that bridge rten's int32 values and ONNX's bool / int64 ones. Every index read from the file is
// checked before use; every message names the file, the graph and the node.
#include <fmt/format.h>

#include <set>

#include "rlx/core/error.h"
#include "translate.h"

namespace rlx::rten {

namespace {

using ::onnx::AttributeProto;
using ::onnx::TensorProto;

const char* kind_name(fb::NodeKind k) {
  switch (k) {
    case fb::NodeKind::OperatorNode:
      return "an operator node";
    case fb::NodeKind::ConstantNode:
      return "a constant node";
    case fb::NodeKind::ValueNode:
      return "a value node";
    default:
      return "a node of unknown kind";
  }
}

std::string node_name(const fb::Node& n, uint32_t index) {
  if (n.name() && n.name()->size()) return n.name()->str();
  return fmt::format("#{}", index);
}

int onnx_type_of(fb::DataType t) {
  switch (t) {
    case fb::DataType::Int32:
      return TensorProto::INT32;
    case fb::DataType::Float:
      return TensorProto::FLOAT;
    case fb::DataType::Int8:
      return TensorProto::INT8;
    case fb::DataType::UInt8:
      return TensorProto::UINT8;
  }
  return 0;
}

void add_cast(::onnx::GraphProto* g, const std::string& in, const std::string& out, int to) {
  auto* n = g->add_node();
  n->set_op_type("Cast");
  n->set_name(out + ":cast");
  n->add_input(in);
  n->add_output(out);
  auto* a = n->add_attribute();
  a->set_name("to");
  a->set_type(AttributeProto::INT);
  a->set_i(to);
}

}  // namespace

Translator::Translator(const RtenFile& file, std::string display_name)
    : file_(file), name_(std::move(display_name)) {}

std::string Translator::fresh(const std::string& base) {
  auto [it, inserted] = used_.emplace(base, 0);
  if (inserted) return base;
  for (;;) {
    std::string candidate = fmt::format("{}#{}", base, ++it->second);
    if (used_.emplace(candidate, 0).second) return candidate;
  }
}

::onnx::ModelProto Translator::run(std::map<std::string, std::string>* notes) {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("rten");
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOnnxOpset);
  inferred_ = infer_input_types(*file_.model);
  graph(*file_.model->graph(), nullptr, "main graph", m.mutable_graph(), true);
  if (notes) {
    std::string s;
    for (const auto& [name, t] : inferred_)
      s += fmt::format("{}{}: {} ({})", s.empty() ? "" : "; ", name,
                       t.onnx_type == TensorProto::INT32 ? "i32" : "f32", t.why);
    if (!s.empty()) (*notes)["rten.inferred_input_dtypes"] = s;
  }
  return m;
}

void Translator::value_info(const fb::ValueNode* v, const std::string& rten_name,
                            const std::string& onnx_name, ::onnx::ValueInfoProto* out,
                            const std::string& where) const {
  out->set_name(onnx_name);
  auto* tt = out->mutable_type()->mutable_tensor_type();
  int type = 0;
  if (v && v->dtype()) {
    type = onnx_type_of(*v->dtype());
    if (!type)
      throw_user_error(
          fmt::format("{}: input '{}' has element type {}, which rlx's rten importer "
                      "does not know",
                      where, rten_name, static_cast<int>(*v->dtype())));
  } else {
    auto it = inferred_.find(rten_name);
    type = it != inferred_.end() ? it->second.onnx_type : static_cast<int>(TensorProto::FLOAT);
  }
  tt->set_elem_type(type);
  if (!v || !v->shape()) return;  // no shape: the converter says rlx needs at least the rank
  auto* shape = tt->mutable_shape();
  for (const fb::Dim* d : *v->shape()) {
    auto* dim = shape->add_dim();
    if (d->name() && d->name()->size())
      dim->set_dim_param(d->name()->str());
    else
      dim->set_dim_value(d->value());
  }
}

void Translator::graph(const fb::Graph& g, const Scope* parent, const std::string& where,
                       ::onnx::GraphProto* out, bool main) {
  if (++depth_ > 16)
    throw_user_error(fmt::format("{}: {}: subgraphs nest more than 16 deep", name_, where));
  const auto* nodes = g.nodes();
  const uint32_t n = nodes ? nodes->size() : 0;
  auto fail = [&](const std::string& what) {
    throw_user_error(fmt::format("{}: {}: {}", name_, where, what));
  };
  auto node_at = [&](int64_t index, const char* role) -> const fb::Node& {
    if (index < 0 || index >= n)
      fail(fmt::format("{} refers to node {}, but the graph has {} nodes", role, index, n));
    return *nodes->Get(static_cast<uint32_t>(index));
  };

  // A union's type may be set with its table absent (the verifier allows it): refuse such nodes
  // here so that no accessor below meets a null table. A bare value node means "no shape".
  for (uint32_t i = 0; i < n; ++i) {
    const fb::Node& node = *nodes->Get(i);
    switch (node.data_type()) {
      case fb::NodeKind::ValueNode:
        break;
      case fb::NodeKind::OperatorNode:
      case fb::NodeKind::ConstantNode:
        if (!node.data())
          fail(fmt::format("node {} ('{}') is {} without its table", i, node_name(node, i),
                           kind_name(node.data_type())));
        break;
      default:
        fail(fmt::format("node {} ('{}') has unknown kind {}", i, node_name(node, i),
                         static_cast<int>(node.data_type())));
    }
  }

  std::set<uint32_t> captured;
  if (g.captures()) {
    if (main) fail("the main graph lists captures; only subgraphs capture outer values");
    for (uint32_t c : *g.captures()) {
      const fb::Node& node = node_at(c, "a capture");
      if (node.data_type() != fb::NodeKind::ValueNode)
        fail(fmt::format("capture {} ('{}') is {}; captures must be value nodes", c,
                         node_name(node, c), kind_name(node.data_type())));
      captured.insert(c);
    }
  }

  // Names: the main graph's inputs and outputs keep theirs (they are the model's interface),
  // every other value gets its rten name made unique, captures resolve to the nearest enclosing
  // graph's value of that name.
  std::vector<std::string> names(n);
  // Captures that resolve to nothing. rten-convert writes unnamed ones for omitted optional
  // inputs (an LSTM's sequence_lens); they are an error only where a node uses them.
  std::map<uint32_t, std::string> unresolved;
  Scope scope{parent, {}};
  auto assign = [&](uint32_t i) {
    const fb::Node& node = *nodes->Get(i);
    if (!names[i].empty() || node.data_type() == fb::NodeKind::OperatorNode) return;
    std::string rname = node.name() ? node.name()->str() : "";
    if (captured.count(i)) {
      const std::string* outer = nullptr;
      for (const Scope* s = parent; s && !outer; s = s->parent) {
        auto it = s->names.find(rname);
        if (it != s->names.end()) outer = &it->second;
      }
      if (outer)
        names[i] = *outer;
      else
        unresolved[i] = rname.empty() ? fmt::format("node {} is an unnamed capture", i)
                                      : fmt::format(
                                            "node {} captures '{}', which no enclosing graph "
                                            "defines",
                                            i, rname);
      return;
    }
    names[i] = fresh(rname.empty() ? fmt::format("rten_node_{}", i) : rname);
    if (!rname.empty()) scope.names.emplace(rname, names[i]);
  };
  if (main) {
    if (g.inputs())
      for (uint32_t i : *g.inputs()) node_at(i, "a graph input"), assign(i);
    if (g.outputs())
      for (uint32_t i : *g.outputs()) node_at(i, "a graph output"), assign(i);
  }
  for (uint32_t i = 0; i < n; ++i) assign(i);

  if (g.inputs()) {
    for (uint32_t i : *g.inputs()) {
      const fb::Node& node = node_at(i, "a graph input");
      if (node.data_type() != fb::NodeKind::ValueNode || captured.count(i))
        fail(fmt::format("graph input {} ('{}') is {}; inputs must be value nodes", i,
                         node_name(node, i),
                         captured.count(i) ? "a capture" : kind_name(node.data_type())));
      auto* vi = out->add_input();
      if (main)
        value_info(node.data_as_ValueNode(), node.name() ? node.name()->str() : "", names[i], vi,
                   fmt::format("{}: {}", name_, where));
      else
        vi->set_name(names[i]);
    }
  }
  for (uint32_t i = 0; i < n; ++i) {
    const fb::Node& node = *nodes->Get(i);
    if (node.data_type() == fb::NodeKind::ConstantNode && !captured.count(i))
      constant(*node.data_as_ConstantNode(), node_name(node, i), names[i], out->add_initializer());
  }
  for (uint32_t i = 0; i < n; ++i)
    if (nodes->Get(i)->data_type() == fb::NodeKind::OperatorNode)
      operator_node(g, i, names, unresolved, scope, out);
  if (g.outputs()) {
    for (uint32_t i : *g.outputs()) {
      const fb::Node& node = node_at(i, "a graph output");
      if (node.data_type() == fb::NodeKind::OperatorNode)
        fail(fmt::format("graph output {} ('{}') is an operator node, not a value", i,
                         node_name(node, i)));
      if (unresolved.count(i)) fail("a graph output is not defined: " + unresolved.at(i));
      out->add_output()->set_name(names[i]);
    }
  }
  --depth_;
}

void Translator::operator_node(const fb::Graph& g, uint32_t index,
                               const std::vector<std::string>& names,
                               const std::map<uint32_t, std::string>& unresolved,
                               const Scope& scope, ::onnx::GraphProto* out) {
  const auto& nodes = *g.nodes();
  const fb::Node& node = *nodes.Get(index);
  const fb::OperatorNode* op = node.data_as_OperatorNode();
  const char* type_name = fb::EnumNameOperatorType(op->type());
  std::string desc = fmt::format("node '{}' ({})", node_name(node, index),
                                 *type_name ? type_name : "unknown operator");
  std::string where = fmt::format("{}: {}", name_, desc);
  auto fail = [&](const std::string& what) {
    throw_user_error(fmt::format("{}: {}", where, what));
  };
  auto operand = [&](int32_t v, const char* role, int k, bool output) -> std::string {
    if (v < 0) return "";
    if (static_cast<uint32_t>(v) >= nodes.size())
      fail(fmt::format("{} {} refers to node {}, but the graph has {} nodes", role, k, v,
                       nodes.size()));
    const fb::Node& target = *nodes.Get(static_cast<uint32_t>(v));
    bool ok = output ? target.data_type() == fb::NodeKind::ValueNode && !names[v].empty()
                     : target.data_type() != fb::NodeKind::OperatorNode;
    if (!ok)
      fail(fmt::format("{} {} refers to node {} ('{}'), which is {}", role, k, v,
                       node_name(target, v), kind_name(target.data_type())));
    if (auto it = unresolved.find(static_cast<uint32_t>(v)); it != unresolved.end())
      fail(fmt::format("{} {} is not defined: {}", role, k, it->second));
    return names[v];
  };

  OpPlan plan = plan_op(*op, where);
  std::vector<std::string> ins, outs;
  if (op->inputs())
    for (uint32_t k = 0; k < op->inputs()->size(); ++k)
      ins.push_back(operand(op->inputs()->Get(k), "input", static_cast<int>(k), false));
  if (op->outputs())
    for (uint32_t k = 0; k < op->outputs()->size(); ++k)
      outs.push_back(operand(op->outputs()->Get(k), "output", static_cast<int>(k), true));

  for (int k : plan.bool_inputs) {
    if (k >= static_cast<int>(ins.size()) || ins[k].empty()) continue;
    std::string b = fresh(ins[k] + ":bool");
    add_cast(out, ins[k], b, TensorProto::BOOL);
    ins[k] = b;
  }
  if (plan.axes_to_input && !plan.axes.empty() && (ins.size() < 2 || ins[1].empty())) {
    auto* t = out->add_initializer();
    t->set_name(fresh(node_name(node, index) + ":axes"));
    t->set_data_type(TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(plan.axes.size()));
    for (int64_t a : plan.axes) t->add_int64_data(a);
    ins.resize(std::max<size_t>(ins.size(), 2));
    ins[1] = t->name();
  }
  std::vector<std::pair<std::string, std::string>> casts;  // ONNX result -> rten's int32 value
  for (int k : plan.int32_outputs) {
    if (k >= static_cast<int>(outs.size()) || outs[k].empty()) continue;
    std::string raw = fresh(outs[k] + ":onnx");
    casts.emplace_back(raw, outs[k]);
    outs[k] = raw;
  }

  auto* nd = out->add_node();
  nd->set_op_type(plan.op_type);
  nd->set_name(node.name() && node.name()->size() ? node.name()->str()
                                                  : fmt::format("rten_op_{}", index));
  for (const auto& s : ins) nd->add_input(s);
  for (const auto& s : outs) nd->add_output(s);
  for (auto& a : plan.attrs) *nd->add_attribute() = std::move(a);
  for (const auto& [attr, sub] : plan.subgraphs) {
    auto* a = nd->add_attribute();
    a->set_name(attr);
    a->set_type(AttributeProto::GRAPH);
    if (!sub) fail(fmt::format("its {} graph is missing", attr));
    graph(*sub, &scope, fmt::format("{} {}", desc, attr), a->mutable_g(), false);
    a->mutable_g()->set_name(fmt::format("{}.{}", nd->name(), attr));
    if (plan.op_type == "Loop") {
      // ONNX passes the iteration number as int64 and the condition as bool; rten passes both
      // as int32, which is what the body's nodes expect.
      auto* body = a->mutable_g();
      ::onnx::GraphProto fixed;
      for (int k = 0; k < std::min(2, body->input_size()); ++k) {
        std::string inner = body->input(k).name();
        std::string raw = fresh(inner + ":onnx");
        body->mutable_input(k)->set_name(raw);
        add_cast(&fixed, raw, inner, TensorProto::INT32);
      }
      for (auto& bn : *body->mutable_node()) *fixed.add_node() = std::move(bn);
      body->mutable_node()->Swap(fixed.mutable_node());
    }
  }
  for (const auto& [raw, value] : casts) add_cast(out, raw, value, TensorProto::INT32);
}

void Translator::constant(const fb::ConstantNode& c, const std::string& rten_name,
                          const std::string& onnx_name, TensorProto* t) const {
  std::string where = fmt::format("{}: constant '{}'", name_, rten_name);
  auto fail = [&](const std::string& what) { throw_user_error(fmt::format("{} {}", where, what)); };
  t->set_name(onnx_name);
  uint64_t numel = 1;
  std::string dims;
  for (uint32_t d : *c.shape()) {
    t->add_dims(d);
    dims += (dims.empty() ? "" : ",") + std::to_string(d);
    if (__builtin_mul_overflow(numel, uint64_t{d}, &numel) || numel > (uint64_t{1} << 40))
      fail(fmt::format("has shape [{}...], more than 2^40 elements", dims));
  }
  auto offset = c.data_offset();
  bool has_inline = c.data_type() != fb::ConstantData::NONE;
  if (offset && has_inline)
    fail(fmt::format("has both inline data and a tensor data offset ({})", *offset));
  if (offset) {
    if (file_.version == 1)
      fail(
          fmt::format("refers to tensor data at offset {}, but a V1 file has no tensor data "
                      "section",
                      *offset));
    if (!c.dtype())
      fail(
          fmt::format("stores its data at tensor data offset {} but has no dtype, so its size "
                      "is unknown",
                      *offset));
    int type = 0;
    uint64_t size = 0;
    switch (*c.dtype()) {
      case fb::ConstantDataType::Int32:
        type = TensorProto::INT32, size = 4;
        break;
      case fb::ConstantDataType::Float32:
        type = TensorProto::FLOAT, size = 4;
        break;
      case fb::ConstantDataType::Int8:
        type = TensorProto::INT8, size = 1;
        break;
      case fb::ConstantDataType::UInt8:
        type = TensorProto::UINT8, size = 1;
        break;
      default:
        fail(fmt::format("has dtype {}, which rlx's rten importer does not know",
                         static_cast<int>(*c.dtype())));
    }
    uint64_t nbytes = numel * size;
    uint64_t off = *offset;
    uint64_t avail = file_.tensor_data.size();
    if (off > avail || nbytes > avail - off)
      fail(fmt::format(
          "([{}], {} bytes at tensor data offset {}, file offset {}) runs past the "
          "end of the file ({} bytes): the file is truncated or the offset is wrong",
          dims, nbytes, off, file_.tensor_data_offset + off, file_.tensor_data_offset + avail));
    t->set_data_type(type);
    t->set_raw_data(file_.tensor_data.data() + off, nbytes);
    return;
  }
  const void* data = nullptr;
  uint64_t count = 0, size = 0;
  int type = 0;
  fb::ConstantDataType want{};
  switch (c.data_type()) {
    case fb::ConstantData::FloatData: {
      if (!c.data_as_FloatData()) fail("has an inline data kind but no data table");
      const auto* v = c.data_as_FloatData()->data();
      data = v->Data(), count = v->size(), size = 4, type = TensorProto::FLOAT;
      want = fb::ConstantDataType::Float32;
      break;
    }
    case fb::ConstantData::Int32Data: {
      if (!c.data_as_Int32Data()) fail("has an inline data kind but no data table");
      const auto* v = c.data_as_Int32Data()->data();
      data = v->Data(), count = v->size(), size = 4, type = TensorProto::INT32;
      want = fb::ConstantDataType::Int32;
      break;
    }
    case fb::ConstantData::Int8Data: {
      if (!c.data_as_Int8Data()) fail("has an inline data kind but no data table");
      const auto* v = c.data_as_Int8Data()->data();
      data = v->Data(), count = v->size(), size = 1, type = TensorProto::INT8;
      want = fb::ConstantDataType::Int8;
      break;
    }
    case fb::ConstantData::UInt8Data: {
      if (!c.data_as_UInt8Data()) fail("has an inline data kind but no data table");
      const auto* v = c.data_as_UInt8Data()->data();
      data = v->Data(), count = v->size(), size = 1, type = TensorProto::UINT8;
      want = fb::ConstantDataType::UInt8;
      break;
    }
    case fb::ConstantData::NONE:
      fail("has neither inline data nor a tensor data offset");
    default:
      fail(fmt::format("has inline data of unknown kind {}", static_cast<int>(c.data_type())));
  }
  if (c.dtype() && *c.dtype() != want)
    fail(fmt::format("says its dtype is {} but holds inline {}",
                     fb::EnumNameConstantDataType(*c.dtype()),
                     fb::EnumNameConstantData(c.data_type())));
  if (count != numel)
    fail(fmt::format("has shape [{}] ({} elements) but {} inline values", dims, numel, count));
  t->set_data_type(type);
  t->set_raw_data(static_cast<const char*>(data), count * size);
}

}  // namespace rlx::rten
