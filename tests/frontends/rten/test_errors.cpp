// Truncated, oversized and inconsistent files: each is refused with a message that names the
// file, the field or tensor, and what is wrong.
#include <gtest/gtest.h>

#include "rlx/rten/import.h"
#include "rten_maker.h"

namespace rlx {
namespace {

using namespace rten::test;
using OT = fbt::OperatorType;

// A small valid model: y = relu(x + w), w held in the tensor data section when written as V2.
fbt::ModelT small_model() {
  GraphMaker g;
  uint32_t x = g.value("x", {"2", "3"}, fbt::DataType::Float);
  uint32_t w = g.constant_f32("w", {2, 3}, {1, -2, 3, -4, 5, -6});
  uint32_t s = g.value("s");
  uint32_t y = g.value("y");
  g.op("add", OT::Add, {static_cast<int32_t>(x), static_cast<int32_t>(w)},
       {static_cast<int32_t>(s)});
  g.op("relu", OT::Relu, {static_cast<int32_t>(s)}, {static_cast<int32_t>(y)});
  g.inputs({x});
  g.outputs({y});
  return model_of(g);
}

std::string error_of(const std::string& bytes, const std::string& name = "bad.rten") {
  try {
    rten::import_bytes(bytes, name);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUser) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "the importer accepted a bad file";
  return "";
}

#define EXPECT_HAS(msg, part) EXPECT_NE((msg).find(part), std::string::npos) << (msg)

TEST(RtenErrors, SmallModelIsValid) {
  Model m = rten::import_bytes(write_v2(small_model()), "ok.rten");
  EXPECT_EQ(m.graph().inputs.size(), 1u);
  Model m1 = rten::import_bytes(write_v1(small_model()), "ok1.rten");
  EXPECT_EQ(m1.metadata.at("rten.format_version"), "1");
}

TEST(RtenErrors, TruncatedHeader) {
  std::string f = write_v2(small_model()).substr(0, 20);
  std::string msg = error_of(f);
  EXPECT_HAS(msg,
             "bad.rten: truncated: the file is 20 bytes, shorter than the 32-byte rten header");
}

TEST(RtenErrors, UnknownVersion) {
  std::string f = write_v2(small_model());
  put_u32(f, 4, 3);
  EXPECT_HAS(error_of(f), "bad.rten: rten format version 3 is not supported");
}

TEST(RtenErrors, ModelBufferPastTheEnd) {
  std::string f = write_v2(small_model());
  put_u64(f, 16, f.size());  // model_len larger than what follows offset 32
  std::string msg = error_of(f);
  EXPECT_HAS(msg, "bad.rten: truncated or inconsistent: the model buffer at offset 32 is");
}

TEST(RtenErrors, ModelOffsetInsideTheHeader) {
  std::string f = write_v2(small_model());
  put_u64(f, 8, 16);
  EXPECT_HAS(error_of(f), "the header's model offset 16 is outside the file");
}

TEST(RtenErrors, TensorDataOffsetOverlapsTheModel) {
  std::string f = write_v2(small_model());
  put_u64(f, 24, 40);
  EXPECT_HAS(error_of(f), "the header's tensor data offset 40 is inconsistent");
}

TEST(RtenErrors, TensorDataCutShortNamesTheTensor) {
  std::string f = write_v2(small_model());
  f.resize(f.size() - 4);  // w's 24 bytes are the last ones in the file
  std::string msg = error_of(f);
  EXPECT_HAS(msg, "bad.rten: constant 'w' ([2,3], 24 bytes at tensor data offset 0, file offset");
  EXPECT_HAS(msg, "runs past the end of the file");
}

TEST(RtenErrors, DataOffsetBeyondTheFileNamesTensorAndOffset) {
  fbt::ModelT m = small_model();
  std::string f = write_v2(std::move(m));
  fbt::ModelT back = read_inline(f);
  for (auto& n : back.graph->nodes)
    if (auto* c = n->data.AsConstantNode()) {
      c->data.Reset();
      c->data_offset = 1u << 30;
    }
  std::string bad = write_v2(std::move(back));
  // write_v2 found no inline data to move, so the tensor section is empty.
  std::string msg = error_of(bad);
  EXPECT_HAS(msg, "constant 'w' ([2,3], 24 bytes at tensor data offset 1073741824");
}

TEST(RtenErrors, ExternalDataInAV1File) {
  fbt::ModelT m = small_model();
  for (auto& n : m.graph->nodes)
    if (auto* c = n->data.AsConstantNode()) {
      c->data.Reset();
      c->data_offset = 0;
    }
  EXPECT_HAS(error_of(write_v1(m)),
             "constant 'w' refers to tensor data at offset 0, but a V1 file has no tensor data");
}

TEST(RtenErrors, InlineDataDisagreesWithShape) {
  fbt::ModelT m = small_model();
  m.graph->nodes[1]->data.AsConstantNode()->shape = {2, 4};
  EXPECT_HAS(error_of(write_v1(m)),
             "constant 'w' has shape [2,4] (8 elements) but 6 inline values");
}

TEST(RtenErrors, CorruptFlatBuffer) {
  std::string f = write_v2(small_model());
  put_u32(f, 32, 0x7ffffff0);  // the root table offset now points far outside the buffer
  std::string msg = error_of(f);
  EXPECT_HAS(msg, "bad.rten: the model buffer (");
  EXPECT_HAS(msg, "is not a valid rten FlatBuffers model");
}

TEST(RtenErrors, GarbageWithoutMagicIsReadAsV1AndRefused) {
  EXPECT_HAS(error_of(std::string(100, 'x')), "it was read as a V1 file");
  EXPECT_HAS(error_of(""), "too short for a FlatBuffers root table");
}

TEST(RtenErrors, OperatorInputOutOfRange) {
  fbt::ModelT m = small_model();
  m.graph->nodes[4]->data.AsOperatorNode()->inputs[1] = 99;
  EXPECT_HAS(error_of(write_v1(m)),
             "bad.rten: node 'add' (Add): input 1 refers to node 99, but the graph has 6 nodes");
}

TEST(RtenErrors, OperatorOutputMustBeAValue) {
  fbt::ModelT m = small_model();
  m.graph->nodes[4]->data.AsOperatorNode()->outputs[0] = 1;
  EXPECT_HAS(error_of(write_v1(m)), "output 0 refers to node 1 ('w'), which is a constant node");
}

TEST(RtenErrors, UnknownOperatorType) {
  fbt::ModelT m = small_model();
  m.graph->nodes[5]->data.AsOperatorNode()->type = static_cast<OT>(250);
  EXPECT_HAS(error_of(write_v1(m)), "operator type 250 is not known to rlx's rten importer");
}

TEST(RtenErrors, WrongAttributeTable) {
  fbt::ModelT m = small_model();
  fbt::ConcatAttrsT attrs;
  m.graph->nodes[5]->data.AsOperatorNode()->attrs.Set(std::move(attrs));
  EXPECT_HAS(error_of(write_v1(m)),
             "node 'relu' (Relu): carries 5 attributes, but this operator takes none");
}

TEST(RtenErrors, CaptureOfAnUndefinedName) {
  GraphMaker then_g;
  uint32_t cap = then_g.value("nowhere");
  then_g.captures({cap});
  then_g.outputs({cap});
  GraphMaker else_g;
  uint32_t cap2 = else_g.value("x");
  else_g.captures({cap2});
  else_g.outputs({cap2});
  GraphMaker g;
  uint32_t x = g.value("x", {"2"}, fbt::DataType::Float);
  uint32_t c = g.value("c", {}, fbt::DataType::Int32);
  uint32_t y = g.value("y");
  fbt::IfAttrsT attrs;
  attrs.then_branch = then_g.take();
  attrs.else_branch = else_g.take();
  fbt::OperatorAttrsUnion u;
  u.Set(std::move(attrs));
  g.op("branch", OT::If, {static_cast<int32_t>(c)}, {static_cast<int32_t>(y)}, std::move(u));
  g.inputs({x, c});
  g.outputs({y});
  std::string msg = error_of(write_v1(model_of(g)));
  EXPECT_HAS(msg, "bad.rten: node 'branch' (If) then_branch: a graph output is not defined");
  EXPECT_HAS(msg, "node 0 captures 'nowhere', which no enclosing graph defines");
}

TEST(RtenErrors, InputWithoutShape) {
  GraphMaker g;
  uint32_t x = g.value("x", {}, fbt::DataType::Float, /*has_shape=*/false);
  uint32_t y = g.value("y");
  g.op("relu", OT::Relu, {static_cast<int32_t>(x)}, {static_cast<int32_t>(y)});
  g.inputs({x});
  g.outputs({y});
  EXPECT_HAS(error_of(write_v1(model_of(g))), "graph input 'x' has no shape");
}

TEST(RtenErrors, FixedSizeForAnUnknownDim) {
  GraphMaker g;
  uint32_t x = g.value("x", {"batch", "3"}, fbt::DataType::Float);
  uint32_t y = g.value("y");
  g.op("relu", OT::Relu, {static_cast<int32_t>(x)}, {static_cast<int32_t>(y)});
  g.inputs({x});
  g.outputs({y});
  const std::string file = write_v1(model_of(g));
  rten::ImportOptions o;
  o.dim_values["seq"] = 4;
  try {
    rten::import_bytes(file, "dims.rten", o);
    ADD_FAILURE() << "accepted a size for a dim the model does not have";
  } catch (const Error& e) {
    EXPECT_HAS(std::string(e.what()),
               "dims.rten: a size is given for dim 'seq', but no graph "
               "input has a dim of that name (symbolic dims: batch)");
  }
  o.dim_values = {{"batch", 2}};
  Model m = rten::import_bytes(file, "dims.rten", o);
  EXPECT_EQ(m.graph().type(m.graph().inputs[0]).str(), "f32[2,3]");
}

}  // namespace
}  // namespace rlx
