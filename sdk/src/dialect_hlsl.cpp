// The HLSL dialect (Shader Model 6.2 compute shaders, `-enable-16bit-types` for DXC): the kernels
// of the directx target. Like GLSL, each kernel is its own shader after a section marker, with
// its buffers declared at file scope: RWStructuredBuffer<T> at register u<j> (and Vulkan binding
// j, so the same text runs through glslang's HLSL front end on Vulkan).
//
// HLSL has no 8-bit types, so bool, i8 and u8 have no row (the directx target refuses them).
// f16/bf16 are stored as uint16_t bits and computed in float, as in every dialect. HLSL has no
// built-in for the number of groups, so the 2D grid's row width is fixed: hosts dispatch at most
// 65535 groups (the D3D12 and Vulkan minimum limit) along x.
#include <fmt/format.h>

#include "rlx/core/error.h"
#include "rlx/sdk/render.h"

namespace rlx::sdk {

namespace {

constexpr const char* kPrelude = R"(// HLSL, Shader Model 6.2 (dxc -T cs_6_2 -E main -enable-16bit-types)

float rlx_f16_to_f32(uint h) {
  uint sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  uint bits;
  if (e == 0x1Fu) {
    bits = sign | 0x7F800000u | (mant << 13);
  } else if (e != 0u) {
    bits = sign | ((e + 112u) << 23) | (mant << 13);
  } else if (mant == 0u) {
    bits = sign;
  } else {
    uint ex = 113u;
    while ((mant & 0x400u) == 0u) { mant <<= 1; --ex; }
    bits = sign | (ex << 23) | ((mant & 0x3FFu) << 13);
  }
  return asfloat(bits);
}

uint rlx_f32_to_f16(float f) {
  uint x = asuint(f), ax = x & 0x7FFFFFFFu;
  uint sign = (x >> 16) & 0x8000u;
  if (ax > 0x7F800000u) return sign | 0x7E00u | ((ax >> 13) & 0x3FFu);
  if (ax >= 0x477FF000u) return sign | 0x7C00u;
  if (ax >= 0x38800000u) {
    ax += 0xC8000FFFu + ((ax >> 13) & 1u);
    return sign | ((ax >> 13) & 0xFFFFu);
  }
  if (ax <= 0x33000000u) return sign;
  uint e = ax >> 23, m = (ax & 0x7FFFFFu) | 0x800000u, shift = 126u - e;
  uint r = m >> shift, rem = m & ((1u << shift) - 1u), mid = 1u << (shift - 1u);
  if (rem > mid || (rem == mid && (r & 1u) != 0u)) ++r;
  return sign | r;
}

float rlx_bf16_to_f32(uint b) { return asfloat(b << 16); }

uint rlx_f32_to_bf16(float f) {
  uint x = asuint(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (x >> 16) | 0x40u;
  x += 0x7FFFu + ((x >> 16) & 1u);
  return x >> 16;
}

// glslang's HLSL front end (used to run these kernels on Vulkan) has no int64_t and defines
// RLX_GLSLANG; dxc sees the function.
#ifndef RLX_GLSLANG
int64_t rlx_ipow(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) != 0 ? -1 : 1) : 0;
  uint64_t r = 1, x = (uint64_t)a;
  for (; b != 0; b >>= 1) {
    if ((b & 1) != 0) r *= x;
    x *= x;
  }
  return (int64_t)r;
}
#endif

float rlx_pow(float a, float b) {
  if (b == 0.0f || a == 1.0f) return 1.0f;
  if (isnan(a) || isnan(b)) return a + b;
  if (a == -1.0f && isinf(b)) return 1.0f;
  bool odd = abs(b) < 16777216.0f && frac(b) == 0.0f && b - 2.0f * floor(b * 0.5f) == 1.0f;
  bool negative = (asuint(a) & 0x80000000u) != 0u;
  if (a == 0.0f) {
    float r = b > 0.0f ? 0.0f : asfloat(0x7F800000u);
    return negative && odd ? -r : r;
  }
  if (a < 0.0f && !isinf(b) && frac(b) != 0.0f) return asfloat(0x7FC00000u);
  float r = pow(abs(a), b);
  return a < 0.0f && odd ? -r : r;
}

float rlx_fmod(float a, float b) { return a - b * trunc(a / b); }
double rlx_fmod(double a, double b) { return a - b * trunc(a / b); }

float rlx_tanh(float x) { return abs(x) > 10.0f ? (x > 0.0f ? 1.0f : -1.0f) : tanh(x); }

float rlx_erf(float x) {
  float z = abs(x), t = 1.0f / (1.0f + 0.5f * z);
  float r = t * exp(-z * z - 1.26551223f + t * (1.00002368f + t * (0.37409196f + t * (0.09678418f +
            t * (-0.18628806f + t * (0.27886807f + t * (-1.13520398f + t * (1.48851587f +
            t * (-0.82215223f + t * 0.17087277f)))))))));
  return x >= 0.0f ? 1.0f - r : r - 1.0f;
}
)";

std::string hlsl_signature(const Dialect& d, const std::string& kernel, const std::vector<BufferParam>& params) {
  std::string s = fmt::format("{}{}\n", kShaderKernelMarker, kernel);
  for (size_t j = 0; j < params.size(); ++j) {
    const std::string& t = d.storage_type[static_cast<int>(params[j].dtype)];
    if (t.empty())
      throw Error(ErrorKind::kCompile, fmt::format("cannot render kernel {} in dialect hlsl: it has no storage "
                                                   "type for {}",
                                                   kernel, dtype_name(params[j].dtype)));
    s += fmt::format("[[vk::binding({0}, 0)]] RWStructuredBuffer<{1}> b{2} : register(u{0});\n", j, t,
                     params[j].storage);
  }
  return s + "[numthreads(64, 1, 1)]\nvoid main(uint3 rlx_tid : SV_DispatchThreadID)";
}

bool is_signed(DType t) { return t == DType::kI16 || t == DType::kI32 || t == DType::kI64; }

// Integer sign and remainder written out, as in GLSL: HLSL's `%` on negative operands is not
// C's everywhere, and bool arithmetic is not allowed.
std::optional<std::string> hlsl_op(const Dialect& d, const OpView& v) {
  DType t = v.operand_dtype;
  if (!is_integer(t) || t == DType::kBool) return std::nullopt;
  const std::string& ty = d.compute_type[static_cast<int>(t)];
  auto lit = [&](int n) { return fmt::format("(({})({}))", ty, n); };
  if (v.expr.kind == lir::ExprKind::kUnary && v.expr.op == "sign")
    return fmt::format("({0} > {1} ? {2} : {0} < {1} ? {3} : {1})", v.args.at(0), lit(0), lit(1),
                       is_signed(t) ? lit(-1) : lit(0));
  if (v.expr.kind == lir::ExprKind::kBinary && v.expr.op == "rem") {
    const std::string &a = v.args.at(0), &b = v.args.at(1);
    if (is_signed(t))
      return fmt::format("({1} == {2} || {1} == {3} ? {2} : (({4})({0} - ({0} / {1}) * {1})))", a, b, lit(0),
                         lit(-1), ty);
    return fmt::format("({1} == {2} ? {2} : (({3})({0} % {1})))", a, b, lit(0), ty);
  }
  return std::nullopt;
}

Dialect make_hlsl() {
  using D = DType;
  Dialect d = c_dialect();
  d.name = "hlsl";
  // clang-format off
  const DTypeRow rows[] = {
    // dtype     storage     compute     load                             store
    {D::kI16,  "int16_t",  "int16_t",  "{x}",                           "{x}"},
    {D::kI32,  "int",      "int",      "{x}",                           "{x}"},
    {D::kI64,  "int64_t",  "int64_t",  "{x}",                           "{x}"},
    {D::kF16,  "uint16_t", "float",    "rlx_f16_to_f32((uint)({x}))",   "(uint16_t)(rlx_f32_to_f16({x}))"},
    {D::kBF16, "uint16_t", "float",    "rlx_bf16_to_f32((uint)({x}))",  "(uint16_t)(rlx_f32_to_bf16({x}))"},
    {D::kF32,  "float",    "float",    "{x}",                           "{x}"},
    {D::kF64,  "double",   "double",   "{x}",                           "{x}"},
  };  // no bool, i8, u8 (HLSL has no 8-bit type) and no c64
  // clang-format on
  for (int i = 0; i < kNumDTypes; ++i) {
    d.storage_type[i] = d.compute_type[i] = d.load[i] = d.store[i] = d.wrap_type[i] = "";
  }
  // bool is a compute type only (comparisons, select conditions), never stored.
  d.compute_type[static_cast<int>(D::kBool)] = "bool";
  set_dtype_rows(d, rows);
  // Signed overflow wraps in HLSL (two's complement, no undefined behaviour), so no wrap type.
  d.index_type = "int";
  d.cast = "(({type})({x}))";
  d.float_suffix = "f";
  d.float64_suffix = "L";
  d.int64_suffix = "";  // glslang and dxc read an unsuffixed literal past 32 bits as 64-bit
  d.infinity = "asfloat(0x7F800000u)";
  d.nan = "asfloat(0x7FC00000u)";
  d.declare = "{type} {name} = {x};";
  d.declare_mutable = "{type} {name} = {x};";
  d.math = {
      {"abs", "abs"},       {"exp", "exp"},       {"log", "log"},     {"sqrt", "sqrt"},
      {"tanh", "rlx_tanh"}, {"erf", "rlx_erf"},   {"sin", "sin"},     {"cos", "cos"},
      {"floor", "floor"},   {"ceil", "ceil"},     {"round", "round"}, {"pow", "rlx_pow"},
      {"rem", "rlx_fmod"},  {"ipow", "rlx_ipow"}, {"fma", "mad"}};  // HLSL's round is half to even;
                                                                    // its fma is f64-only
  d.math_float_suffix = "";
  d.prelude = kPrelude;
  d.kernel_prefix = "void";
  d.buffer_params = BufferParams::kOnePerBuffer;
  d.restrict_kw = "";
  d.mapping = DomainMapping::kWorkItemPerOutput;
  d.global_id = "int(rlx_tid.y * 4194240u + rlx_tid.x)";  // 65535 groups x 64 per grid row
  // From SV_DispatchThreadID by global_id's rule (rows of 65535 groups).
  d.shared_array = "groupshared {type} {name}[{size}];";
  d.shared_at_module_scope = true;
  d.barrier = "GroupMemoryBarrierWithGroupSync();";
  d.group_index = "int(rlx_tid.y * 65535u + rlx_tid.x / 64u)";
  d.local_index = "rlx_tid.x % 64u";
  d.render_op = hlsl_op;
  d.render_signature = hlsl_signature;
  return d;
}

}  // namespace

const Dialect& hlsl_dialect() {
  static const Dialect d = make_hlsl();
  return d;
}

}  // namespace rlx::sdk
