// What is particular to the cuda target: its status without a driver, the CUDA C++, PTX and cubin
// it emits, and that NVRTC compiles every kernel the renderer writes (every primitive at every
// dtype, the shared suite's programs) to an sm_90 cubin. These need NVRTC, not a device: CI runs
// them on machines without a GPU. What it shares with the other GPU-like targets is registered by
// cuda_test_main.cpp from sdk/testing, and skips without a device; these are a program of their
// own (rlx_cuda_codegen_tests), outside the suite's device check.
#include <dlfcn.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string_view>

#include "cublaslt.h"
#include "dependent_launch.h"
#include "target_suite.h"
#include "test_support.h"

namespace rlx {
namespace {

std::shared_ptr<Target> cuda() {
  return test::target_named("cuda");
}

// NVRTC is found the way the plugin finds it (RLX_NVRTC, libnvrtc.so, versioned names).
bool have_nvrtc() {
  const char* env = std::getenv("RLX_NVRTC");
  for (const char* name : {env ? env : "", "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
                           "/usr/local/cuda/lib64/libnvrtc.so"})
    if (*name && dlopen(name, RTLD_NOW | RTLD_LOCAL)) return true;
  return false;
}

#define REQUIRE_NVRTC() \
  if (!have_nvrtc())    \
  GTEST_SKIP() << "NVRTC (libnvrtc.so) is not installed here: the CUDA toolkit's cuda-nvrtc"

// Emits `ir` for cuda at RLX_CUDA_ARCH=sm_90 and checks the three artifacts. Products are rlx's
// tiled kernels here (RLX_CUDA_GEMM=kernel), which NVRTC must compile, not cuBLASLt calls.
void expect_compiles_to_sm90(const std::string& ir, std::string_view what) {
  setenv("RLX_CUDA_ARCH", "sm_90", 1);
  setenv("RLX_CUDA_GEMM", "kernel", 1);
  test::Emitted e(ir, cuda());
  unsetenv("RLX_CUDA_GEMM");
  unsetenv("RLX_CUDA_ARCH");
  ASSERT_EQ(e.artifacts().size(), 3u) << what;
  EXPECT_NE(e.text("cuda_kernels.ptx").find(".target sm_90"), std::string::npos) << what;
  EXPECT_EQ(e.text("cuda_kernels.sm_90.cubin").substr(0, 4),
            "\x7f"
            "ELF")
      << what;
}

// Without libcuda.so.1 the plugin still loads, lists itself as codegen-only and says why.
TEST(CudaCodegen, WithoutADriverItIsCodegenOnlyAndSaysWhy) {
  if (void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(lib);
    GTEST_SKIP() << "this machine has a CUDA driver (libcuda.so.1)";
  }
  std::string cmd =
      fmt::format("'{}' --plugin-path '{}' --list-targets 2>&1", RLX_BINARY, RLX_TEST_PLUGIN_DIR);
  std::string out;
  if (FILE* pipe = popen(cmd.c_str(), "r")) {
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
    pclose(pipe);
  }
  std::string line;
  for (std::stringstream lines(out); std::getline(lines, line);)
    if (line.rfind("  cuda ", 0) == 0) break;
  EXPECT_NE(line.find("codegen-only"), std::string::npos) << out;
  EXPECT_NE(line.find("libcuda.so.1 not found"), std::string::npos) << out;
  Verdict v = cuda()->can_execute();
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("libcuda.so.1 not found"), std::string::npos) << v.reason;
}

// The module is the one compile() builds, as CUDA C++, its PTX and an sm_90 cubin.
TEST(CudaCodegen, EmitsCudaSourcePtxAndCubin) {
  REQUIRE_NVRTC();
  setenv("RLX_CUDA_ARCH", "sm_90", 1);
  setenv("RLX_CUDA_GEMM", "kernel", 1);
  test::Emitted e(test::kEmitProgram, cuda());
  unsetenv("RLX_CUDA_GEMM");
  unsetenv("RLX_CUDA_ARCH");
  ASSERT_EQ(e.artifacts().size(), 3u);
  EXPECT_EQ(e.artifacts()[0].path, "cuda_kernels.cu");
  EXPECT_EQ(e.artifacts()[1].path, "cuda_kernels.ptx");
  EXPECT_EQ(e.artifacts()[2].path, "cuda_kernels.sm_90.cubin");
  const std::string cu = e.text("cuda_kernels.cu");
  // dot_general is the SDK's tiled product, written for blocks of 64 threads.
  EXPECT_NE(
      cu.find(
          "extern \"C\" __global__ void __launch_bounds__(64) k0_dot_general("
          "const float* __restrict__ b0, const float* __restrict__ b1, float* __restrict__ b2) {\n"
          "  __shared__ float rlx_sa["),
      std::string::npos)
      << cu;
  EXPECT_NE(cu.find("__syncthreads();"), std::string::npos) << cu;
  EXPECT_NE(cu.find("extern \"C\" __global__ void k1_gather("), std::string::npos) << cu;
  EXPECT_NE(cu.find("blockIdx.x"), std::string::npos) << cu;
  // NVRTC has no C library headers: the prelude includes one only for nvcc.
  EXPECT_NE(cu.find("#ifdef __CUDACC_RTC__\ntypedef signed char int8_t;"), std::string::npos) << cu;
  const std::string ptx = e.text("cuda_kernels.ptx");
  EXPECT_NE(ptx.find(".target sm_90"), std::string::npos);
  EXPECT_NE(ptx.find(".entry k0_dot_general"), std::string::npos);
}

// Where cuBLASLt loads, an f32 product is a cuBLASLt call on the device's stream, not a kernel of
// the module: the emitted source says so where the kernel would be.
TEST(CudaCodegen, ProductsAreCublasLtCallsWhereItLoads) {
  REQUIRE_NVRTC();
  std::string why;
  if (!cuda::cublaslt_api(&why)) GTEST_SKIP() << why;
  setenv("RLX_CUDA_ARCH", "sm_90", 1);
  test::Emitted e(test::kEmitProgram, cuda());
  unsetenv("RLX_CUDA_ARCH");
  const std::string cu = e.text("cuda_kernels.cu");
  EXPECT_NE(cu.find("// k0_dot_general: cuBLASLt C["), std::string::npos) << cu;
  EXPECT_EQ(cu.find("void __launch_bounds__(64) k0_dot_general("), std::string::npos) << cu;
}

// A kernel whose offsets fit 31 bits indexes in int (a 64-bit division by a constant is a dozen
// instructions); one over more than 2^31 elements keeps 64-bit indices, so nothing wraps. The
// shared suite runs both forms on the device (its elementwise tests span more than 2^17 items).
TEST(CudaCodegen, IndicesAreThirtyTwoBitsWhereEveryOffsetFits) {
  REQUIRE_NVRTC();
  const char* program = R"(graph @t(%x: f16[4, 8, 16], %y: f16[65536, 40000]) {
  %a = transpose(%x) {perm = [1, 0, 2]} : f16[8, 4, 16]
  %b = exp(%a) : f16[8, 4, 16]
  %c = exp(%y) : f16[65536, 40000]
  return %b, %c
}
)";
  setenv("RLX_CUDA_ARCH", "sm_90", 1);
  test::Emitted e(program, cuda());
  unsetenv("RLX_CUDA_ARCH");
  const std::string cu = e.text("cuda_kernels.cu");
  EXPECT_EQ(test::occurrences(cu, "const int gid = ((int)(blockIdx.x)) * blockDim.x"), 1u) << cu;
  EXPECT_NE(cu.find("const int i1 = (gid / 16) % 4;"), std::string::npos) << cu;
  // The large one also computes four outputs a thread, a quarter of the domain apart, in a loop
  // NVCC unrolls so that the four loads are in flight together. A quarter is whole rows, so the
  // column index is the same for the four: computed once, before the loop.
  EXPECT_NE(cu.find("const int64_t rlx_item = ((int64_t)(blockIdx.x)) * blockDim.x + threadIdx.x;\n"
                    "  if (rlx_item >= 655360000) { return; }\n"
                    "  const int64_t i1 = (rlx_item) % 40000;\n"
                    "  #pragma unroll\n"
                    "  for (int64_t rlx_j = 0; rlx_j < 4; ++rlx_j) {\n"
                    "    const int64_t gid = rlx_item + rlx_j * 655360000;\n"),
            std::string::npos)
      << cu;
  EXPECT_EQ(e.text("cuda_kernels.sm_90.cubin").substr(0, 4),
            "\x7f"
            "ELF");
}

TEST(CudaCodegen, AMalformedArchitectureIsRefusedByName) {
  REQUIRE_NVRTC();
  setenv("RLX_CUDA_ARCH", "hopper", 1);
  std::string error;
  try {
    test::Emitted e(test::kEmitProgram, cuda());
  } catch (const std::exception& ex) {
    error = ex.what();
  }
  unsetenv("RLX_CUDA_ARCH");
  EXPECT_NE(error.find("RLX_CUDA_ARCH='hopper' is not a GPU architecture"), std::string::npos)
      << error;
}

// Every kernel the suites write (every primitive at every dtype, the shared suite's programs)
// renders to CUDA C++ that NVRTC compiles: what the device runs in the conformance suite.
TEST(CudaCodegen, EveryKernelTheSuitesWriteCompilesToAnSm90Cubin) {
  REQUIRE_NVRTC();
  for (const test::NamedProgram& p : test::every_kernel_programs())
    expect_compiles_to_sm90(p.ir, p.what);
}

// f16 and bf16 attention with a head dimension of 16 or more takes the tensor-core kernel (mma.sync
// in the PTX, blocks of 128 threads), which NVRTC compiles for sm_90; f32 attention keeps the
// SDK's kernel, and RLX_CUDA_ATTENTION=tiled asks for it by name.
TEST(CudaCodegen, HalfAttentionIsATensorCoreKernelThatCompilesToSm90) {
  REQUIRE_NVRTC();
  auto program = [](const char* dt) {
    return fmt::format(R"(graph @t(%q: {0}[2,4,40,32], %k: {0}[2,2,40,32], %v: {0}[2,2,40,32], %m: i64[2,40]) {{
  %o = Attention(%q, %k, %v, %m) {{mask = "padding"}} : {0}[2,4,40,32]
  %c = Attention(%q, %k, %v) {{mask = "causal"}} : {0}[2,4,40,32]
  return %o, %c
}}
)",
                       dt);
  };
  setenv("RLX_CUDA_ARCH", "sm_90", 1);
  for (const char* dt : {"f16", "bf16"}) {
    test::Emitted e(program(dt), cuda());
    const std::string cu = e.text("cuda_kernels.cu");
    EXPECT_NE(cu.find(fmt::format("attention on tensor cores (mma.sync m16n8k16 {}", dt)),
              std::string::npos)
        << cu;
    EXPECT_NE(cu.find("__launch_bounds__(128)"), std::string::npos) << cu;
    EXPECT_NE(e.text("cuda_kernels.ptx").find(fmt::format("mma.sync.aligned.m16n8k16.row.col.f32.{0}.{0}.f32", dt)),
              std::string::npos);
  }
  test::Emitted f32(program("f32"), cuda());
  EXPECT_EQ(f32.text("cuda_kernels.cu").find("tensor cores"), std::string::npos);
  setenv("RLX_CUDA_ATTENTION", "tiled", 1);
  test::Emitted tiled(program("f16"), cuda());
  unsetenv("RLX_CUDA_ATTENTION");
  unsetenv("RLX_CUDA_ARCH");
  EXPECT_EQ(tiled.text("cuda_kernels.cu").find("tensor cores"), std::string::npos);
}

// AMP narrows a norm's result for the product after it: the norm stores f16 itself (one kernel,
// not a norm and a convert), and a widened product output read twice (x * sigmoid(x)) is widened
// inside its reader instead of in a kernel of its own.
TEST(CudaCodegen, ANormStoresItsNarrowedResultAndWideningsFuseIntoTheirReaders) {
  REQUIRE_NVRTC();
  setenv("RLX_CUDA_ARCH", "sm_90", 1);
  test::Emitted e(R"(graph @t(%x: f32[4,64], %s: f32[64], %w: f16[64,32]) {
  %n = RMSNorm(%x, %s) {epsilon = 1e-6} : f32[4,64]
  %h = convert(%n) {dtype = f16} : f16[4,64]
  %y = dot_general(%h, %w) {lhs_batch = [], lhs_contract = [1], rhs_batch = [], rhs_contract = [0]} : f16[4,32]
  %f = convert(%y) {dtype = f32} : f32[4,32]
  %g = logistic(%f) : f32[4,32]
  %o = mul(%f, %g) : f32[4,32]
  return %o
}
)",
                  cuda());
  unsetenv("RLX_CUDA_ARCH");
  const std::string cu = e.text("cuda_kernels.cu");
  EXPECT_NE(cu.find("uint16_t* __restrict__ b2) {"), std::string::npos) << cu;  // the norm's f16 out
  // Two kernels: the norm and the SiLU, which widens y itself; the product is cuBLASLt's.
  size_t kernels = 0;
  for (size_t at = cu.find("__global__"); at != std::string::npos; at = cu.find("__global__", at + 1))
    ++kernels;
  EXPECT_EQ(kernels, 2u) << cu;
  EXPECT_NE(cu.find("_mul_convert_logistic_convert: domain [4, 32]"), std::string::npos) << cu;
}

// A norm after an AMP product reads the product's f16 result itself instead of a widened copy.
TEST(CudaCodegen, ANormReadsItsNarrowInputItself) {
  REQUIRE_NVRTC();
  setenv("RLX_CUDA_ARCH", "sm_90", 1);
  test::Emitted e(R"(graph @t(%x: f16[4,64], %s: f32[32], %w: f16[64,32]) {
  %y = dot_general(%x, %w) {lhs_batch = [], lhs_contract = [1], rhs_batch = [], rhs_contract = [0]} : f16[4,32]
  %f = convert(%y) {dtype = f32} : f32[4,32]
  %n = RMSNorm(%f, %s) {epsilon = 1e-6} : f32[4,32]
  return %n
}
)",
                  cuda());
  unsetenv("RLX_CUDA_ARCH");
  const std::string cu = e.text("cuda_kernels.cu");
  EXPECT_EQ(cu.find("__global__"), cu.rfind("__global__")) << cu;  // the norm alone
  EXPECT_NE(cu.find("RMSNorm(const uint16_t* __restrict__ b0, const float* __restrict__ b1, float*"),
            std::string::npos)
      << cu;
}

// Products of up to eight rows whose weights are [out, in] (a decode step's Linear layers) are
// the warp GEMV's, its epilogue fused (here a bias row and a residual), at f16, bf16 and f32;
// NVRTC compiles them for sm_90. RLX_CUDA_GEMV=0 gives them back to cuBLASLt. A weight read
// along n ([in, out]) is not a GEMV's row and stays a product of its own.
TEST(CudaCodegen, FewRowProductsAreWarpGemvsWithTheirEpilogues) {
  REQUIRE_NVRTC();
  const char* program = R"(graph @t(%x: f16[1,3,64], %w: f16[96,64], %b: f16[96], %r: f16[1,3,96], %x1: bf16[1,64], %w1: bf16[40,64], %x2: f32[2,72], %w2: f32[24,72], %w3: f32[72,24]) {
  %y = dot_general(%x, %w) {lhs_batch = [], lhs_contract = [2], rhs_batch = [], rhs_contract = [1]} : f16[1,3,96]
  %bb = broadcast_in_dim(%b) {dims = [2], shape = [1, 3, 96]} : f16[1,3,96]
  %z = add(%y, %bb) : f16[1,3,96]
  %o = add(%z, %r) : f16[1,3,96]
  %v = dot_general(%x1, %w1) {lhs_batch = [], lhs_contract = [1], rhs_batch = [], rhs_contract = [1]} : bf16[1,40]
  %u = dot_general(%x2, %w2) {lhs_batch = [], lhs_contract = [1], rhs_batch = [], rhs_contract = [1]} : f32[2,24]
  %t = dot_general(%x2, %w3) {lhs_batch = [], lhs_contract = [1], rhs_batch = [], rhs_contract = [0]} : f32[2,24]
  return %o, %v, %u, %t
}
)";
  setenv("RLX_CUDA_ARCH", "sm_90", 1);
  test::Emitted e(program, cuda());
  const std::string cu = e.text("cuda_kernels.cu");
  EXPECT_NE(cu.find("warp gemv C[1, 3, 96] = A[1, 3, 64] (strides 0, 64, 1) x B[1, 64, 96] "
                    "(strides 0, 1, 64), a warp per column, 8 weights a load, 1 load a lane "
                    "fetched first, f32 accumulation, then 1 fused kernels"),
            std::string::npos)
      << cu;
  EXPECT_NE(cu.find("warp gemv C[1, 1, 40]"), std::string::npos) << cu;
  EXPECT_NE(cu.find("warp gemv C[1, 2, 24] = A[1, 2, 72] (strides 0, 72, 1) x B[1, 72, 24] "
                    "(strides 0, 1, 72), a warp per column, 4 weights a load"),
            std::string::npos)
      << cu;
  EXPECT_EQ(cu.find("k4_dot_general: warp gemv"), std::string::npos) << cu;
  // The weights are loaded before A is staged (and the barrier that staging needs).
  const size_t gemv40 = cu.find("warp gemv C[1, 1, 40]");
  EXPECT_LT(cu.find("fetched[step] = ", gemv40), cu.find("__syncthreads();", gemv40)) << cu;
  EXPECT_NE(e.text("cuda_kernels.ptx").find("ld.global.nc.v4.u32"), std::string::npos);
  EXPECT_EQ(e.text("cuda_kernels.sm_90.cubin").substr(0, 4),
            "\x7f"
            "ELF");
  setenv("RLX_CUDA_GEMV", "0", 1);
  test::Emitted off(program, cuda());
  unsetenv("RLX_CUDA_GEMV");
  unsetenv("RLX_CUDA_ARCH");
  EXPECT_EQ(off.text("cuda_kernels.cu").find("warp gemv"), std::string::npos);
}

// A norm whose only reader is a single-row product is computed by the warp GEMV
// (test_warp_gemv.cpp runs that on the device) unless RLX_CUDA_GEMV_NORM=0: the three norms
// that feed only products go, and the module compiles.
TEST(CudaCodegen, WarpGemvsNormaliseTheirOperandUnlessToldNot) {
  setenv("RLX_CUDA_ARCH", "sm_90", 1);
  auto norm_kernels = [](const std::string& cu) { return test::occurrences(cu, "Norm over rows"); };
  setenv("RLX_CUDA_GEMV_NORM", "0", 1);
  test::Emitted plain(test::kNormProductProgram, cuda());
  unsetenv("RLX_CUDA_GEMV_NORM");
  EXPECT_EQ(plain.text("cuda_kernels.cu").find("normalised first"), std::string::npos);
  EXPECT_EQ(norm_kernels(plain.text("cuda_kernels.cu")), 4u);
  test::Emitted asked(test::kNormProductProgram, cuda());
  unsetenv("RLX_CUDA_ARCH");
  const std::string cu = asked.text("cuda_kernels.cu");
  EXPECT_NE(cu.find("A normalised first (RMSNorm, epsilon 1e-06)"), std::string::npos) << cu;
  EXPECT_NE(cu.find("A normalised first (LayerNorm, epsilon 1e-05)"), std::string::npos) << cu;
  EXPECT_EQ(norm_kernels(cu), 1u) << cu;
  // The scale is read beside x, before the statistics' barrier, which no load crosses.
  const size_t scale = cu.find("rlx_scale[rlx_t] = ");
  ASSERT_NE(scale, std::string::npos) << cu;
  EXPECT_LT(scale, cu.find("__syncthreads()", cu.rfind("A normalised first", scale)));
  EXPECT_EQ(asked.text("cuda_kernels.sm_90.cubin").substr(0, 4),
            "\x7f"
            "ELF");
}

// Asked for (RLX_CUDA_GEMV_LOOP=1), an elementwise kernel whose only reader is a single-row
// product is computed where the warp GEMV stages A (the shared suite's
// ComputedOperandsOfSingleRowProductsAgreeWithCpu runs it on the device with the switch): its own
// kernel goes, and the module compiles. By default it keeps its kernel, which measured faster.
TEST(CudaCodegen, WarpGemvsComputeTheirOperandThemselvesOnlyWhenAsked) {
  REQUIRE_NVRTC();
  setenv("RLX_CUDA_ARCH", "sm_90", 1);
  unsetenv("RLX_CUDA_GEMV_LOOP");
  test::Emitted plain(test::kComputedOperandProgram, cuda());
  setenv("RLX_CUDA_GEMV_LOOP", "1", 1);
  test::Emitted computed(test::kComputedOperandProgram, cuda());
  unsetenv("RLX_CUDA_GEMV_LOOP");
  unsetenv("RLX_CUDA_ARCH");
  const std::string apart = plain.text("cuda_kernels.cu");
  EXPECT_EQ(test::occurrences(apart, ", A computed by "), 0u) << apart;
  EXPECT_EQ(test::occurrences(apart, "__global__"), 4u) << apart;
  const std::string cu = computed.text("cuda_kernels.cu");
  EXPECT_EQ(test::occurrences(cu, ", A computed by "), 1u) << cu;
  // Staging loops count a constant number of trips, so NVCC unrolls them whole and issues their
  // loads together (a bound on threadIdx.x left them unrolled by four: three waits in a row).
  EXPECT_NE(cu.find("for (int rlx_t = 0; rlx_t < 1; ++rlx_t) {\n    const int i = threadIdx.x + "
                    "rlx_t * 256;\n"),
            std::string::npos)
      << cu;
  EXPECT_EQ(cu.find("i += 256) {\n"), std::string::npos) << cu;
  // The two GEMVs and exp(x2), which the batched product reads (it stages no A).
  EXPECT_EQ(test::occurrences(cu, "__global__"), 3u) << cu;
  EXPECT_EQ(computed.text("cuda_kernels.sm_90.cubin").substr(0, 4),
            "\x7f"
            "ELF");
}

// Every kernel the target writes waits for the kernels before it first (Hopper launches it as a
// dependent, sdk/cuda_host/dependent_launch.h); a GEMV over weights a kernel never writes loads
// its first vectors before that wait, and over any other B only after it.
TEST(CudaCodegen, KernelsWaitForTheirProducersAndGemvsFetchConstantWeightsFirst) {
  REQUIRE_NVRTC();
  std::string weights;
  for (int i = 0; i < 8 * 64; ++i) weights += fmt::format("{}{}", i ? ", " : "", (i % 7) * 0.25);
  const std::string program = fmt::format(R"(graph @t(%x: f32[1,64], %v: f32[8,64], %s: f32[64], %i: i64[2]) {{
  %w = constant() {{value = dense<f32[8,64]: [{}]>}} : f32[8,64]
  %n = RMSNorm(%x, %s) {{epsilon = 1e-6}} : f32[1,64]
  %e = exp(%n) : f32[1,64]
  %a = dot_general(%e, %w) {{lhs_batch = [], lhs_contract = [1], rhs_batch = [], rhs_contract = [1]}} : f32[1,8]
  %b = dot_general(%e, %v) {{lhs_batch = [], lhs_contract = [1], rhs_batch = [], rhs_contract = [1]}} : f32[1,8]
  %g = gather(%v, %i) {{axis = 0}} : f32[2,64]
  return %a, %b, %g
}}
)",
                                            weights);
  setenv("RLX_CUDA_ARCH", "sm_90", 1);
  test::Emitted e(program, cuda());
  unsetenv("RLX_CUDA_ARCH");
  const std::string cu = e.text("cuda_kernels.cu");
  const auto awaiting = cuda::kernels_that_await(cu);
  EXPECT_EQ(awaiting.size(), test::occurrences(cu, "__global__")) << cu;
  EXPECT_GE(awaiting.size(), 4u) << cu;  // the norm, exp, both GEMVs, the gather
  const size_t constant_b = cu.find("x B[1, 64, 8] (strides 0, 1, 64)");
  ASSERT_NE(constant_b, std::string::npos) << cu;
  const size_t input_b = cu.find("x B[1, 64, 8] (strides 0, 1, 64)", constant_b + 1);
  ASSERT_NE(input_b, std::string::npos) << cu;
  // Which of the two is over the constant: the one whose kernel binds the constant's buffer.
  auto fetch_before_wait = [&](size_t at) {
    return cu.find("fetched[step] = ", at) < cu.find("rlx_await_producers();", at);
  };
  EXPECT_NE(fetch_before_wait(constant_b), fetch_before_wait(input_b)) << cu;
  EXPECT_EQ(e.text("cuda_kernels.sm_90.cubin").substr(0, 4),
            "\x7f"
            "ELF");
  // The text scan itself: a kernel that does not call the wait is launched plainly.
  const auto found = cuda::kernels_that_await(
      "extern \"C\" __global__ void __launch_bounds__(256) first(int* x) {\n"
      "  rlx_await_producers();\n  x[0] = 1;\n}\n"
      "extern \"C\" __global__ void second(int* x) { x[0] = 2; }\n");
  EXPECT_EQ(found, (std::set<std::string, std::less<>>{"first"}));
}


// A cache update's new row is computed by its scatter where only the scatter reads it: the rotated
// key (the shared suite's ScatteredUpdatesComputedByTheScatterAgreeWithCpu runs it on the device)
// and the value sliced out, split into heads and narrowed, with a kernel between it and its
// scatter. Two kernels remain, the scatters.
TEST(CudaCodegen, ScattersComputeTheRowsTheyWrite) {
  REQUIRE_NVRTC();
  setenv("RLX_CUDA_ARCH", "sm_90", 1);
  test::Emitted e(test::kScatterUpdatesProgram, cuda());
  unsetenv("RLX_CUDA_ARCH");
  const std::string cu = e.text("cuda_kernels.cu");
  EXPECT_EQ(test::occurrences(cu, "updates computed by"), 2u) << cu;
  EXPECT_EQ(test::occurrences(cu, "__global__"), 2u) << cu;
  EXPECT_EQ(e.text("cuda_kernels.sm_90.cubin").substr(0, 4),
            "\x7f"
            "ELF");
}


// The scatter computes the k norm with the rotation after it
// only with RLX_CUDA_NORMED_PROLOGUE=1 (off until it has run on a GPU; the shared suite's
// NormsComputedWithTheRotationsAfterThemAgreeWithCpu is its check there): asked, the k norm's
// kernel goes and the module compiles; otherwise both norms keep their kernels.
TEST(CudaCodegen, RotationsComputeTheNormsBeforeThemOnlyWhenAsked) {
  REQUIRE_NVRTC();
  setenv("RLX_CUDA_ARCH", "sm_90", 1);
  unsetenv("RLX_CUDA_NORMED_PROLOGUE");  // a run of the suite with it set still has a plain side
  test::Emitted plain(test::kNormedRotationProgram, cuda());
  setenv("RLX_CUDA_NORMED_PROLOGUE", "1", 1);
  test::Emitted asked(test::kNormedRotationProgram, cuda());
  unsetenv("RLX_CUDA_NORMED_PROLOGUE");
  unsetenv("RLX_CUDA_ARCH");
  EXPECT_EQ(test::occurrences(plain.text("cuda_kernels.cu"), "Norm over rows"), 2u);
  const std::string cu = asked.text("cuda_kernels.cu");
  EXPECT_EQ(test::occurrences(cu, "Norm over rows"), 1u) << cu;  // q's: attentions take no norm
  EXPECT_NE(cu.find("_RMSNorm\n"), std::string::npos) << cu;  // the scatter's "after kN_RMSNorm"
  EXPECT_NE(cu.find("decode attention"), std::string::npos) << cu;
  for (const test::Emitted* e : {&plain, &asked})
    EXPECT_EQ(e->text("cuda_kernels.sm_90.cubin").substr(0, 4),
              "\x7f"
              "ELF");
}

// A decode step's attention: one query row of 4 heads of 64 over `keys` f16 keys and values of
// `kv_heads` heads, with a padding mask.
std::string decode_attention_program(int kv_heads, int keys) {
  return fmt::format(R"(graph @t(%q: f32[1,4,1,64], %k: f16[1,{0},{1},64], %v: f16[1,{0},{1},64], %keep: bool[1,{1}]) {{
  %o = Attention(%q, %k, %v, %keep) {{mask = "padding", scale = 0.125}} : f32[1,4,1,64]
  return %o
}}
)",
                     kv_heads, keys);
}

// The decode attention's early loads (on; RLX_CUDA_ATTENTION_EARLY=0 turns them off): the first
// round of keys and values is loaded before the query is staged, and the module compiles with
// and without them.
TEST(CudaCodegen, DecodeAttentionLoadsItsFirstKeysEarlyUnlessToldNot) {
  REQUIRE_NVRTC();
  const std::string program = decode_attention_program(2, 100);
  setenv("RLX_CUDA_ARCH", "sm_90", 1);
  test::Emitted early(program, cuda());
  setenv("RLX_CUDA_ATTENTION_EARLY", "0", 1);
  test::Emitted plain(program, cuda());
  unsetenv("RLX_CUDA_ATTENTION_EARLY");
  unsetenv("RLX_CUDA_ARCH");
  EXPECT_NE(plain.text("cuda_kernels.cu").find("decode attention"), std::string::npos);
  EXPECT_EQ(plain.text("cuda_kernels.cu").find("kpre"), std::string::npos);
  const std::string cu = early.text("cuda_kernels.cu");
  EXPECT_LT(cu.find("float kpre[8][2];"), cu.find("qs[d] = ")) << cu;
  for (const test::Emitted* e : {&plain, &early})
    EXPECT_EQ(e->text("cuda_kernels.sm_90.cubin").substr(0, 4),
              "\x7f"
              "ELF");
}

// A decode attention splits each query row's keys into chunks of whole 64-key rounds, enough
// blocks for every SM (600 keys, 4 rows: 10 chunks of 64), and the last chunk of a row to finish
// combines them through the scratch buffer and its counter (an atomic in the PTX).
TEST(CudaCodegen, DecodeAttentionSplitsARowsKeysIntoChunksCombinedInScratch) {
  REQUIRE_NVRTC();
  const std::string program = decode_attention_program(4, 600);
  setenv("RLX_CUDA_ARCH", "sm_90", 1);
  test::Emitted emitted(program, cuda());
  unsetenv("RLX_CUDA_ARCH");
  EXPECT_NE(emitted.text("cuda_kernels.cu").find("10 chunks of 64 keys"), std::string::npos);
  EXPECT_NE(emitted.text("cuda_kernels.ptx").find("atom.global"), std::string::npos);
  EXPECT_EQ(emitted.text("cuda_kernels.sm_90.cubin").substr(0, 4),
            "\x7f"
            "ELF");
}

// The decode attention computes its rotated queries where it stages q (the shared suite's
// ComputedQueriesOfDecodeAttentionsAgreeWithCpu is its check on a GPU): the rotation's kernel
// goes and the module compiles; with RLX_CUDA_ATTENTION_Q=0 the rotation keeps its kernel.
TEST(CudaCodegen, DecodeAttentionComputesItsQueriesUnlessToldNot) {
  REQUIRE_NVRTC();
  setenv("RLX_CUDA_ARCH", "sm_90", 1);
  test::Emitted asked(test::kComputedQueryProgram, cuda());
  setenv("RLX_CUDA_ATTENTION_Q", "0", 1);
  test::Emitted plain(test::kComputedQueryProgram, cuda());
  unsetenv("RLX_CUDA_ATTENTION_Q");
  unsetenv("RLX_CUDA_ARCH");
  EXPECT_EQ(test::occurrences(plain.text("cuda_kernels.cu"), "__global__"), 2u);
  const std::string cu = asked.text("cuda_kernels.cu");
  EXPECT_EQ(test::occurrences(cu, "__global__"), 1u) << cu;
  EXPECT_NE(cu.find("decode attention"), std::string::npos) << cu;
  EXPECT_NE(cu.find("qs[d] = qv;"), std::string::npos) << cu;
  EXPECT_EQ(asked.text("cuda_kernels.sm_90.cubin").substr(0, 4),
            "\x7f"
            "ELF");
}

}  // namespace
}  // namespace rlx
