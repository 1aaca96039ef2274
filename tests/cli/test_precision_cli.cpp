// `--precision`: explain lists what the policy changed, run keeps the f32 interface, and a wrong
// mode or a model with nothing to narrow are user errors that say what to do.
#include "cli_fixture.h"
#include "rlx/core/safetensors.h"

namespace rlx::cli {
namespace {

const std::string kQwen3 = std::string(RLX_FIXTURES_DIR) + "/qwen3-tiny";

TEST_F(CliTest, ExplainWithPrecisionListsNarrowedOpsWeightsAndConverts) {
  ProcessResult r = rlx({"explain", kQwen3, "--target", "cpu", "--precision", "amp-bf16", "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  json::Value doc = parse_json(r);
  const json::Value* p = doc.find("precision");
  ASSERT_TRUE(p) << dump(r);
  EXPECT_EQ(str(p->find("mode")), "amp-bf16");
  ASSERT_TRUE(p->find("narrowed") && p->find("narrowed")->as_array());
  EXPECT_FALSE(p->find("narrowed")->as_array()->empty()) << dump(r);
  EXPECT_FALSE(p->find("weights")->as_array()->empty()) << dump(r);
  // The interface is unchanged: the logits are still f32.
  EXPECT_EQ(str(find_named(*doc.find("outputs"), "logits")->find("dtype")), "f32");

  ProcessResult text = rlx({"explain", kQwen3, "--target", "cpu", "--precision", "amp-bf16"});
  ASSERT_EQ(text.exit_code, 0) << dump(text);
  EXPECT_THAT(text.out, StartsWith("precision amp-bf16: ")) << dump(text);
  EXPECT_THAT(text.out, ::testing::ContainsRegex("narrowed +%[^ ]+ \\(Linear '[^']+'\\) computes in bf16"))
      << text.out;
  EXPECT_THAT(text.err, HasSubstr("--precision amp-bf16: ")) << dump(text);
}

// --allow-tf32 is listed by explain (text and JSON); on the cpu, which has no TF32, run gives
// exactly the f32 result.
TEST_F(CliTest, AllowTf32IsListedAndTheCpuComputesInF32) {
  ProcessResult r = rlx({"explain", kQwen3, "--target", "cpu", "--allow-tf32"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.out, HasSubstr("--allow-tf32: ")) << r.out;
  EXPECT_THAT(r.out, ::testing::ContainsRegex("tf32 +%[^ ]+ \\(Linear '[^']+'\\)")) << r.out;
  ProcessResult j = rlx({"explain", kQwen3, "--target", "cpu", "--allow-tf32", "--json"});
  ASSERT_EQ(j.exit_code, 0) << dump(j);
  const json::Value doc = parse_json(j);
  const json::Value* listed = doc.find("allow_tf32");
  ASSERT_TRUE(listed && listed->as_array()) << j.out;
  EXPECT_FALSE(listed->as_array()->empty());
  fs::path in = dir_ / "ids.safetensors", a = dir_ / "a.safetensors", b = dir_ / "b.safetensors";
  write_safetensors(in, {{"input_ids", Tensor::from<int64_t>(DType::kI64, {1, 4}, {5, 17, 300, 2})}});
  ASSERT_EQ(rlx({"run", kQwen3, "--inputs", in.string(), "--output", a.string()}).exit_code, 0);
  ASSERT_EQ(rlx({"run", kQwen3, "--inputs", in.string(), "--output", b.string(), "--allow-tf32"}).exit_code, 0);
  const Tensor x = read_safetensors(a).at("logits"), y = read_safetensors(b).at("logits");
  ASSERT_EQ(x.numel(), y.numel());
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(x.as<float>()[i], y.as<float>()[i]) << i;
}

TEST_F(CliTest, RunWithBf16KeepsF32InputsAndOutputs) {
  fs::path in = dir_ / "in.safetensors", out = dir_ / "out.safetensors";
  // Every value here (and x + w, (x + w) * x) is exact in bf16, so the result is exact too.
  write_safetensors(in, {{"x", Tensor::from<float>(DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6})},
                         {"w", Tensor::from<float>(DType::kF32, {2, 3}, {1, 1, 1, -1, 0, 0.5f})}});
  ProcessResult r = rlx({"run", small_model().string(), "--inputs", in.string(), "--output",
                         out.string(), "--precision", "bf16"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  const Tensor y = read_safetensors(out).at("y");
  ASSERT_EQ(y.dtype(), DType::kF32);
  const std::vector<float> want = {2, 6, 12, 12, 25, 39};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(y.as<float>()[i], want[i]) << i;
}

TEST_F(CliTest, AWrongPrecisionOrNothingToNarrowIsAUserError) {
  ProcessResult bad = rlx({"run", small_model().string(), "--precision", "fp16"});
  EXPECT_EQ(bad.exit_code, 1) << dump(bad);
  EXPECT_THAT(bad.err, HasSubstr("'fp16' is not a precision: give f32, f16, bf16, amp-f16 or amp-bf16"))
      << dump(bad);

  // small.rlx adds and multiplies: amp narrows only products, convolutions and attention.
  ProcessResult none = rlx({"explain", small_model().string(), "--precision", "amp-f16"});
  EXPECT_EQ(none.exit_code, 1) << dump(none);
  EXPECT_THAT(none.err, HasSubstr("has no f32 computation this mode narrows")) << dump(none);
}

}  // namespace
}  // namespace rlx::cli
