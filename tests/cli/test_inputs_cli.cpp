// The --inputs file of `rlx run` and `rlx bench`: a tensor the model does not take is a warning
// and is left out, a missing input fails naming what the model takes, i32 token ids are widened
// with a note, and nothing is ever narrowed or changed between float types.
#include "cli_fixture.h"
#include "rlx/core/safetensors.h"

namespace rlx::cli {
namespace {

class InputsCliTest : public CliTest {
 protected:
  // y = ids + ids on i64: a model taking token ids.
  fs::path ids_model() {
    return write("ids.rlx",
                 "graph @ids(%ids: i64[3]) {\n"
                 "  %y = Add(%ids, %ids) : i64[3]\n"
                 "  return %y\n"
                 "}\n");
  }
  ProcessResult run(const fs::path& model, const TensorMap& inputs) {
    const fs::path in = dir_ / "in.safetensors";
    write_safetensors(in, inputs);
    return rlx({"run", model.string(), "--target", "cpu", "--inputs", in.string(), "--output",
                (dir_ / "out.safetensors").string()});
  }
  static Tensor f32x6(float first) {
    return Tensor::from<float>(DType::kF32, {2, 3},
                               {first, first + 1, first + 2, first + 3, first + 4, first + 5});
  }
};

TEST_F(InputsCliTest, ATensorTheModelDoesNotTakeIsAWarningNamingItAndTheInputs) {
  ProcessResult r = run(small_model(), {{"x", f32x6(1)}, {"w", f32x6(0)}, {"z", f32x6(9)}});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("rlx: warning: ")) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("tensor 'z'")) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("the model's inputs: x, w")) << dump(r);
  // Left out: the outputs are those of x and w alone, (x + w) * x = (6 + 5) * 6 at the end.
  TensorMap out = read_safetensors(dir_ / "out.safetensors");
  ASSERT_EQ(out.size(), 1u) << dump(r);
  EXPECT_FLOAT_EQ(out.at("y").as<float>()[5], 66.0f);

  // bench --inputs reads the file the same way.
  const fs::path in = dir_ / "in.safetensors";
  ProcessResult b = rlx({"bench", small_model().string(), "--target", "cpu", "--inputs",
                         in.string(), "--warmup", "1", "--runs", "1"});
  ASSERT_EQ(b.exit_code, 0) << dump(b);
  EXPECT_THAT(b.err, HasSubstr("tensor 'z'")) << dump(b);
}

TEST_F(InputsCliTest, MissingInputsAreAnErrorListingWhatTheModelTakes) {
  ProcessResult r = run(small_model(), {{"z", f32x6(1)}});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("inputs 'x' (f32[2,3]), 'w' (f32[2,3]) are not in")) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("the model's inputs: x f32[2,3], w f32[2,3]")) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("missing: x, w")) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("holds: z f32[2,3]")) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("hint: ")) << dump(r);
}

TEST_F(InputsCliTest, I32TokenIdsAreWidenedWithANote) {
  ProcessResult r =
      run(ids_model(), {{"ids", Tensor::from<int32_t>(DType::kI32, {3}, {1, 2, 70000})}});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("rlx: note: input 'ids' is i32")) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("widened to the i64")) << dump(r);
  TensorMap out = read_safetensors(dir_ / "out.safetensors");
  ASSERT_TRUE(out.count("y"));
  ASSERT_EQ(out.at("y").dtype(), DType::kI64);
  EXPECT_EQ(out.at("y").as<int64_t>()[0], 2);
  EXPECT_EQ(out.at("y").as<int64_t>()[2], 140000);
}

TEST_F(InputsCliTest, NarrowingAndFloatChangesAreNeverMadeQuietly) {
  // i64 ids for an i32 input, f64 for f32: refused, nothing widened or narrowed.
  fs::path narrow = write("narrow.rlx",
                          "graph @n(%ids: i32[3]) {\n"
                          "  %y = Add(%ids, %ids) : i32[3]\n"
                          "  return %y\n"
                          "}\n");
  ProcessResult r = run(narrow, {{"ids", Tensor::from<int64_t>(DType::kI64, {3}, {1, 2, 3})}});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("widened"))) << dump(r);
  Tensor f64(DType::kF64, {2, 3});
  r = run(small_model(), {{"x", f64}, {"w", f32x6(0)}});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("'x'")) << dump(r);
}

}  // namespace
}  // namespace rlx::cli
