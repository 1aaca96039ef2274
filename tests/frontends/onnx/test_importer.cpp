// The ONNX importer on small models built in code: names, symbolic dims, shape-subgraph folding,
// external data and the errors for what it cannot read.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <onnx/onnx_pb.h>

#include <complex>
#include <fstream>

#include "rlx/core/error.h"
#include "rlx/core/frozen_inputs.h"
#include "rlx/core/runtime.h"
#include "rlx/onnx/import.h"
#include "rlx/registry/registry.h"
#include "onnx_model_maker.h"
#include "test_support.h"

namespace rlx {
namespace {

namespace fs = std::filesystem;
using ::onnx::TensorProto;
using test::ModelMaker;

Tensor iota_f32(std::vector<int64_t> shape) {
  Tensor t(DType::kF32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.as<float>()[i] = static_cast<float>(i);
  return t;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(OnnxImporter, KeepsValueNamesAndNodeNamesAsLocations) {
  ModelMaker mm;
  mm.input("x", TensorProto::FLOAT, {"2", "3"});
  mm.input("y", TensorProto::FLOAT, {"3"});
  mm.node("Add", {"x", "y"}, {"sum"}, "the_add");
  mm.node("Relu", {"sum"}, {"out"}, "the_relu");
  mm.output("out");
  Graph g = mm.import().graph();
  EXPECT_EQ(g.values[g.outputs[0]].name, "out");
  ASSERT_TRUE(g.find_value("sum"));
  bool found = false;
  for (const Node& n : g.nodes) found = found || n.loc == "the_relu";
  EXPECT_TRUE(found);
}

TEST(OnnxImporter, DynamicAxesBecomeSymbolsNamedOrGenerated) {
  ModelMaker mm;
  mm.input("x", TensorProto::FLOAT, {"batch", "?", "4"});
  mm.node("Relu", {"x"}, {"y"});
  mm.output("y");
  Graph g = mm.import().graph();
  EXPECT_EQ(g.type(g.inputs[0]).str(), "f32[batch,x_d1,4]");
  EXPECT_EQ(g.type(g.outputs[0]).str(), "f32[batch,x_d1,4]");
}

TEST(OnnxImporter, FoldsShapeSubgraphsWithSymbolicDims) {
  // y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [2, -1])): what torch exports for
  // x.view(x.size(0), 2, -1).
  ModelMaker mm;
  mm.input("x", TensorProto::FLOAT, {"batch", "seq", "4"});
  mm.init_i64("zero", {0});
  mm.init_i64("tail", {2, -1});
  mm.node("Shape", {"x"}, {"shape"});
  auto* gather = mm.node("Gather", {"shape", "zero"}, {"b"});
  ModelMaker::attr_i(gather, "axis", 0);
  auto* cat = mm.node("Concat", {"b", "tail"}, {"target"});
  ModelMaker::attr_i(cat, "axis", 0);
  mm.node("Reshape", {"x", "target"}, {"y"});
  mm.output("y");
  Graph g = mm.import().graph();
  EXPECT_EQ(g.type(g.outputs[0]).str(), "f32[batch,2,2*seq]");
  for (const Node& n : g.nodes) EXPECT_NE(n.op, "gather") << "the shape arithmetic was not folded";
  Session s(test::cpu_target());
  auto out = s.compile(g).run({{"x", iota_f32({3, 5, 4})}});
  EXPECT_EQ(out.at("y").shape(), (std::vector<int64_t>{3, 2, 10}));
  EXPECT_EQ(out.at("y").as<float>()[59], 59.0f);
}

// The ONNX spec's Hamming window, alpha = 25/46 and beta = 21/46 with pi itself, by hand:
// periodic, size 4: 25/46 - 21/46 cos(2 pi i / 4) = 4/46, 25/46, 1, 25/46. (onnx.reference writes
// pi as 3.1415, which puts the second element 2e-5 lower.)
TEST(OnnxImporter, HammingWindowFollowsTheSpec) {
  ModelMaker mm;
  mm.input("x", TensorProto::FLOAT, {"4"});
  mm.init_i64("size", {4});
  mm.node("HammingWindow", {"size"}, {"w"});
  mm.node("Add", {"x", "w"}, {"y"});
  mm.output("y");
  Session s(test::cpu_target());
  auto out = s.compile(mm.import().graph()).run({{"x", Tensor::from<float>(DType::kF32, {4}, {0, 0, 0, 0})}});
  const std::vector<double> want = {4.0 / 46, 25.0 / 46, 1.0, 25.0 / 46};
  std::vector<double> got = test::values(out.at("y"));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-7) << i;
}

TEST(OnnxImporter, FlattenOfSymbolicDimsRunsForEveryBinding) {
  ModelMaker mm;
  mm.input("x", TensorProto::FLOAT, {"batch", "seq", "4"});
  auto* f = mm.node("Flatten", {"x"}, {"flat"});
  ModelMaker::attr_i(f, "axis", 2);
  mm.node("Relu", {"flat"}, {"y"});
  mm.output("y");
  Graph g = mm.import().graph();
  EXPECT_EQ(g.type(g.outputs[0]).str(), "f32[batch*seq,4]");
  Session s(test::cpu_target());
  CompiledModel m = s.compile(g);
  EXPECT_EQ(m.run({{"x", iota_f32({2, 3, 4})}}).at("y").shape(), (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(m.run({{"x", iota_f32({1, 7, 4})}}).at("y").shape(), (std::vector<int64_t>{7, 4}));
}

// UINT32 and UINT64 initializers in uint64_data, UINT16 in int32_data (the typed fields ONNX
// uses when raw_data is absent); arithmetic wraps modulo 2^32 / 2^16 (hand-computed values).
TEST(OnnxImporter, UnsignedInitializersFromTypedFieldsComputeModularly) {
  ModelMaker mm;
  mm.input("x", TensorProto::UINT32, {"3"});
  mm.input("h", TensorProto::UINT16, {"2"});
  auto* w = mm.g->add_initializer();
  w->set_name("w");
  w->set_data_type(TensorProto::UINT32);
  w->add_dims(3);
  for (uint64_t v : {4000000000ull, 1ull, 7ull}) w->add_uint64_data(v);
  auto* k = mm.g->add_initializer();
  k->set_name("k");
  k->set_data_type(TensorProto::UINT16);
  k->add_dims(2);
  for (int32_t v : {65535, 3}) k->add_int32_data(v);
  auto* big = mm.g->add_initializer();
  big->set_name("big");
  big->set_data_type(TensorProto::UINT64);
  big->add_dims(1);
  big->add_uint64_data(18446744073709551615ull);
  mm.node("Add", {"x", "w"}, {"y"});
  mm.node("Add", {"h", "k"}, {"z"});
  mm.node("Identity", {"big"}, {"u"});
  mm.output("y");
  mm.output("z");
  mm.output("u");
  Graph g = mm.import().graph();
  Session s(test::cpu_target());
  NamedTensors out = s.compile(g).run(
      {{"x", Tensor::from<uint32_t>(DType::kU32, {3}, {500000000u, 2u, 3u})},
       {"h", Tensor::from<uint16_t>(DType::kU16, {2}, {2, 4})}});
  const uint32_t* y = out.at("y").as<uint32_t>();
  EXPECT_EQ(out.at("y").dtype(), DType::kU32);
  EXPECT_EQ(y[0], 205032704u);  // 4.5e9 - 2^32
  EXPECT_EQ(y[1], 3u);
  EXPECT_EQ(y[2], 10u);
  const uint16_t* z = out.at("z").as<uint16_t>();
  EXPECT_EQ(z[0], 1u);  // 65537 - 2^16
  EXPECT_EQ(z[1], 7u);
  EXPECT_EQ(out.at("u").as<uint64_t>()[0], 18446744073709551615ull);  // moved bit-exactly
}

TEST(OnnxImporter, ErrorsNameFileNodeAndOperator) {
  ModelMaker mm;
  mm.input("x", TensorProto::FLOAT, {"2"});
  mm.node("NoSuchOp", {"x"}, {"y"}, "weird");
  mm.output("y");
  std::string e = error_of([&] { mm.import(); });
  EXPECT_NE(e.find("test.onnx"), std::string::npos) << e;
  EXPECT_NE(e.find("node 'weird' (NoSuchOp)"), std::string::npos) << e;
  EXPECT_NE(e.find("not supported"), std::string::npos) << e;
}

// A graph output no node produces is refused naming the file and the output (it was "value 'z' is
// used before any node..." with no file).
TEST(OnnxImporter, AnOutputNeverProducedNamesTheFileAndTheOutput) {
  ModelMaker mm;
  mm.input("x", TensorProto::FLOAT, {"2"});
  mm.node("Relu", {"x"}, {"y"});
  mm.output("y");
  mm.output("z");
  try {
    mm.import();
    FAIL() << "accepted an output nothing produces";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUser) << e.what();
    EXPECT_EQ(std::string(e.what()),
              "test.onnx: graph output 'z' is never produced: no node, graph input or initializer "
              "of the model defines it");
  }
}

// Found by onnx_fuzz: the axis was checked against operand 0's rank only, and a lower-rank
// operand was then indexed past its last dim (an internal error instead of a user error).
TEST(OnnxImporter, ConcatOfDifferentRanksIsAUserError) {
  ModelMaker mm;
  mm.input("a", TensorProto::FLOAT, {"2", "3", "4"});
  mm.input("b", TensorProto::FLOAT, {"2", "3"});
  ModelMaker::attr_i(mm.node("Concat", {"a", "b"}, {"y"}, "cat"), "axis", 2);
  mm.output("y");
  try {
    mm.import();
    FAIL() << "accepted a Concat of rank 3 and rank 2";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUser) << e.what();
    EXPECT_NE(std::string(e.what()).find("operand 1 has rank 2, operand 0 rank 3"), std::string::npos)
        << e.what();
  }
}

// Found by rten_fuzz: Concat of rank-0 operands passed the axis check (axis 0 of max(rank, 1))
// and then read dim 0 of a scalar, an internal error.
TEST(OnnxImporter, ConcatOfScalarsIsAUserError) {
  ModelMaker mm;
  mm.input("a", TensorProto::FLOAT, {});
  mm.input("b", TensorProto::FLOAT, {});
  ModelMaker::attr_i(mm.node("Concat", {"a", "b"}, {"y"}, "cat"), "axis", 0);
  mm.output("y");
  std::string e = error_of([&] { mm.import(); });
  EXPECT_NE(e.find("cannot concatenate scalars"), std::string::npos) << e;
}

// Found by rten_fuzz: Expand of a host-known integer tensor to a static shape was folded on the
// host at any size, so [2^19, 2^19, 2] asked for a vector of 2^39 entries. Only small results fold; this
// one stays an expand in the graph (whose size the runtime checks before allocating).
TEST(OnnxImporter, ExpandToAHugeShapeIsNotFoldedOnTheHost) {
  ModelMaker mm;
  mm.init_i64("x", {1, 2});
  mm.init_i64("shape", {1 << 19, 1 << 19, 2});
  mm.node("Expand", {"x", "shape"}, {"y"});
  mm.output("y");
  Graph g = mm.import().graph();
  EXPECT_EQ(g.type(g.outputs[0]).str(), "i64[524288,524288,2]");
}

// An i64 constant near 2^63 read as a list of ints (here Pad's axes) is read exactly and refused as
// an axis out of range; read through a double first it was undefined behaviour (UBSan, found by
// the fuzzer; tests/fuzz/corpus/onnx/ubsan-need-ints.onnx is the original input).
TEST(OnnxImporter, IntListsNearTwoToTheSixtyThreeAreReadExactly) {
  ModelMaker mm(18);  // Pad takes its axes as an input from opset 18
  mm.input("x", TensorProto::FLOAT, {"2", "3"});
  mm.init_i64("pads", {0, 0, 1, 1});
  mm.init_i64("axes", {INT64_MAX, 1});
  mm.node("Pad", {"x", "pads", "", "axes"}, {"y"});
  mm.output("y");
  std::string e = error_of([&] { mm.import(); });
  EXPECT_NE(e.find("axis 9223372036854775807 is out of range for rank 2"), std::string::npos) << e;
}

TEST(OnnxImporter, RejectsBytesThatAreNotAModel) {
  std::string e = error_of([] { onnx::import_bytes("\x0a\xff\xff\xff", "bad.onnx", "."); });
  EXPECT_NE(e.find("bad.onnx: not a valid ONNX model"), std::string::npos) << e;
}

TEST(OnnxImporter, RejectsInconsistentInitializers) {
  ModelMaker mm;
  mm.input("x", TensorProto::FLOAT, {"2"});
  auto* w = mm.init_f32("w", {2}, {1, 2});
  w->set_raw_data("abc");  // 3 bytes for 2 floats
  mm.node("Add", {"x", "w"}, {"y"});
  mm.output("y");
  std::string e = error_of([&] { mm.import(); });
  EXPECT_NE(e.find("initializer 'w': raw_data holds 3 bytes"), std::string::npos) << e;
}

TEST(OnnxImporter, ReadsExternalDataRelativeToTheModel) {
  fs::path dir = fs::temp_directory_path() / ("rlx_onnx_ext_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::vector<float> w{1, 2, 3, 4};
  {
    std::ofstream f(dir / "weights.bin", std::ios::binary);
    f.write("pad!", 4);
    f.write(reinterpret_cast<const char*>(w.data()), 16);
  }
  ModelMaker mm;
  mm.input("x", TensorProto::FLOAT, {"4"});
  auto* t = mm.g->add_initializer();
  t->set_name("w");
  t->set_data_type(TensorProto::FLOAT);
  t->add_dims(4);
  t->set_data_location(TensorProto::EXTERNAL);
  auto kv = [&](const char* k, const char* v) {
    auto* e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  kv("location", "weights.bin");
  kv("offset", "4");
  kv("length", "16");
  mm.node("Mul", {"x", "w"}, {"y"});
  mm.output("y");
  {
    std::ofstream f(dir / "model.onnx", std::ios::binary);
    mm.m.SerializeToOstream(&f);
  }
  Model model = onnx::import_file(dir / "model.onnx");
  Session s(test::cpu_target());
  Tensor x = Tensor::from<float>(DType::kF32, {4}, {1, 1, 1, 2});
  Tensor y = s.compile(model.graph()).run({{"x", x}}).at("y");
  EXPECT_EQ(test::values(y), (std::vector<double>{1, 2, 3, 8}));

  t->mutable_external_data(0)->set_value("../weights.bin");
  std::string e = error_of([&] { mm.import({}, dir); });
  EXPECT_NE(e.find("leaves the model's folder"), std::string::npos) << e;
  t->mutable_external_data(0)->set_value("weights.bin");
  t->mutable_external_data(1)->set_value("8");
  e = error_of([&] { mm.import({}, dir); });
  EXPECT_NE(e.find("lies beyond the end"), std::string::npos) << e;
  fs::remove_all(dir);
}

// External data is untrusted: a symlink out of the model's folder would put another file's
// bytes in a tensor, a FIFO would block open() forever. Links inside the folder still work.
TEST(OnnxImporter, ExternalDataMustBeARegularFileInsideTheModelsFolder) {
  test::TempDir outside, dir;
  std::vector<float> w{1, 2, 3, 4};
  std::ofstream(outside.path() / "secret.bin", std::ios::binary).write(reinterpret_cast<const char*>(w.data()), 16);
  std::ofstream(dir.path() / "real.bin", std::ios::binary).write(reinterpret_cast<const char*>(w.data()), 16);
  fs::create_symlink(outside.path() / "secret.bin", dir.path() / "link_out.bin");
  fs::create_symlink("real.bin", dir.path() / "link_in.bin");
  ASSERT_EQ(::mkfifo((dir.path() / "fifo").c_str(), 0600), 0);
  ModelMaker mm;
  mm.input("x", TensorProto::FLOAT, {"4"});
  auto* t = mm.g->add_initializer();
  t->set_name("w");
  t->set_data_type(TensorProto::FLOAT);
  t->add_dims(4);
  t->set_data_location(TensorProto::EXTERNAL);
  auto* location = t->add_external_data();
  location->set_key("location");
  mm.node("Mul", {"x", "w"}, {"y"});
  mm.output("y");

  location->set_value("link_out.bin");
  std::string e = error_of([&] { mm.import({}, dir.path()); });
  EXPECT_NE(e.find("outside the model's folder"), std::string::npos) << e;
  EXPECT_NE(e.find("link_out.bin"), std::string::npos) << e;
  location->set_value("fifo");
  e = error_of([&] { mm.import({}, dir.path()); });
  EXPECT_NE(e.find("not a regular file"), std::string::npos) << e;
  location->set_value("link_in.bin");
  EXPECT_EQ(error_of([&] { mm.import({}, dir.path()); }), "");
}

TEST(OnnxImporter, ShapeFromARuntimeInputNeedsItsValue) {
  ModelMaker mm;
  mm.input("x", TensorProto::FLOAT, {"6"});
  mm.input("shape", TensorProto::INT64, {"2"});
  mm.node("Reshape", {"x", "shape"}, {"y"}, "r");
  mm.output("y");
  try {
    mm.import();
    FAIL() << "expected NeedsInputValues";
  } catch (const onnx::NeedsInputValues& e) {
    EXPECT_EQ(e.inputs(), std::vector<std::string>{"shape"});
    EXPECT_NE(std::string(e.what()).find("node 'r' (Reshape)"), std::string::npos) << e.what();
  }
  // Values are offered for both inputs; only the one the Reshape needs is frozen.
  onnx::ImportOptions o;
  o.input_values["shape"] = Tensor::from<int64_t>(DType::kI64, {2}, {2, 3});
  o.input_values["x"] = Tensor::from<float>(DType::kF32, {6}, {1, 2, 3, 4, 5, 6});
  Model m = mm.import(o);
  const Graph& g = m.graph();
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.values[g.inputs[0]].name, "x");
  EXPECT_EQ(g.type(g.outputs[0]).str(), "f32[2,3]");
  EXPECT_EQ(m.metadata.at(kFrozenInputsKey), "shape");
}

TEST(OnnxImporter, OutputThatIsAnInputKeepsItsOwnName) {
  ModelMaker mm;
  mm.input("x", TensorProto::FLOAT, {"2"});
  mm.node("Identity", {"x"}, {"y"});
  mm.output("y");
  Graph g = mm.import().graph();
  Session s(test::cpu_target());
  auto out = s.compile(g).run({{"x", Tensor::from<float>(DType::kF32, {2}, {1, 2})}});
  EXPECT_EQ(test::values(out.at("y")), (std::vector<double>{1, 2}));
}

// complex64 in and out: an input and an initializer (float pairs in raw_data) moved by ops whose
// ONNX type constraints include complex types.
TEST(OnnxImporter, Complex64TensorsComeInAndGoOut) {
  ModelMaker mm;
  mm.input("x", TensorProto::COMPLEX64, {"2", "2"});
  auto* w = mm.g->add_initializer();
  w->set_name("w");
  w->set_data_type(TensorProto::COMPLEX64);
  w->add_dims(2), w->add_dims(1);
  const std::vector<float> wv = {5, -1, 0.5f, 2};  // 5-1i, 0.5+2i
  w->set_raw_data(std::string(reinterpret_cast<const char*>(wv.data()), wv.size() * sizeof(float)));
  auto* t = mm.node("Transpose", {"x"}, {"xt"});
  auto* perm = t->add_attribute();
  perm->set_name("perm");
  perm->set_type(::onnx::AttributeProto::INTS);
  perm->add_ints(1), perm->add_ints(0);
  auto* c = mm.node("Concat", {"xt", "w"}, {"y"});
  ModelMaker::attr_i(c, "axis", 1);
  mm.output("y");
  Graph g = mm.import().graph();
  Session s(test::cpu_target());
  Tensor x(DType::kC64, {2, 2});
  const std::vector<std::complex<float>> xv = {{1, 2}, {3, 4}, {5, 6}, {7, 8}};
  std::copy(xv.begin(), xv.end(), x.as<std::complex<float>>());
  auto out = s.compile(g).run({{"x", x}});
  const Tensor& y = out.at("y");
  ASSERT_EQ(y.dtype(), DType::kC64);
  ASSERT_EQ(y.shape(), (std::vector<int64_t>{2, 3}));
  const std::vector<std::complex<float>> want = {{1, 2}, {5, 6}, {5, -1}, {3, 4}, {7, 8}, {0.5f, 2}};
  EXPECT_EQ(std::vector<std::complex<float>>(y.as<std::complex<float>>(), y.as<std::complex<float>>() + 6),
            want);
}

// 5000 Relu nodes in a row fuse into one chain; cut into kernels of a bounded size, the cpu target
// compiles it in seconds (one C function of it took cc -O3 over a minute) and computes relu.
TEST(OnnxImporter, AFiveThousandReluChainCompilesAndRuns) {
  ModelMaker mm;
  mm.input("x", TensorProto::FLOAT, {"6"});
  const int n = 5000;
  for (int i = 0; i < n; ++i)
    mm.node("Relu", {i ? "r" + std::to_string(i - 1) : "x"},
            {i == n - 1 ? "y" : "r" + std::to_string(i)});
  mm.output("y");
  Graph g = mm.import().graph();
  Session s(test::cpu_target());
  auto out = s.compile(g).run(
      {{"x", Tensor::from<float>(DType::kF32, {6}, {-2.5f, -1, -0.0f, 0.25f, 3, 1e30f})}});
  EXPECT_EQ(test::values(out.at("y")), (std::vector<double>{0, 0, 0, 0.25, 3, 1e30f}));
}

TEST(OnnxImporter, PluginIsFoundByExtension) {
  registry::Options o;
  o.plugin_paths = {RLX_TEST_PLUGIN_DIR};
  o.build_legality = false;
  // Kept for the life of the process (see test_bert_parity.cpp).
  static const registry::Registry* reg = new registry::Registry(registry::Registry::discover(o));
  auto importer = reg->importer_for("some/model.onnx");
  ASSERT_TRUE(importer);
  EXPECT_EQ(importer->name(), "onnx");
}

// Shapes in the model larger than the machine's memory (issue 24) are the user's error naming the
// ONNX node and the type it asks for, before anything is allocated.
TEST(OnnxImporter, ShapesLargerThanMemoryNameTheNode) {
  auto run_error = [](const ModelMaker& mm, const std::map<std::string, Tensor>& in) {
    Session s(test::cpu_target());
    CompiledModel m = s.compile(mm.import().graph());
    try {
      m.run(in);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUser) << e.what();
      return std::string(e.what());
    }
    ADD_FAILURE() << "ran";
    return std::string();
  };
  ModelMaker cos;
  cos.init_i64("shape", {int64_t{1} << 40});
  cos.node("ConstantOfShape", {"shape"}, {"y"}, "huge");
  cos.output("y");
  // 2^40 f32 values: 4 TiB.
  std::string e = run_error(cos, {});
  EXPECT_NE(e.find("'huge') would produce f32[1099511627776]: 4.0 TiB, more than this "
                   "machine's"),
            std::string::npos)
      << e;

  ModelMaker expand;
  expand.input("x", TensorProto::FLOAT, {"1"});
  expand.init_i64("shape", {int64_t{1} << 20, int64_t{1} << 20});
  expand.node("Expand", {"x", "shape"}, {"y"}, "wide");
  expand.output("y");
  e = run_error(expand, {{"x", iota_f32({1})}});
  EXPECT_NE(e.find("'wide') would produce f32[1048576,1048576]: 4.0 TiB"), std::string::npos)
      << e;
}

}  // namespace
}  // namespace rlx
