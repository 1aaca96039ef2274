// Input limits: their metadata form and the check before a run (hand-made tensors and limits).
#include <gtest/gtest.h>

#include "rlx/core/error.h"
#include "rlx/core/input_limits.h"

namespace rlx {
namespace {

std::string check_error(const InputLimits& limits, const std::map<std::string, Tensor>& inputs) {
  try {
    check_input_limits(limits, inputs);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUser);
    return e.what();
  }
  return "";
}

TEST(InputLimits, RoundTripThroughModelMetadata) {
  Model m;
  add_input_limit(m, {"input_ids", -1, 0, 999, "vocab_size 1000"});
  add_input_limit(m, {"input_ids", 1, 0, 128, "max_position_embeddings 128, say"});
  EXPECT_EQ(m.metadata.at("input_limit.input_ids"), "0,999,vocab_size 1000");
  EXPECT_EQ(m.metadata.at("input_limit.input_ids.dim1"), "0,128,max_position_embeddings 128, say");
  m.metadata["vocab_size"] = "1000";  // other keys are not limits
  InputLimits l = input_limits(m);
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].input, "input_ids");
  EXPECT_EQ(l[0].dim, -1);
  EXPECT_EQ(l[0].max, 999);
  EXPECT_EQ(l[1].dim, 1);
  EXPECT_EQ(l[1].max, 128);
  EXPECT_EQ(l[1].reason, "max_position_embeddings 128, say");
}

TEST(InputLimits, MalformedMetadataNamesTheKey) {
  Model m;
  m.metadata["input_limit.x"] = "5,1,inverted";
  try {
    input_limits(m);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "model metadata 'input_limit.x' = '5,1,inverted' is not 'min,max,reason'");
  }
}

TEST(InputLimits, FirstValueOutsideTheRangeIsNamedWithItsPosition) {
  InputLimits limits = {{"mask", -1, 0, 1, "0/1"}};
  // [[1, 0, 1], [1, 7, -3]]: 7 is the first bad value, at row 1, column 1.
  Tensor t = Tensor::from<int64_t>(DType::kI64, {2, 3}, {1, 0, 1, 1, 7, -3});
  EXPECT_EQ(check_error(limits, {{"mask", t}}),
            "input 'mask' holds 7 at [1, 1], outside what the model takes: 0 to 1 (0/1)");
  Tensor i32 = Tensor::from<int32_t>(DType::kI32, {3}, {0, 1, -1});
  EXPECT_EQ(check_error(limits, {{"mask", i32}}),
            "input 'mask' holds -1 at [2], outside what the model takes: 0 to 1 (0/1)");
  Tensor ok = Tensor::from<int64_t>(DType::kI64, {2}, {0, 1});
  EXPECT_EQ(check_error(limits, {{"mask", ok}, {"other", t}}), "");
  EXPECT_EQ(check_error(limits, {}), "");  // an absent input is bind()'s to report
}

TEST(InputLimits, SizeOfADim) {
  InputLimits limits = {{"ids", 1, 0, 4, "max_position_embeddings 4"}};
  EXPECT_EQ(check_error(limits, {{"ids", Tensor(DType::kI64, {1, 4})}}), "");
  EXPECT_EQ(check_error(limits, {{"ids", Tensor(DType::kI64, {1, 5})}}),
            "input 'ids' [1,5] has size 5 in dim 1, outside what the model takes: 0 to 4 "
            "(max_position_embeddings 4)");
}

}  // namespace
}  // namespace rlx
