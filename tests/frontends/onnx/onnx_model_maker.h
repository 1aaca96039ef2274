// A small ModelProto builder for tests that write ONNX models in code (test_importer.cpp,
// test_onnx_training.cpp).
#pragma once
#include <onnx/onnx_pb.h>

#include <cctype>
#include <filesystem>
#include <string>
#include <vector>

#include "rlx/onnx/import.h"

namespace rlx::test {

using ::onnx::TensorProto;

// A tiny ModelProto builder.
struct ModelMaker {
  ::onnx::ModelProto m;
  ::onnx::GraphProto* g = m.mutable_graph();

  explicit ModelMaker(int opset = 17) {
    m.set_ir_version(8);
    m.add_opset_import()->set_version(opset);
    g->set_name("test");
  }
  void input(const std::string& name, int elem, std::vector<std::string> dims) {
    auto* t = g->add_input();
    t->set_name(name);
    auto* tt = t->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    auto* sh = tt->mutable_shape();
    for (auto& d : dims) {
      auto* dim = sh->add_dim();
      if (d == "?") continue;
      if (std::isdigit(static_cast<unsigned char>(d[0])))
        dim->set_dim_value(std::stoll(d));
      else
        dim->set_dim_param(d);
    }
  }
  void output(const std::string& name) { g->add_output()->set_name(name); }
  ::onnx::NodeProto* node(const std::string& op, std::vector<std::string> in,
                          std::vector<std::string> out, const std::string& name = "") {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + "_" + std::to_string(g->node_size()) : name);
    for (auto& s : in) n->add_input(s);
    for (auto& s : out) n->add_output(s);
    return n;
  }
  static void attr_i(::onnx::NodeProto* n, const std::string& k, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(k);
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(v);
  }
  TensorProto* init_i64(const std::string& name, std::vector<int64_t> v) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(v.size()));
    for (int64_t x : v) t->add_int64_data(x);
    return t;
  }
  TensorProto* init_f32(const std::string& name, std::vector<int64_t> dims, std::vector<float> v) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
    return t;
  }
  Model import(onnx::ImportOptions o = {}, const std::filesystem::path& dir = ".") const {
    return onnx::import_bytes(m.SerializeAsString(), "test.onnx", dir, o);
  }
};

}  // namespace rlx::test
