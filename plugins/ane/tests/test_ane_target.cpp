// The ane target without CoreML: its status and refusals, the choices it takes, and the files of
// the package it writes, against the format's documented layout (hand-computed bytes).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "ane_target.h"
#include "blob_storage.h"
#include "rlx/core/error.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/runtime.h"
#include "test_support.h"

namespace rlx {
namespace {

namespace fs = std::filesystem;

std::shared_ptr<Target> ane() {
  static auto target = std::make_shared<ane::AneTarget>();
  return target;
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

template <typename T>
T at(const std::string& bytes, size_t offset) {
  T v;
  std::memcpy(&v, bytes.data() + offset, sizeof v);
  return v;
}

TEST(AneTarget, IsCodegenOnlyAndSaysWhy) {
  Verdict v = test::target_named("ane")->can_execute();
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("CoreML runs only on Apple platforms"), std::string::npos) << v.reason;
  EXPECT_NE(v.reason.find("rlx compile --target ane -o DIR"), std::string::npos);
}

TEST(AneTarget, CompilingToRunRefusesSayingWhy) {
  const char* ir = R"(graph @t(%x: f32[4]) {
  %y = exp(%x) : f32[4]
  return %y
}
)";
  try {
    test::run_text(ir, {{"x", test::f32({4}, {1, 2, 3, 4})}}, ane());
    FAIL() << "ane has no CoreML here";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ane cannot run here: CoreML runs only on Apple"),
              std::string::npos)
        << e.what();
  }
}

// What MIL cannot say with rlx's meaning is refused by name, never computed differently.
TEST(AneTarget, RefusesWhatMilCannotSayByName) {
  auto refusal = [](const std::string& body, const std::string& args) {
    return test::compile_error("graph @t(" + args + ") {\n" + body + "}\n", ane());
  };
  EXPECT_NE(refusal("  %y = and(%a, %a) : i32[4]\n  return %y\n", "%a: i32[4]")
                .find("logical operations on bool only"),
            std::string::npos);
  EXPECT_NE(refusal("  %y = convert(%x) {dtype = i32} : i32[4]\n  return %y\n", "%x: f32[4]")
                .find("rlx's convert saturates"),
            std::string::npos);
  EXPECT_NE(refusal("  %y = exp(%x) : f64[4]\n  return %y\n", "%x: f64[4]")
                .find("CoreML's ML Program has no f64"),
            std::string::npos);
  EXPECT_NE(refusal("  %y = add(%x, %x) : i8[4]\n  return %y\n", "%x: i8[4]")
                .find("cannot compute the i8 values of add"),
            std::string::npos);
  const std::string message = refusal("  %y = add(%x, %x) : bf16[4]\n  return %y\n", "%x: bf16[4]");
  EXPECT_NE(message.find("%y"), std::string::npos) << "the error names the node: " << message;
}

TEST(AneTarget, TakesDeploymentTargetsAndComputeUnits) {
  ane::AneTarget t;
  EXPECT_EQ(t.options().deployment.opset, "CoreML7");  // iOS17 / macOS14 by default
  EXPECT_EQ(t.select("macos15"), nullptr);
  EXPECT_EQ(t.options().deployment.spec_version, 9);
  EXPECT_EQ(t.options().deployment.opset, "CoreML8");
  EXPECT_EQ(t.select("CPU_AND_NE"), nullptr);
  EXPECT_EQ(t.options().compute_units, "CPU_AND_NE");
  const char* why = t.select("ios9");
  ASSERT_NE(why, nullptr);
  EXPECT_NE(std::string(why).find("ios15"), std::string::npos) << why;
}

// weight.bin: a 64-byte header (count, version 2), then per blob a 64-byte record (sentinel
// 0xDEADBEEF, type, size, data offset) with its data at the next 64-byte boundary.
TEST(AneTarget, WeightsFileFollowsTheBlobStorageLayout) {
  ane::BlobStorage blobs;
  const float a[3] = {1, 2, 3};
  const int32_t b[1] = {7};
  EXPECT_EQ(blobs.add(ane::BlobType::kF32, a, sizeof a), 64u);
  EXPECT_EQ(blobs.add(ane::BlobType::kI32, b, sizeof b), 192u);
  const fs::path file = fs::temp_directory_path() / "rlx_ane_blobs.bin";
  blobs.write(file);
  const std::string bytes = read_file(file);
  fs::remove(file);
  ASSERT_EQ(bytes.size(), 256u + 4u);
  EXPECT_EQ(at<uint32_t>(bytes, 0), 2u);  // count
  EXPECT_EQ(at<uint32_t>(bytes, 4), 2u);  // version
  EXPECT_EQ(at<uint32_t>(bytes, 64), 0xDEADBEEFu);
  EXPECT_EQ(at<uint32_t>(bytes, 68), 2u);  // float32
  EXPECT_EQ(at<uint64_t>(bytes, 72), 12u);
  EXPECT_EQ(at<uint64_t>(bytes, 80), 128u);
  EXPECT_EQ(at<float>(bytes, 136), 3.0f);
  EXPECT_EQ(at<uint32_t>(bytes, 196), 14u);  // int32
  EXPECT_EQ(at<uint64_t>(bytes, 208), 256u);
  EXPECT_EQ(at<int32_t>(bytes, 256), 7);
}

TEST(AneTarget, WritesAPackageAndItsIoLayout) {
  const char* ir = R"(graph @t(%ids: i64[2, 3], %x: f32[2, 3]) {
  %w = constant() {value = dense<f32[2,3]: [1, 2, 3, 4, 5, 6]>} : f32[2, 3]
  %y = add(%x, %w) : f32[2, 3]
  %m = gt(%y, %x) : bool[2, 3]
  return %y, %m, %ids
}
)";
  const fs::path dir = fs::temp_directory_path() / "rlx_ane_package";
  fs::remove_all(dir);
  CompiledModel model = Session(ane()).compile(parse_graph(ir));
  const std::vector<Artifact> files = ane()->emit_mir(model.mir_for({}), dir);
  EXPECT_FALSE(files.empty());
  const fs::path data = dir / "model.mlpackage" / "Data" / "com.apple.CoreML";
  EXPECT_TRUE(fs::exists(data / "model.mlmodel"));
  EXPECT_TRUE(fs::exists(data / "weights" / "weight.bin"));
  const std::string manifest = read_file(dir / "model.mlpackage" / "Manifest.json");
  EXPECT_NE(manifest.find("\"rootModelIdentifier\""), std::string::npos);
  EXPECT_NE(manifest.find("com.apple.CoreML/model.mlmodel"), std::string::npos);
  const std::string io = read_file(dir / "io.json");
  EXPECT_NE(io.find("i64 as int32 word pairs"), std::string::npos) << io;
  EXPECT_NE(io.find("bool as int32 0/1"), std::string::npos) << io;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace rlx
