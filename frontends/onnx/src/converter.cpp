// The graph walk: inputs, initializers, nodes in order (with model-local functions inlined),
// outputs. Every error names the file and the node.
#include <algorithm>

#include "carried_types.h"
#include "context.h"
#include "host_eval.h"
#include "proto_io.h"
#include "rlx/core/frozen_inputs.h"
#include "rlx/core/op_registry.h"
#include "rlx/core/passes.h"

namespace rlx::onnx {

namespace fs = std::filesystem;

std::string symbol_name(const std::string& raw) {
  std::string s;
  for (char c : raw)
    s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.') ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "s_" + s;
  return s;
}

Converter::Converter(const ::onnx::ModelProto& model, std::string display_name, fs::path base_dir,
                     const ImportOptions& options)
    : model_(model),
      file_(std::move(display_name)),
      base_dir_(std::move(base_dir)),
      options_(options),
      b_(g_) {
  for (const auto& op : model.opset_import()) {
    std::string d = op.domain() == "ai.onnx" ? "" : op.domain();
    opsets_[d] = static_cast<int>(op.version());
  }
  if (!opsets_.count("")) {
    // IR version 3 models may omit the default domain; ONNX then means opset 1.
    if (model.opset_import_size() == 0) opsets_[""] = 1;
  }
  for (const auto& fn : model.functions()) functions_[{fn.domain(), fn.name()}] = &fn;
}

Tensor Converter::tensor(const ::onnx::TensorProto& t, const std::string& where) const {
  return tensor_from_proto(t, base_dir_, file_ + ": " + where);
}

std::string Converter::node_desc(const ::onnx::NodeProto& node) const {
  std::string name = node.name();
  if (name.empty() && node.output_size())
    name = "producing " + node.output(0);
  else
    name = "'" + name + "'";
  std::string op = node.domain().empty() || node.domain() == "ai.onnx"
                       ? node.op_type()
                       : node.domain() + "." + node.op_type();
  return fmt::format("node {} ({})", name, op);
}

ValPtr Converter::lookup(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end())
    throw_user_error(
        fmt::format("value '{}' is used before any node, input or initializer defines it", name));
  return it->second;
}

void Converter::define(const std::string& name, ValPtr v) {
  if (name.empty()) return;
  if (values_.count(name)) throw_user_error(fmt::format("value '{}' is defined twice", name));
  v->onnx_name = name;
  values_[name] = std::move(v);
}

void Converter::name_value(ValueId v, const std::string& onnx_name) {
  // Each ONNX name belongs to one Val, which materializes once, and rlx's own names never take a
  // reserved ONNX name: renaming cannot collide.
  if (onnx_name.empty() || named_.count(v) || g_.values[v].producer < 0) return;
  g_.values[v].name = onnx_name;
  named_.insert(v);
}

ValueId Converter::sym_int_value(const SymInt& s) {
  ValueId r = b_.constant(Tensor::from<int64_t>(DType::kI64, {}, {s.coef}));
  if (s.is_static()) return r;
  for (size_t i = 0; i < s.syms.size(); ++i) {
    auto it = sym_sources_.find(s.syms[i]);
    if (it == sym_sources_.end())
      throw_user_error(
          fmt::format("symbolic dim '{}' has no graph input it can be read from", s.syms[i]));
    ValueId d = b_.op("dim_size", {it->second.first}, {{"dim", it->second.second}});
    r = i == 0 && s.coef == 1 ? d : b_.mul(r, d);
  }
  return r;
}

ValueId Converter::sym_to_graph(const SymTensor& s) {
  if (s.is_static()) return b_.constant(tensor_from_sym(s));
  std::vector<ValueId> parts;
  for (const SymInt& e : s.v) parts.push_back(b_.reshape(sym_int_value(e), Shape{1}));
  ValueId flat = b_.concat(parts, 0);
  ValueId r = b_.reshape(flat, Shape(s.shape.begin(), s.shape.end()));
  return b_.convert(r, s.dtype == DType::kBool ? DType::kBool : s.dtype);
}

ValueId Converter::materialize(Val& v) {
  if (v.id != kNoValue) return v.id;
  if (v.konst) {
    const Tensor& t = *v.konst;
    // Weights stay params (bound by name, never folded into kernels); small values and empty
    // tensors become constants.
    if (v.initializer && t.numel() >= 64) {
      v.id = b_.param(v.onnx_name, t);
      named_.insert(v.id);
      return v.id;
    }
    v.id = b_.constant(t);
  } else if (v.sym) {
    v.id = sym_to_graph(*v.sym);
  } else {
    throw_internal_error("ONNX value '" + v.onnx_name + "' has no graph value and no known value");
  }
  name_value(v.id, v.onnx_name);
  return v.id;
}

std::vector<std::string> Converter::runtime_inputs_behind(const ValPtr& v) const {
  std::vector<std::string> out;
  if (v->id == kNoValue) return out;
  std::vector<bool> seen(g_.values.size(), false);
  std::vector<ValueId> stack{v->id};
  while (!stack.empty()) {
    ValueId x = stack.back();
    stack.pop_back();
    if (x < 0 || seen[x]) continue;
    seen[x] = true;
    int32_t p = g_.values[x].producer;
    if (p < 0) {
      if (std::find(g_.inputs.begin(), g_.inputs.end(), x) != g_.inputs.end())
        out.push_back(g_.values[x].name);
      continue;
    }
    for (ValueId in : g_.nodes[p].inputs) stack.push_back(in);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void Converter::need_input_values(const NodeCtx& n, const std::string& what, int operand) {
  ValPtr v = n.in(operand);
  std::vector<std::string> inputs = runtime_inputs_behind(v);
  if (inputs.empty())
    n.failf("{} must be known when the model is compiled, but it is computed at run time", what);
  std::string list;
  for (const auto& s : inputs) list += (list.empty() ? "'" : ", '") + s + "'";
  throw NeedsInputValues(
      fmt::format("{}: {}: {} ('{}') must be known when the model is compiled, but it depends "
                  "on the value of graph input {}; rlx compiles per shape, so make it an "
                  "initializer or a Constant, or give that input's value at import "
                  "(ImportOptions::input_values; `rlx run | bench | compile --inputs IN` or "
                  "`--input NAME=VALUES`), which freezes it",
                  file_, node_desc(n.node), what, v->onnx_name, list),
      inputs);
}

void Converter::add_graph_inputs() {
  const auto& graph = model_.graph();
  std::set<std::string> inits, symbols_seen;
  for (const auto& t : graph.initializer()) {
    auto v = std::make_shared<Val>();
    v->konst = tensor(t, "initializer '" + t.name() + "'");
    v->type =
        TensorType{v->konst->dtype(), Shape(v->konst->shape().begin(), v->konst->shape().end())};
    v->initializer = true;
    if (carried_type(t.data_type()))
      v->onnx_type = t.data_type();
    else
      v->sym = sym_from_tensor(*v->konst);
    define(t.name(), v);
    inits.insert(t.name());
  }
  if (graph.sparse_initializer_size())
    throw_user_error(file_ + ": sparse initializers are not supported");
  for (const auto& in : graph.input()) {
    // Before IR version 4 initializers were listed as inputs too; they stay weights.
    if (inits.count(in.name())) continue;
    std::string where = fmt::format("{}: graph input '{}'", file_, in.name());
    if (!in.type().has_tensor_type())
      throw_user_error(where +
                       " is not a tensor (sequence, map and optional inputs are not supported)");
    const auto& tt = in.type().tensor_type();
    auto dt = dtype_from_onnx(tt.elem_type());
    auto carried = carried_type(tt.elem_type());
    if (carried) dt = carried->storage;
    if (!dt)
      throw_user_error(
          fmt::format("{} has element type {}", where, describe_onnx_dtype(tt.elem_type())));
    if (!tt.has_shape()) throw_user_error(where + " has no shape; rlx needs at least its rank");
    TensorType type{*dt, {}};
    int64_t total = 1;
    for (int i = 0; i < tt.shape().dim_size(); ++i) {
      const auto& d = tt.shape().dim(i);
      if (d.has_dim_value() && d.dim_value() >= 0 &&
          (__builtin_mul_overflow(total, std::max<int64_t>(d.dim_value(), 1), &total) ||
           total > (int64_t{1} << 40)))
        throw_user_error(where + " has more than 2^40 elements");
      if (d.has_dim_value() && d.dim_value() >= 0) {
        type.shape.emplace_back(d.dim_value());
        continue;
      }
      std::string sym = d.has_dim_param() && !d.dim_param().empty()
                            ? symbol_name(d.dim_param())
                            : symbol_name(in.name()) + "_d" + std::to_string(i);
      symbols_seen.insert(sym);
      std::optional<int64_t> size;
      if (auto given = options_.dim_values.find(sym); given != options_.dim_values.end())
        size = given->second;
      else if (auto seen = fixed_dims_.find(sym); seen != fixed_dims_.end())
        size = seen->second;
      else if (auto run = options_.input_shapes.find(in.name());
               run != options_.input_shapes.end() &&
               static_cast<int>(run->second.size()) == tt.shape().dim_size())
        size = run->second[i];  // a rank that disagrees is left for the runtime to report
      if (!size) {
        type.shape.push_back(Dim::symbol(sym));
        continue;
      }
      if (*size < 0 || *size > (int64_t{1} << 40))
        throw_user_error(fmt::format("{}: the size given for dim '{}' ({}) is out of range", where,
                                     sym, *size));
      fixed_dims_.emplace(sym, *size);
      type.shape.emplace_back(*size);
    }
    auto v = std::make_shared<Val>();
    auto bound = options_.input_values.find(in.name());
    if (bound != options_.input_values.end()) {
      const Tensor& t = bound->second;
      if (t.dtype() != type.dtype || t.rank() != type.rank())
        throw_user_error(fmt::format("{} is {}, the value given for it is {}{}", where, type.str(),
                                     dtype_name(t.dtype()), t.shape_str()));
      v->konst = t;
      v->sym = sym_from_tensor(t);
      v->type = TensorType{t.dtype(), Shape(t.shape().begin(), t.shape().end())};
      v->bound_input = true;
    } else {
      v->type = type;
      v->id = g_.add_input(in.name(), type);
      named_.insert(v->id);
      for (int64_t i = 0; i < type.rank(); ++i)
        if (!type.shape[i].is_static())
          sym_sources_.emplace(type.shape[i].sym, std::make_pair(v->id, i));
    }
    if (carried) v->onnx_type = carried->onnx_type;
    define(in.name(), v);
  }
  for (const auto& [sym, size] : options_.dim_values)
    if (!symbols_seen.count(sym)) {
      std::string known;
      for (const auto& s : symbols_seen) known += (known.empty() ? "" : ", ") + s;
      throw_user_error(
          fmt::format("{}: a size is given for dim '{}', but no graph input has a "
                      "dim of that name (symbolic dims: {})",
                      file_, sym, known.empty() ? "none" : known));
    }
}

void Converter::add_graph_outputs() {
  for (const auto& out : model_.graph().output()) {
    // Outside any node, so the file is named here (convert_node's errors get it from there).
    if (!values_.count(out.name()))
      throw_user_error(
          fmt::format("{}: graph output '{}' is never produced: no node, graph input "
                      "or initializer of the model defines it",
                      file_, out.name()));
    ValPtr v = lookup(out.name());
    ValueId id = materialize(*v);
    bool reused = std::find(g_.outputs.begin(), g_.outputs.end(), id) != g_.outputs.end();
    if (g_.values[id].name != out.name() || g_.values[id].producer < 0 || reused) {
      // An output that is another value under a different name (Identity, an input passed
      // through) gets its own copy so that it can carry the output's name.
      b_.set_loc(out.name());
      TensorType t = g_.type(id);
      for (Value& other : g_.values)
        if (other.name == out.name()) other.name = g_.fresh_name("t");
      id = b_.op("reshape", {id}, {{"shape", t.shape}});
      g_.values[id].name = out.name();
      named_.insert(id);
    }
    g_.outputs.push_back(id);
  }
}

void Converter::inline_function(const ::onnx::FunctionProto& fn, const ::onnx::NodeProto& call) {
  if (++depth_ > 16) throw_user_error("functions nest more than 16 deep (recursive function?)");
  // Body values get a unique prefix; formal inputs and outputs map to the call's values.
  std::string prefix = fmt::format("{}#{}/", fn.name(), inline_counter_++);
  std::map<std::string, std::string> rename;
  for (int i = 0; i < fn.input_size(); ++i)
    rename[fn.input(i)] = i < call.input_size() ? call.input(i) : "";
  for (int i = 0; i < fn.output_size(); ++i)
    rename[fn.output(i)] = i < call.output_size() ? call.output(i) : "";
  auto mapped = [&](const std::string& n) {
    if (n.empty()) return n;
    auto it = rename.find(n);
    return it != rename.end() ? it->second : prefix + n;
  };
  std::map<std::string, const ::onnx::AttributeProto*> call_attrs;
  for (const auto& a : call.attribute()) call_attrs[a.name()] = &a;
  for (const auto& inner : fn.node()) {
    ::onnx::NodeProto n = inner;
    for (auto& s : *n.mutable_input()) s = mapped(s);
    for (auto& s : *n.mutable_output()) s = mapped(s);
    // Attributes that refer to the caller's attributes take their values from the call.
    auto* attrs = n.mutable_attribute();
    for (int k = attrs->size() - 1; k >= 0; --k) {
      auto& a = (*attrs)[k];
      if (a.ref_attr_name().empty()) continue;
      auto it = call_attrs.find(a.ref_attr_name());
      if (it == call_attrs.end()) {
        attrs->DeleteSubrange(k, 1);
        continue;
      }
      std::string name = a.name();
      a = *it->second;
      a.set_name(name);
    }
    if (n.name().empty())
      n.set_name(prefix + inner.op_type());
    else
      n.set_name(prefix + n.name());
    convert_node(n);
  }
  --depth_;
}

namespace {

void rename_graph(::onnx::GraphProto& g, const std::map<std::string, std::string>& m) {
  auto fix = [&](std::string* s) {
    auto it = m.find(*s);
    if (it != m.end()) *s = it->second;
  };
  for (auto& v : *g.mutable_input()) fix(v.mutable_name());
  for (auto& v : *g.mutable_output()) fix(v.mutable_name());
  for (auto& t : *g.mutable_initializer()) fix(t.mutable_name());
  for (auto& n : *g.mutable_node()) {
    for (auto& s : *n.mutable_input()) fix(&s);
    for (auto& s : *n.mutable_output()) fix(&s);
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) rename_graph(*a.mutable_g(), m);
      for (auto& sub : *a.mutable_graphs()) rename_graph(sub, m);
    }
  }
}

}  // namespace

std::vector<ValPtr> Converter::convert_subgraph(const ::onnx::GraphProto& body,
                                                const std::vector<ValPtr>& args) {
  if (++depth_ > 16) throw_user_error("subgraphs nest more than 16 deep");
  if (static_cast<size_t>(body.input_size()) != args.size())
    throw_user_error(
        fmt::format("the subgraph takes {} inputs, {} are given", body.input_size(), args.size()));
  std::string prefix =
      fmt::format("{}#{}/", body.name().empty() ? "body" : body.name(), inline_counter_++);
  std::map<std::string, std::string> m;
  for (const auto& v : body.input()) m[v.name()] = prefix + v.name();
  for (const auto& t : body.initializer()) m[t.name()] = prefix + t.name();
  for (const auto& n : body.node())
    for (const auto& o : n.output())
      if (!o.empty()) m[o] = prefix + o;
  ::onnx::GraphProto g = body;
  rename_graph(g, m);
  for (int i = 0; i < g.input_size(); ++i)
    define(g.input(i).name(), std::make_shared<Val>(*args[i]));
  for (const auto& t : g.initializer()) {
    auto v = std::make_shared<Val>();
    v->konst = tensor(t, "initializer '" + t.name() + "'");
    v->type =
        TensorType{v->konst->dtype(), Shape(v->konst->shape().begin(), v->konst->shape().end())};
    v->sym = sym_from_tensor(*v->konst);
    define(t.name(), v);
  }
  convert_nodes(g.node());
  std::vector<ValPtr> outs;
  for (const auto& o : g.output()) outs.push_back(lookup(o.name()));
  --depth_;
  return outs;
}

void Converter::convert_node(const ::onnx::NodeProto& node) {
  std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
  try {
    const OpTable& table = op_table();
    auto fn = functions_.find({node.domain(), node.op_type()});
    auto handler = table.find(domain.empty() ? node.op_type() : domain + "." + node.op_type());
    if (handler == table.end() && fn != functions_.end()) {
      inline_function(*fn->second, node);
      return;
    }
    auto opset = opsets_.find(domain);
    if (opset == opsets_.end() || handler == table.end()) {
      std::string why =
          opset == opsets_.end()
              ? fmt::format("the model imports no opset for domain '{}'",
                            domain.empty() ? "ai.onnx" : domain)
              : fmt::format("operator {} is not supported by rlx's ONNX importer",
                            domain.empty() ? node.op_type() : domain + "." + node.op_type());
      throw_user_error(why);
    }
    int carried_in = 0;
    for (int i = 0; i < node.input_size(); ++i)
      if (!node.input(i).empty())
        if (int t = lookup(node.input(i))->onnx_type; t && !carried_in) carried_in = t;
    static const std::set<std::string> kConversions = {"Cast", "CastLike", "QuantizeLinear",
                                                       "DequantizeLinear"};
    static const std::set<std::string> kMovement = {"Identity", "Reshape",   "Flatten",
                                                    "Squeeze",  "Unsqueeze", "Transpose"};
    if (carried_in && domain.empty() && !kConversions.count(node.op_type()) &&
        !kMovement.count(node.op_type()))
      throw_user_error(
          fmt::format("{} operands are not supported here: rlx carries that type as "
                      "codes and converts it only in Cast, CastLike, QuantizeLinear "
                      "and DequantizeLinear",
                      onnx_dtype_name(carried_in)));
    b_.set_loc(node.name().empty() && node.output_size() ? node.output(0) : node.name());
    NodeCtx ctx(*this, node, opset->second);
    auto first = static_cast<int32_t>(g_.nodes.size());
    handler->second(ctx);
    if (carried_in && kMovement.count(node.op_type())) {
      for (const auto& o : node.output())
        if (!o.empty()) lookup(o)->onnx_type = carried_in;
    } else {
      fold_if_constant(node, first);
    }
    for (int k = 0; k < node.output_size(); ++k)
      if (!node.output(k).empty() && !values_.count(node.output(k)))
        throw_user_error(
            fmt::format("output {} ('{}') is not produced by rlx's {} importer "
                        "(optional outputs of this kind are not supported)",
                        k, node.output(k), node.op_type()));
  } catch (const NeedsInputValues&) {
    throw;
  } catch (const Error& e) {
    std::string msg = e.what();
    std::string prefix = file_ + ": ";
    if (msg.rfind(prefix, 0) == 0) msg = msg.substr(prefix.size());
    throw Error(e.kind(), fmt::format("{}{}: {}", prefix, node_desc(node), msg), e.where());
  } catch (const std::exception& e) {
    // Anything else is an importer bug; it still reaches the user as an error, not a crash.
    throw Error(ErrorKind::kInternal,
                fmt::format("{}: {}: internal error: {}", file_, node_desc(node), e.what()));
  }
}

// A node whose inputs are all known on the host computes known outputs: evaluate the MIR it
// produced so later ops that need compile-time values (a Range limit, a Resize scale) get them.
// The graph nodes stay behind, unused; dead-code elimination drops them at the end.
void Converter::fold_if_constant(const ::onnx::NodeProto& node, int32_t first) {
  for (int i = 0; i < node.input_size(); ++i) {
    if (node.input(i).empty()) continue;
    const Val& v = *lookup(node.input(i));
    if (!v.konst && !(v.sym && v.sym->is_static())) return;
  }
  std::vector<ValueId> ids;
  std::vector<ValPtr> targets;
  for (const auto& o : node.output()) {
    if (o.empty()) continue;
    ValPtr v = lookup(o);
    if (v->konst || v->id == kNoValue || g_.values[v->id].producer < first) continue;
    ids.push_back(v->id);
    targets.push_back(v);
  }
  if (ids.empty()) return;
  auto folded = host_eval(g_, first, ids, kMaxSymElements);
  if (!folded) return;
  for (size_t k = 0; k < targets.size(); ++k) {
    targets[k]->konst = (*folded)[k];
    targets[k]->sym = sym_from_tensor((*folded)[k]);
    targets[k]->id = kNoValue;
  }
}

void Converter::convert_nodes(const google::protobuf::RepeatedPtrField<::onnx::NodeProto>& nodes) {
  for (const auto& node : nodes) convert_node(node);
}

Model Converter::run() {
  const auto& graph = model_.graph();
  auto it = opsets_.find("");
  if (it != opsets_.end() && it->second > 27)
    throw_user_error(fmt::format("{}: opset {} is newer than rlx's importer knows (up to 27)",
                                 file_, it->second));
  // ONNX names are reserved up front so that names rlx makes up never take one.
  for (const auto& in : graph.input()) g_.reserve_name(in.name());
  for (const auto& t : graph.initializer()) g_.reserve_name(t.name());
  for (const auto& n : graph.node())
    for (const auto& o : n.output()) g_.reserve_name(o);
  add_graph_inputs();
  convert_nodes(graph.node());
  add_graph_outputs();
  eliminate_dead_code(g_);
  verify_graph(g_);
  Model m;
  m.architecture = "onnx";
  m.metadata["producer"] = model_.producer_name() + " " + model_.producer_version();
  m.metadata["ir_version"] = std::to_string(model_.ir_version());
  for (const auto& [domain, version] : opsets_)
    m.metadata["opset" + (domain.empty() ? std::string() : "." + domain)] = std::to_string(version);
  for (const auto& kv : model_.metadata_props()) m.metadata["onnx." + kv.key()] = kv.value();
  if (!fixed_dims_.empty()) {
    std::string fixed;
    for (const auto& [sym, size] : fixed_dims_)
      fixed += fmt::format("{}{}={}", fixed.empty() ? "" : ",", sym, size);
    m.metadata[kFixedDimsKey] = fixed;
  }
  g_.name = "main";
  m.graphs["main"] = std::move(g_);
  return m;
}

Model import_bytes(std::string_view bytes, const std::string& display_name,
                   const fs::path& base_dir, const ImportOptions& options) {
  ::onnx::ModelProto model = parse_model(bytes, display_name);
  return import_model(model, display_name, base_dir, options);
}

// input_values are offers: an input is frozen only when a node needs its value at compile time
// (NeedsInputValues names the inputs behind that value); the others stay inputs of the graph, so
// a caller can hand over every value it will run with. Each retry freezes at least one more
// input, so the loop ends.
Model import_model(const ::onnx::ModelProto& model, const std::string& display_name,
                   const fs::path& base_dir, const ImportOptions& options) {
  ImportOptions frozen_options = options;
  frozen_options.input_values.clear();
  std::string frozen;
  for (;;) {
    try {
      Converter c(model, display_name, base_dir, frozen_options);
      Model m = c.run();
      if (!frozen.empty()) m.metadata[kFrozenInputsKey] = frozen;
      return m;
    } catch (const NeedsInputValues& e) {
      bool added = false;
      for (const std::string& name : e.inputs()) {
        auto offered = options.input_values.find(name);
        if (offered == options.input_values.end() || frozen_options.input_values.count(name))
          continue;
        frozen_options.input_values.insert(*offered);
        frozen += (frozen.empty() ? "" : "\n") + name;
        added = true;
      }
      if (!added) throw;
    }
  }
}

Model import_file(const fs::path& path, const ImportOptions& options) {
  std::string bytes = read_file_bytes(path);
  return import_bytes(bytes, path.string(), path.parent_path(), options);
}

std::map<std::string, Tensor> read_test_data_inputs(const fs::path& model_path,
                                                    const fs::path& folder) {
  ::onnx::ModelProto model = parse_model(read_file_bytes(model_path), model_path.string());
  std::set<std::string> initializers;
  for (const auto& t : model.graph().initializer()) initializers.insert(t.name());
  std::vector<std::string> names;
  for (const auto& in : model.graph().input())
    if (!initializers.count(in.name())) names.push_back(in.name());
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string file = entry.path().filename().string();
    if (file.rfind("input_", 0) == 0 && entry.path().extension() == ".pb")
      files.push_back(entry.path());
  }
  if (ec)
    throw_user_error(fmt::format("cannot list the folder {}: {}", folder.string(), ec.message()));
  if (files.empty() && !names.empty())
    throw_user_error(
        fmt::format("{} holds no input_0.pb, input_1.pb, ... (ONNX test data)", folder.string()));
  std::map<std::string, Tensor> inputs;
  for (size_t i = 0; i < names.size(); ++i) {
    fs::path file = folder / fmt::format("input_{}.pb", i);
    if (fs::exists(file)) inputs[names[i]] = read_tensor_file(file).second;
  }
  for (const fs::path& file : files) {
    const std::string stem = file.stem().string().substr(6);
    if (stem.empty() || stem.find_first_not_of("0123456789") != std::string::npos ||
        std::stoull(stem.substr(0, 9)) >= names.size())
      throw_user_error(fmt::format("{}: the model has {} input{}, so no file {} stands for one",
                                   folder.string(), names.size(), names.size() == 1 ? "" : "s",
                                   file.filename().string()));
  }
  return inputs;
}

std::pair<std::string, Tensor> read_tensor_file(const fs::path& path) {
  std::string bytes = read_file_bytes(path);
  ::onnx::TensorProto t;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !t.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw_user_error(fmt::format("{}: not a serialized TensorProto", path.string()));
  return {t.name(), tensor_from_proto(t, path.parent_path(), path.string())};
}

}  // namespace rlx::onnx
