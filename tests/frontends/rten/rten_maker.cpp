#include "rten_maker.h"

#include <cstring>
#include <functional>
#include <stdexcept>

namespace rlx::rten::test {

namespace {

template <typename T>
uint32_t add_node(fbt::GraphT& g, const std::string& name, T&& data) {
  auto n = std::make_unique<fbt::NodeT>();
  n->name = name;
  n->data.Set(std::forward<T>(data));
  g.nodes.push_back(std::move(n));
  return static_cast<uint32_t>(g.nodes.size() - 1);
}

// Calls f on every constant of the model, subgraphs included.
void each_constant(fbt::GraphT& g, const std::function<void(fbt::ConstantNodeT&)>& f) {
  for (auto& n : g.nodes) {
    if (auto* c = n->data.AsConstantNode()) f(*c);
    if (auto* op = n->data.AsOperatorNode()) {
      if (auto* a = op->attrs.AsIfAttrs()) {
        if (a->then_branch) each_constant(*a->then_branch, f);
        if (a->else_branch) each_constant(*a->else_branch, f);
      }
      if (auto* a = op->attrs.AsLoopAttrs(); a && a->body) each_constant(*a->body, f);
    }
  }
}

uint64_t get_u64(std::string_view s, size_t at) {
  uint64_t v;
  std::memcpy(&v, s.data() + at, 8);
  return v;
}

using Fbb = flatbuffers::FlatBufferBuilder;

// The object API cannot tell an empty shape (a scalar) from an absent one; GraphMaker marks a
// value node that should have no shape with this one pseudo-dim, and the packer writes empty
// vectors otherwise.
const char* const kNoShape = "\x01no shape";

bool shapeless(const fbt::ValueNodeT& v) {
  return v.shape.size() == 1 && v.shape[0]->name == kNoShape;
}

flatbuffers::Offset<fbt::Graph> pack_graph(Fbb& fbb, const fbt::GraphT& g);

flatbuffers::Offset<void> pack_attrs(Fbb& fbb, const fbt::OperatorAttrsUnion& u) {
  auto sub = [&](const std::unique_ptr<fbt::GraphT>& g) {
    return g ? pack_graph(fbb, *g) : flatbuffers::Offset<fbt::Graph>();
  };
  if (const auto* a = u.AsIfAttrs()) {
    auto t = sub(a->then_branch);
    auto e = sub(a->else_branch);
    return fbt::CreateIfAttrs(fbb, t, e).Union();
  }
  if (const auto* a = u.AsLoopAttrs()) return fbt::CreateLoopAttrs(fbb, sub(a->body)).Union();
  return u.Pack(fbb);
}

flatbuffers::Offset<fbt::Node> pack_node(Fbb& fbb, const fbt::NodeT& n) {
  flatbuffers::Offset<void> data;
  if (const auto* v = n.data.AsValueNode()) {
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fbt::Dim>>> shape;
    if (!shapeless(*v)) {
      std::vector<flatbuffers::Offset<fbt::Dim>> dims;
      for (const auto& d : v->shape)
        dims.push_back(
            fbt::CreateDim(fbb, d->value, d->name.empty() ? 0 : fbb.CreateString(d->name)));
      shape = fbb.CreateVector(dims);
    }
    data = fbt::CreateValueNode(fbb, shape, v->dtype).Union();
  } else if (const auto* o = n.data.AsOperatorNode()) {
    auto attrs = pack_attrs(fbb, o->attrs);
    auto ins = o->inputs.empty() ? 0 : fbb.CreateVector(o->inputs);
    auto outs = o->outputs.empty() ? 0 : fbb.CreateVector(o->outputs);
    data = fbt::CreateOperatorNode(fbb, o->type, o->attrs.type, attrs, ins, outs).Union();
  } else {
    data = n.data.Pack(fbb);
  }
  auto name = n.name.empty() ? 0 : fbb.CreateString(n.name);
  return fbt::CreateNode(fbb, name, n.data.type, data);
}

flatbuffers::Offset<fbt::Graph> pack_graph(Fbb& fbb, const fbt::GraphT& g) {
  std::vector<flatbuffers::Offset<fbt::Node>> nodes;
  for (const auto& n : g.nodes) nodes.push_back(pack_node(fbb, *n));
  auto list = [&](const std::vector<uint32_t>& v) {
    return v.empty() ? flatbuffers::Offset<flatbuffers::Vector<uint32_t>>() : fbb.CreateVector(v);
  };
  auto nv = fbb.CreateVector(nodes);
  auto ins = list(g.inputs), outs = list(g.outputs), caps = list(g.captures);
  return fbt::CreateGraph(fbb, nv, ins, outs, caps);
}

std::string pack(const fbt::ModelT& model) {
  Fbb fbb;
  auto graph = pack_graph(fbb, *model.graph);
  auto meta = model.metadata ? fbt::CreateMetadata(fbb, model.metadata.get())
                             : flatbuffers::Offset<fbt::Metadata>();
  fbb.Finish(fbt::CreateModel(fbb, model.schema_version, graph, meta));  // no file identifier
  return std::string(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
}

}  // namespace

uint32_t GraphMaker::value(const std::string& name, const std::vector<std::string>& dims,
                           std::optional<fbt::DataType> dtype, bool has_shape) {
  fbt::ValueNodeT v;
  if (has_shape)
    for (const auto& d : dims) {
      auto dim = std::make_unique<fbt::DimT>();
      if (!d.empty() && std::isdigit(static_cast<unsigned char>(d[0])))
        dim->value = static_cast<uint32_t>(std::stoul(d));
      else
        dim->name = d;
      v.shape.push_back(std::move(dim));
    }
  if (dtype) v.dtype = *dtype;
  if (!has_shape) {
    v.shape.clear();
    v.shape.push_back(std::make_unique<fbt::DimT>());
    v.shape[0]->name = kNoShape;
  }
  return add_node(g, name, std::move(v));
}

uint32_t GraphMaker::constant_f32(const std::string& name, std::vector<uint32_t> shape,
                                  std::vector<float> data) {
  fbt::ConstantNodeT c;
  c.shape = std::move(shape);
  fbt::FloatDataT d;
  d.data = std::move(data);
  c.data.Set(std::move(d));
  c.dtype = fbt::ConstantDataType::Float32;
  return add_node(g, name, std::move(c));
}

uint32_t GraphMaker::constant_i32(const std::string& name, std::vector<uint32_t> shape,
                                  std::vector<int32_t> data) {
  fbt::ConstantNodeT c;
  c.shape = std::move(shape);
  fbt::Int32DataT d;
  d.data = std::move(data);
  c.data.Set(std::move(d));
  c.dtype = fbt::ConstantDataType::Int32;
  return add_node(g, name, std::move(c));
}

uint32_t GraphMaker::op(const std::string& name, fbt::OperatorType type,
                        std::vector<int32_t> inputs, std::vector<int32_t> outputs,
                        fbt::OperatorAttrsUnion attrs) {
  fbt::OperatorNodeT o;
  o.type = type;
  o.attrs = std::move(attrs);
  o.inputs = std::move(inputs);
  o.outputs = std::move(outputs);
  return add_node(g, name, std::move(o));
}

fbt::ModelT model_of(GraphMaker& main) {
  fbt::ModelT m;
  m.schema_version = 1;
  m.graph = main.take();
  return m;
}

std::string write_v1(const fbt::ModelT& model) {
  return pack(model);
}

std::string write_v2(fbt::ModelT model, size_t min_bytes) {
  std::string tensors;
  each_constant(*model.graph, [&](fbt::ConstantNodeT& c) {
    const void* p = nullptr;
    size_t n = 0;
    fbt::ConstantDataType dt{};
    if (auto* f = c.data.AsFloatData())
      p = f->data.data(), n = f->data.size() * 4, dt = fbt::ConstantDataType::Float32;
    else if (auto* i = c.data.AsInt32Data())
      p = i->data.data(), n = i->data.size() * 4, dt = fbt::ConstantDataType::Int32;
    else if (auto* i8 = c.data.AsInt8Data())
      p = i8->data.data(), n = i8->data.size(), dt = fbt::ConstantDataType::Int8;
    else if (auto* u8 = c.data.AsUInt8Data())
      p = u8->data.data(), n = u8->data.size(), dt = fbt::ConstantDataType::UInt8;
    if (!p || n < min_bytes) return;
    tensors.resize((tensors.size() + 63) / 64 * 64, '\0');
    c.data_offset = tensors.size();
    c.dtype = dt;
    tensors.append(static_cast<const char*>(p), n);
    c.data.Reset();
  });
  std::string buf = pack(model);
  std::string file(32, '\0');
  std::memcpy(file.data(), "RTEN", 4);
  put_u32(file, 4, 2);
  put_u64(file, 8, 32);
  put_u64(file, 16, buf.size());
  file += buf;
  file.resize((file.size() + 63) / 64 * 64, '\0');
  put_u64(file, 24, file.size());
  return file + tensors;
}

fbt::ModelT read_inline(std::string_view file) {
  std::string_view model = file, tensors;
  if (file.substr(0, 4) == "RTEN") {
    model = file.substr(get_u64(file, 8), get_u64(file, 16));
    tensors = file.substr(get_u64(file, 24));
  }
  std::string aligned(model);  // the accessors read scalars in place
  flatbuffers::Verifier v(reinterpret_cast<const uint8_t*>(aligned.data()), aligned.size());
  if (!v.VerifyBuffer<fbt::Model>(nullptr)) throw std::runtime_error("read_inline: bad model");
  fbt::ModelT m;
  fbt::GetModel(aligned.data())->UnPackTo(&m);
  each_constant(*m.graph, [&](fbt::ConstantNodeT& c) {
    if (!c.data_offset) return;
    size_t numel = 1;
    for (uint32_t d : c.shape) numel *= d;
    const char* p = tensors.data() + *c.data_offset;
    auto copy = [&](auto& vec, size_t elem) {
      vec.resize(numel);
      std::memcpy(vec.data(), p, numel * elem);
    };
    switch (*c.dtype) {
      case fbt::ConstantDataType::Float32: {
        fbt::FloatDataT d;
        copy(d.data, 4);
        c.data.Set(std::move(d));
        break;
      }
      case fbt::ConstantDataType::Int32: {
        fbt::Int32DataT d;
        copy(d.data, 4);
        c.data.Set(std::move(d));
        break;
      }
      case fbt::ConstantDataType::Int8: {
        fbt::Int8DataT d;
        copy(d.data, 1);
        c.data.Set(std::move(d));
        break;
      }
      case fbt::ConstantDataType::UInt8: {
        fbt::UInt8DataT d;
        copy(d.data, 1);
        c.data.Set(std::move(d));
        break;
      }
    }
    c.data_offset = flatbuffers::nullopt;
  });
  return m;
}

void put_u32(std::string& s, size_t at, uint32_t v) {
  std::memcpy(s.data() + at, &v, 4);
}

void put_u64(std::string& s, size_t at, uint64_t v) {
  std::memcpy(s.data() + at, &v, 8);
}

}  // namespace rlx::rten::test
