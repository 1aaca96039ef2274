// The gpu target's refusals that depend on the device's extensions, with the device's answers
// given by the test: PoCL here offers cl_khr_fp64, so a device without it cannot be had for real.
#include <gtest/gtest.h>

#include "opencl_legality.h"
#include "rlx/sdk/render.h"
#include "target_plugin.h"

namespace rlx {
namespace {

constexpr const char* kDevice = "Some Platform / some-device (OpenCL 3.0)";

NodeSignature binary(const char* op, DType dtype) {
  TensorType t{dtype, Shape{}};
  return {op, {t, t}, {t}, {}};
}

TEST(GpuLegality, WithoutClKhrFp64AnF64NodeIsRefusedNamingTheExtension) {
  Verdict v = gpu::fp64_verdict(binary("add", DType::kF64), /*device_has_fp64=*/false, kDevice);
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.reason,
            "Some Platform / some-device (OpenCL 3.0) has no cl_khr_fp64, so gpu cannot compute "
            "add in f64; convert the model to f32 first (rlx never narrows f64 silently)");
  // An f64 operand alone is enough (a comparison of f64 values gives bool).
  TensorType f64{DType::kF64, Shape{}}, boolean{DType::kBool, Shape{}};
  EXPECT_FALSE(gpu::fp64_verdict({"lt", {f64, f64}, {boolean}, {}}, false, kDevice).ok);
}

TEST(GpuLegality, WithClKhrFp64OrWithoutF64TheNodeIsAccepted) {
  EXPECT_TRUE(gpu::fp64_verdict(binary("add", DType::kF64), true, kDevice).ok);
  EXPECT_TRUE(gpu::fp64_verdict(binary("add", DType::kF32), false, kDevice).ok);
  EXPECT_TRUE(gpu::fp64_verdict(binary("add", DType::kF16), false, kDevice).ok);
}

// Decompositions write scalars as f64 constants converted to the compute dtype; folding removes
// them before lowering (and compile() checks that no f64 reached a kernel).
TEST(GpuLegality, TheScalarConstantPatternIsAcceptedWithoutClKhrFp64) {
  TensorType f64{DType::kF64, Shape{}}, f32{DType::kF32, Shape{}};
  EXPECT_TRUE(gpu::fp64_verdict({"constant", {}, {f64}, {}}, false, kDevice).ok);
  EXPECT_TRUE(gpu::fp64_verdict({"convert", {f64}, {f32}, {}}, false, kDevice).ok);
}

// A dtype the kernel language has no storage type for (OpenCL C as rlx writes it keeps u16, u32
// and u64 off the GPU) is refused when the node is dispatched, naming it, not later when its
// kernel is written.
TEST(GpuLegality, ADtypeWithoutStorageIsRefusedAtDispatchByName) {
  const Verdict v = gpu_host::common_refusals(binary("add", DType::kU32), "gpu", "OpenCL C", false,
                                              &sdk::opencl_dialect());
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.reason,
            "OpenCL C as gpu writes it has no u32 type, so gpu cannot hold the values of add; "
            "convert them first (rlx never changes a dtype silently)");
  EXPECT_TRUE(gpu_host::common_refusals(binary("add", DType::kI32), "gpu", "OpenCL C", false,
                                        &sdk::opencl_dialect())
                  .ok);
}

}  // namespace
}  // namespace rlx
