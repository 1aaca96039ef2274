// The OpenCL C dialect (OpenCL C 1.2, what every OpenCL 1.2..3.0 driver compiles): the kernels of
// the gpu target, and of oneapi after clang turns them into SPIR-V. It is the C table with what
// differs changed: one work-item per output element, one __global pointer per buffer, OpenCL's
// type names and its overloaded math builtins.
#include "rlx/sdk/render.h"

namespace rlx::sdk {

namespace {

// 16-bit floats are stored as ushort bits and computed in float, so a kernel needs no
// cl_khr_fp16. f16 converts through vload_half and vstore_half_rte, which OpenCL C has had since
// 1.0 without the extension (half as a pointer's target only) and which round to nearest even
// like the host: drivers turn them into the GPU's conversion instructions, where the C dialect's
// bit-by-bit port of core/src/ir/half.cpp (branches and a loop for subnormals) made NVIDIA's
// OpenCL run all-MiniLM-L6-v2 at f16 three to five times slower than at f32. bf16 is a shift
// and an add.
//  * FP_CONTRACT OFF: OpenCL lets a compiler fuse a * b + c into one rounding by default, which
//    would make generated code differ from the cpu target in the last bit.
//  * cl_khr_fp64 is enabled only where the device has it; a target refuses f64 kernels on a
//    device without it (the plugin decides, not the dialect).
constexpr const char* kPrelude = R"(#pragma OPENCL FP_CONTRACT OFF
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

float rlx_f16_to_f32(ushort h) { return vload_half(0, (const half*)&h); }

ushort rlx_f32_to_f16(float f) {
  ushort h;
  vstore_half_rte(f, 0, (half*)&h);
  return h;
}

float rlx_bf16_to_f32(ushort b) { return as_float((uint)b << 16); }

ushort rlx_f32_to_bf16(float f) {
  uint x = as_uint(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (ushort)((x >> 16) | 0x40u);
  x += 0x7FFFu + ((x >> 16) & 1u);
  return (ushort)(x >> 16);
}

/* Integer power by squaring in unsigned arithmetic (wraps); negative exponents give 0 unless the
   base is 1 or -1. */
long rlx_ipow(long a, long b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  ulong r = 1, x = (ulong)a;
  for (; b; b >>= 1) {
    if (b & 1) r *= x;
    x *= x;
  }
  return (long)r;
}
)";

Dialect make_opencl() {
  using D = DType;
  Dialect d = c_dialect();
  d.name = "opencl";
  for (DType t : {D::kU16, D::kU32, D::kU64}) drop_dtype(d, t);  // cpu-only for now
  // Signed overflow is undefined in OpenCL C as in C, so integer add/sub/mul run in uint/ulong.
  // clang-format off
  const DTypeRow rows[] = {
    // dtype     storage   compute   load                     store                    wrap
    {D::kBool, "uchar",  "bool",   "({x} != 0)",            "(uchar)({x})",          ""},
    {D::kI8,   "char",   "char",   "{x}",                   "{x}",                   "uint"},
    {D::kU8,   "uchar",  "uchar",  "{x}",                   "{x}",                   "uint"},
    {D::kI16,  "short",  "short",  "{x}",                   "{x}",                   "uint"},
    {D::kI32,  "int",    "int",    "{x}",                   "{x}",                   "uint"},
    {D::kI64,  "long",   "long",   "{x}",                   "{x}",                   "ulong"},
    {D::kF16,  "ushort", "float",  "rlx_f16_to_f32({x})",   "rlx_f32_to_f16({x})",   ""},
    {D::kBF16, "ushort", "float",  "rlx_bf16_to_f32({x})",  "rlx_f32_to_bf16({x})",  ""},
    {D::kF32,  "float",  "float",  "{x}",                   "{x}",                   ""},
    {D::kF64,  "double", "double", "{x}",                   "{x}",                   ""},
  };  // c64 has no row: a target must split complex values before rendering
  // clang-format on
  set_dtype_rows(d, rows);
  d.index_type = "long";
  d.int64_suffix = "L";  // long is 64 bits in OpenCL C; long long is reserved
  // The builtins are overloaded for float and double, so no suffix. rint rounds half to even
  // in the default rounding mode, like C's nearbyint.
  d.math = {{"abs", "fabs"},    {"exp", "exp"},       {"log", "log"},    {"sqrt", "sqrt"},
            {"tanh", "tanh"},   {"erf", "erf"},       {"sin", "sin"},    {"cos", "cos"},
            {"floor", "floor"}, {"ceil", "ceil"},     {"round", "rint"}, {"pow", "pow"},
            {"rem", "fmod"},    {"ipow", "rlx_ipow"}, {"fma", "fma"}};
  d.math_float_suffix = "";
  d.prelude = kPrelude;
  d.kernel_prefix = "__kernel void";
  d.buffer_params = BufferParams::kOnePerBuffer;
  d.global_space = "__global";
  d.restrict_kw = "restrict";
  d.mapping = DomainMapping::kWorkItemPerOutput;
  d.global_id = "get_global_id(0)";
  // One output a work-item (Dialect::max_outputs_per_item stays 1): four did not move MiniLM on
  // NVIDIA's OpenCL (H100, batch 32: 5.66 against 5.62 ms; 128: 17.90 against 17.75), where
  // the tiled products dominate (decision 65).
  // Cooperative kernels insist on 64-wide groups: a host that asks for another size (a device
  // limit below 64) gets CL_INVALID_WORK_GROUP_SIZE instead of wrong results.
  d.shared_array = "__local {type} {name}[{size}];";
  d.barrier = "barrier(CLK_LOCAL_MEM_FENCE);";
  d.group_index = "(long)get_group_id(0)";
  d.local_index = "get_local_id(0)";
  d.fixed_group_size_attribute = "__attribute__((reqd_work_group_size(64, 1, 1)))";
  return d;
}

}  // namespace

const Dialect& opencl_dialect() {
  static const Dialect d = make_opencl();
  return d;
}

}  // namespace rlx::sdk
