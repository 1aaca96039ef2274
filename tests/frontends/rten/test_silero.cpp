// silero_vad.rten (rten-convert's output for silero_vad.onnx) against ONNX Runtime's outputs for
// the ONNX file (silero_reference.safetensors, written by tools/make_rten_reference.py), against
// rlx's own import of the ONNX file, and as a V1 file built from the V2 one.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "rlx/core/runtime.h"
#include "rlx/core/safetensors.h"
#include "rlx/onnx/import.h"
#include "rlx/rten/import.h"
#include "rten_maker.h"
#include "test_support.h"

namespace rlx {
namespace {

namespace fs = std::filesystem;

fs::path conformance_dir() {
  return RLX_RTEN_CONFORMANCE_DIR;  // tests/data/rten
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

const TensorMap& reference() {
  static const TensorMap ref =
      read_safetensors(fs::path(RLX_RTEN_TEST_DIR) / "silero_reference.safetensors");
  return ref;
}

// The VAD's reflect Pad and strided Conv make the frame count `sequence / 64 - 1`, which rlx
// cannot keep symbolic: the chunk length is fixed at import; the batch stays symbolic.
rten::ImportOptions chunk_of_512() {
  rten::ImportOptions o;
  o.dim_values["sequence"] = 512;
  return o;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  if (a.shape() != b.shape()) return INFINITY;
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    worst = std::max(worst, std::fabs(a.scalar_at(i) - b.scalar_at(i)));
  return worst;
}

const char* kCases[] = {"b1_sr16000", "b1_sr8000", "b2_sr16000", "b2_sr8000"};

// sr is int64 in ONNX, int32 in rten (its converter narrows every integer).
NamedTensors inputs_for(const std::string& c, DType sr_type) {
  const TensorMap& ref = reference();
  Tensor sr(sr_type, {});
  if (sr_type == DType::kI32)
    sr.as<int32_t>()[0] = static_cast<int32_t>(ref.at(c + ".sr").as<int64_t>()[0]);
  else
    sr = ref.at(c + ".sr");
  return {{"input", ref.at(c + ".input")},
          {"sr", sr},
          {"h", ref.at(c + ".h")},
          {"c", ref.at(c + ".c")}};
}

TEST(Silero, MatchesOnnxRuntimeOnTheOnnxFile) {
  Model model = rten::import_file(conformance_dir() / "silero_vad.rten", chunk_of_512());
  const Graph& g = model.graph();
  ASSERT_EQ(g.inputs.size(), 4u);
  EXPECT_EQ(g.type(g.inputs[0]).str(), "f32[batch,512]");
  EXPECT_EQ(g.type(g.inputs[1]).str(), "i32[]");  // inferred: sr meets an int32 constant
  EXPECT_EQ(g.type(g.inputs[2]).str(), "f32[2,batch,64]");
  EXPECT_NE(model.metadata.at("rten.inferred_input_dtypes").find("sr: i32"), std::string::npos);
  EXPECT_EQ(model.metadata.at("rten.onnx_hash"),
            "a35ebf52fd3ce5f1469b2a36158dba761bc47b973ea3382b3186ca15b1f5af28");
  Session s(test::cpu_target());
  CompiledModel m = s.compile(g);
  for (const char* c : kCases) {
    NamedTensors out = m.run(inputs_for(c, DType::kI32));
    for (const char* name : {"output", "hn", "cn"}) {
      double err = max_abs_diff(out.at(name), reference().at(std::string(c) + "." + name));
      std::printf("silero %s %s: max abs error vs ONNX Runtime %.3g\n", c, name, err);
      EXPECT_LE(err, 2e-5) << c << " " << name;
    }
  }
}

TEST(Silero, MatchesRlxOnnxImportOfTheSameModel) {
  Model rten_model = rten::import_file(conformance_dir() / "silero_vad.rten", chunk_of_512());
  Model onnx_model = onnx::import_file(conformance_dir() / "silero_vad.onnx", chunk_of_512());
  Session s(test::cpu_target());
  CompiledModel a = s.compile(rten_model.graph());
  CompiledModel b = s.compile(onnx_model.graph());
  for (const char* c : kCases) {
    NamedTensors x = a.run(inputs_for(c, DType::kI32));
    NamedTensors y = b.run(inputs_for(c, DType::kI64));
    for (const char* name : {"output", "hn", "cn"}) {
      double err = max_abs_diff(x.at(name), y.at(name));
      EXPECT_LE(err, 1e-6) << c << " " << name;
      // Both against ONNX Runtime too, so neither import can drift along with the other.
      EXPECT_LE(max_abs_diff(y.at(name), reference().at(std::string(c) + "." + name)), 2e-5);
    }
  }
}

TEST(Silero, V1FileGivesTheSameOutputsAsV2) {
  std::string v2 = read_all(conformance_dir() / "silero_vad.rten");
  // V1 keeps every tensor inline in the FlatBuffers model; the 1.8 MB of weights fit easily.
  std::string v1 = rten::test::write_v1(rten::test::read_inline(v2));
  ASSERT_NE(v1.substr(0, 4), "RTEN");
  Model m1 = rten::import_bytes(v1, "silero_v1.rten", chunk_of_512());
  Model m2 = rten::import_bytes(v2, "silero_v2.rten", chunk_of_512());
  EXPECT_EQ(m1.metadata.at("rten.format_version"), "1");
  EXPECT_EQ(m2.metadata.at("rten.format_version"), "2");
  Session s(test::cpu_target());
  NamedTensors x = s.compile(m1.graph()).run(inputs_for("b1_sr16000", DType::kI32));
  NamedTensors y = s.compile(m2.graph()).run(inputs_for("b1_sr16000", DType::kI32));
  for (const char* name : {"output", "hn", "cn"})
    EXPECT_EQ(max_abs_diff(x.at(name), y.at(name)), 0);
}

TEST(Silero, SymbolicSequenceIsRefusedWithTheReason) {
  // Without a chunk length the importer must say which node needs it, not crash or guess.
  try {
    rten::import_file(conformance_dir() / "silero_vad.rten");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("silero_vad.rten"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Pad"), std::string::npos) << msg;
    EXPECT_NE(msg.find("symbolic"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace rlx
