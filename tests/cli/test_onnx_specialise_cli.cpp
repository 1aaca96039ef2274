// ONNX inputs whose values decide shapes, through the CLI: `rlx run | bench | compile` freeze
// such an input to the value --inputs gives (any form, including a folder of ONNX test data) and
// name it on stderr and in --json; the other inputs stay inputs. The model is ONNX's own node
// test test_reshape_reordered_all_dims (tests/data/onnx-node, copied from libonnx-testdata 1.12):
// Reshape(data f32[2,3,4], shape i64[3]), its shape a graph input.
#include <cstring>
#include <iterator>

#include "cli_fixture.h"
#include "rlx/core/safetensors.h"

namespace rlx::cli {
namespace {

using ::testing::Not;

const fs::path kCase = fs::path(RLX_ONNX_NODE_CASES_DIR) / "test_reshape_reordered_all_dims";

std::string file_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// ONNX's expected output: output_0.pb is a TensorProto whose last field is raw_data, 24
// little-endian floats (tag 0x4a, length 0x60, then the 96 bytes), read here without rlx.
std::vector<float> expected_output() {
  const std::string pb = file_bytes(kCase / "test_data_set_0" / "output_0.pb");
  EXPECT_GE(pb.size(), 98u);
  EXPECT_EQ(static_cast<unsigned char>(pb[pb.size() - 98]), 0x4a);
  EXPECT_EQ(static_cast<unsigned char>(pb[pb.size() - 97]), 0x60);
  std::vector<float> values(24);
  std::memcpy(values.data(), pb.data() + pb.size() - 96, 96);
  return values;
}

std::vector<std::string> frozen_inputs(const json::Value& doc) {
  std::vector<std::string> names;
  const json::Value* list = doc.find("frozen_inputs");
  if (list && list->as_array())
    for (const json::Value& v : *list->as_array()) names.push_back(str(&v));
  return names;
}

using OnnxSpecialiseCli = CliTest;

TEST_F(OnnxSpecialiseCli, RunFreezesTheReshapeShapeFromATestDataFolder) {
  const fs::path out = dir_ / "out.safetensors";
  ProcessResult r = rlx({"run", (kCase / "model.onnx").string(), "-t", "cpu", "--inputs",
                         (kCase / "test_data_set_0").string(), "-o", out.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("froze input 'shape'")) << dump(r);
  EXPECT_THAT(r.err, Not(HasSubstr("'data'"))) << dump(r);
  EXPECT_EQ(frozen_inputs(parse_json(r)), std::vector<std::string>{"shape"});
  TensorMap got = read_safetensors(out);
  ASSERT_TRUE(got.count("reshaped")) << dump(r);
  const Tensor& y = got.at("reshaped");
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{4, 2, 3}));
  const std::vector<float> want = expected_output();
  ASSERT_EQ(y.numel(), 24);
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(y.as<float>()[i], want[i]) << "element " << i;
}

// The shape given as JSON numbers (no dtype: whole numbers are offered as i64) and the data as
// 0..23: the output is the data in shape 4x2x3, by hand.
TEST_F(OnnxSpecialiseCli, RunFreezesAShapeGivenAsJsonNumbers) {
  std::string data;
  for (int i = 0; i < 24; ++i) data += (i ? "," : "") + std::to_string(i);
  fs::path in =
      write("in.json", "{\"data\": {\"dtype\": \"f32\", \"shape\": [2, 3, 4], \"data\": [" + data +
                           "]}, \"shape\": [4, 2, 3]}");
  ProcessResult r =
      rlx({"run", (kCase / "model.onnx").string(), "-t", "cpu", "--inputs", in.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("froze input 'shape' to its value from " + in.string()));
  json::Value doc = parse_json(r);
  const json::Value* y = find_named(*doc.find("outputs"), "reshaped");
  ASSERT_TRUE(y) << dump(r);
  const json::Array* shape = y->find("shape")->as_array();
  ASSERT_EQ(shape->size(), 3u);
  EXPECT_EQ(shape->at(0).as_number()->raw, "4");
  EXPECT_EQ(shape->at(1).as_number()->raw, "2");
  // Nested as the shape: values[i][j][k] is element 6i + 3j + k of the data, 0..23.
  const json::Array* values = y->find("values")->as_array();
  ASSERT_EQ(values->size(), 4u);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k)
        EXPECT_EQ(values->at(i).as_array()->at(j).as_array()->at(k).as_number()->raw,
                  std::to_string(6 * i + 3 * j + k));
}

TEST_F(OnnxSpecialiseCli, AShapeInputNotGivenKeepsTheClearError) {
  std::string data;
  for (int i = 0; i < 24; ++i) data += (i ? "," : "") + std::to_string(i);
  fs::path in =
      write("in.json",
            "{\"data\": {\"dtype\": \"f32\", \"shape\": [2, 3, 4], \"data\": [" + data + "]}}");
  ProcessResult r =
      rlx({"run", (kCase / "model.onnx").string(), "-t", "cpu", "--inputs", in.string()});
  EXPECT_NE(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("graph input 'shape'")) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("must be known when the model is compiled")) << dump(r);
  EXPECT_THAT(r.err, Not(HasSubstr("froze"))) << dump(r);
}

TEST_F(OnnxSpecialiseCli, CompileAndBenchFreezeFromTheirInputs) {
  const std::string folder = (kCase / "test_data_set_0").string();
  ProcessResult c = rlx({"compile", (kCase / "model.onnx").string(), "-t", "cpu", "-o",
                         (dir_ / "out").string(), "--inputs", folder, "--json"});
  ASSERT_EQ(c.exit_code, 0) << dump(c);
  EXPECT_THAT(c.err, HasSubstr("froze input 'shape'")) << dump(c);
  EXPECT_EQ(frozen_inputs(parse_json(c)), std::vector<std::string>{"shape"});
  EXPECT_THAT(file_bytes(dir_ / "out" / "manifest.json"), HasSubstr("\"frozen_inputs\""))
      << dump(c);
  // The compiled graph still takes `data` and no longer `shape`.
  EXPECT_THAT(file_bytes(dir_ / "out" / "model.mir"), HasSubstr("%data")) << dump(c);
  EXPECT_THAT(file_bytes(dir_ / "out" / "model.mir"), Not(HasSubstr("%shape:"))) << dump(c);

  ProcessResult b = rlx({"bench", (kCase / "model.onnx").string(), "-t", "cpu", "--inputs", folder,
                         "--warmup", "1", "--runs", "2", "--json"});
  ASSERT_EQ(b.exit_code, 0) << dump(b);
  EXPECT_THAT(b.err, HasSubstr("froze input 'shape'")) << dump(b);
  json::Value doc = parse_json(b);
  EXPECT_EQ(frozen_inputs(doc), std::vector<std::string>{"shape"});
  EXPECT_EQ(str(doc.find("inputs")->find("data")), "f32[2,3,4]") << dump(b);
}

TEST_F(OnnxSpecialiseCli, AFolderOfInputsNeedsAnImporterThatReadsThem) {
  fs::create_directories(dir_ / "data");
  ProcessResult r =
      rlx({"run", small_model().string(), "-t", "cpu", "--inputs", (dir_ / "data").string()});
  EXPECT_NE(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("--inputs " + (dir_ / "data").string())) << dump(r);
  // A folder with a file for an input the model does not have.
  fs::copy(kCase / "test_data_set_0", dir_ / "extra");
  fs::copy_file(kCase / "test_data_set_0" / "input_1.pb", dir_ / "extra" / "input_2.pb");
  r = rlx(
      {"run", (kCase / "model.onnx").string(), "-t", "cpu", "--inputs", (dir_ / "extra").string()});
  EXPECT_NE(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("the model has 2 inputs, so no file input_2.pb")) << dump(r);
}

}  // namespace
}  // namespace rlx::cli
