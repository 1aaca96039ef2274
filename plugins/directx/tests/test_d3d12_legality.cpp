// The refusals a Direct3D 12 device's capabilities imply (d3d12_legality.h), checked with
// hand-made capability sets (no D3D12 device exists here): a dtype whose shader capability is
// missing is refused with the capability named; with every capability, nothing is refused.
#include <gtest/gtest.h>

#include "d3d12_legality.h"

namespace rlx {
namespace {

NodeSignature binary(const std::string& op, DType in, DType out) {
  TensorType a{in, {}}, r{out, {}};
  a.shape = {Dim(4)};
  r.shape = {Dim(4)};
  return {op, {a, a}, {r}, {}};
}

directx::D3D12Info device(bool fp64, bool int64, bool native16) {
  directx::D3D12Info d;
  d.name = "Test Adapter";
  d.feature_level = "12_0";
  d.shader_model = "6.2";
  d.fp64 = fp64;
  d.int64 = int64;
  d.native16 = native16;
  return d;
}

void expect_refused(const Verdict& v, const std::string& cap, const std::string& dtype) {
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("Test Adapter (Direct3D 12, feature level 12_0, shader model 6.2) lacks " + cap),
            std::string::npos)
      << v.reason;
  EXPECT_NE(v.reason.find("the " + dtype + " values of add"), std::string::npos) << v.reason;
}

TEST(D3D12Legality, RefusesEachDtypeWhoseCapabilityIsMissing) {
  const auto none = device(false, false, false);
  expect_refused(directx::d3d12_legality("directx", binary("add", DType::kF64, DType::kF64), none),
                 "DoublePrecisionFloatShaderOps", "f64");
  expect_refused(directx::d3d12_legality("directx", binary("add", DType::kI64, DType::kI64), none), "Int64ShaderOps",
                 "i64");
  expect_refused(directx::d3d12_legality("directx", binary("add", DType::kF16, DType::kF16), none),
                 "Native16BitShaderOpsSupported", "f16");
  expect_refused(directx::d3d12_legality("directx", binary("add", DType::kBF16, DType::kBF16), none),
                 "Native16BitShaderOpsSupported", "bf16");
  expect_refused(directx::d3d12_legality("directx", binary("add", DType::kI16, DType::kI16), none),
                 "Native16BitShaderOpsSupported", "i16");
  EXPECT_TRUE(directx::d3d12_legality("directx", binary("add", DType::kF32, DType::kF32), none).ok);
  EXPECT_TRUE(directx::d3d12_legality("directx", binary("add", DType::kI32, DType::kI32), none).ok);
}

TEST(D3D12Legality, IntegerPowNeedsInt64EvenOnI32) {
  Verdict v = directx::d3d12_legality("directx", binary("pow", DType::kI32, DType::kI32), device(true, false, true));
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("lacks Int64ShaderOps, which directx's integer pow kernel needs"), std::string::npos)
      << v.reason;
  EXPECT_TRUE(directx::d3d12_legality("directx", binary("pow", DType::kF32, DType::kF32), device(false, false, false)).ok);
}

TEST(D3D12Legality, AcceptsEveryDtypeWhenTheDeviceHasEveryCapability) {
  const auto all = device(true, true, true);
  for (DType t : {DType::kF64, DType::kI64, DType::kF16, DType::kBF16, DType::kI16, DType::kF32, DType::kI32})
    EXPECT_TRUE(directx::d3d12_legality("directx", binary("add", t, t), all).ok) << dtype_name(t);
}

}  // namespace
}  // namespace rlx
