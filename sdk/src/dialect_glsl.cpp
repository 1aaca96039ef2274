// The GLSL dialect (GLSL 4.50 for Vulkan, compiled to SPIR-V): the kernels of the vulkan target.
// GLSL has no pointers and one entry point per shader, so each kernel is its own compute shader:
// the signature hook declares the kernel's storage buffers (binding j for the j-th buffer of
// kernel_buffers()) and `void main()`, after the section marker a host splits the module at.
//
// Types: 8/16/64-bit integers come from GL_EXT_shader_explicit_arithmetic_types and their
// storage from GL_EXT_shader_8bit_storage / GL_EXT_shader_16bit_storage; glslang adds a SPIR-V
// capability only where a shader uses the type, so a device lacking one still runs every kernel
// that does not (the vulkan target refuses the dtypes its device lacks). f16/bf16 are stored as
// uint16_t bits and computed in float, like every other dialect. GLSL defines signed overflow as
// wrapping, so no wrap type is needed.
#include <fmt/format.h>

#include "rlx/core/error.h"
#include "rlx/sdk/render.h"

namespace rlx::sdk {

namespace {

// f16 widens by unpackHalf2x16, which every f16 value converts by exactly (subnormals included: the
// suite's HalfRoundingIsToNearestEven reads them back), and a driver compiles to a conversion
// instruction where the C dialect's port took branches and a loop. Narrowing stays the port of
// core/src/ir/half.cpp with GLSL's bit casts: packHalf2x16's rounding is left to the driver, and
// rlx rounds to nearest even everywhere. pow, fmod
// and erf keep C's semantics where GLSL's builtins are undefined (pow of a negative base or of
// zero) or missing (fmod, erf); tanh is guarded because some drivers compute it as a quotient of
// exponentials that overflows to NaN for large |x|.
constexpr const char* kVulkanHeader = R"(#version 450
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_16bit_storage : require
)";

// OpenGL 4.3 has no 8/16-bit storage; int64_t comes from GL_ARB_gpu_shader_int64 where the
// driver has it (the opengl target refuses i64 where it does not).
constexpr const char* kOpenGlHeader = R"(#version 430
#ifdef GL_ARB_gpu_shader_int64
#extension GL_ARB_gpu_shader_int64 : enable
#endif
)";

constexpr const char* kPrelude = R"(layout(local_size_x = 64) in;

float rlx_f16_to_f32(uint h) { return unpackHalf2x16(h).x; }

uint rlx_f32_to_f16(float f) {
  uint x = floatBitsToUint(f), ax = x & 0x7FFFFFFFu;
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

float rlx_bf16_to_f32(uint b) { return uintBitsToFloat(b << 16); }

uint rlx_f32_to_bf16(float f) {
  uint x = floatBitsToUint(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (x >> 16) | 0x40u;
  x += 0x7FFFu + ((x >> 16) & 1u);
  return x >> 16;
}

#if defined(GL_EXT_shader_explicit_arithmetic_types_int64) || defined(GL_ARB_gpu_shader_int64)
int64_t rlx_ipow(int64_t a, int64_t b) {
  if (b < 0l) return a == 1l ? 1l : a == -1l ? ((b & 1l) != 0l ? -1l : 1l) : 0l;
  uint64_t r = 1ul, x = uint64_t(a);
  for (; b != 0l; b >>= 1) {
    if ((b & 1l) != 0l) r *= x;
    x *= x;
  }
  return int64_t(r);
}
#endif

float rlx_pow(float a, float b) {
  if (b == 0.0 || a == 1.0) return 1.0;
  if (isnan(a) || isnan(b)) return a + b;
  if (a == -1.0 && isinf(b)) return 1.0;
  bool odd = abs(b) < 16777216.0 && fract(b) == 0.0 && mod(b, 2.0) == 1.0;
  bool negative = (floatBitsToUint(a) & 0x80000000u) != 0u;
  if (a == 0.0) {
    float r = b > 0.0 ? 0.0 : uintBitsToFloat(0x7F800000u);
    return negative && odd ? -r : r;
  }
  if (a < 0.0 && !isinf(b) && fract(b) != 0.0) return uintBitsToFloat(0x7FC00000u);
  float r = pow(abs(a), b);
  return a < 0.0 && odd ? -r : r;
}

float rlx_fmod(float a, float b) { return a - b * trunc(a / b); }
double rlx_fmod(double a, double b) { return a - b * trunc(a / b); }

float rlx_tanh(float x) { return abs(x) > 10.0 ? sign(x) : tanh(x); }

float rlx_erf(float x) {
  float z = abs(x), t = 1.0 / (1.0 + 0.5 * z);
  float r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
            t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
            t * (-0.82215223 + t * 0.17087277)))))))));
  return x >= 0.0 ? 1.0 - r : r - 1.0;
}
)";

std::string type_of(const Dialect& d, const DTypeTable& t, DType dt, const std::string& kernel) {
  const std::string& s = t[static_cast<int>(dt)];
  if (s.empty())
    throw Error(ErrorKind::kCompile, fmt::format("cannot render kernel {} in dialect {}: it has no "
                                                 "storage type for {}",
                                                 kernel, d.name, dtype_name(dt)));
  return s;
}

std::string glsl_signature(const Dialect& d, const std::string& kernel,
                           const std::vector<BufferParam>& params) {
  std::string s = fmt::format("{}{}\n", kShaderKernelMarker, kernel);
  const bool vulkan = d.name == "glsl";  // descriptor sets are Vulkan's; OpenGL has bindings only
  for (size_t j = 0; j < params.size(); ++j) {
    const BufferParam& b = params[j];
    s += fmt::format("layout(std430, {}binding = {}) restrict {}buffer B{} {{ {} b{}[]; }};\n",
                     vulkan ? "set = 0, " : "", j, b.written ? "" : "readonly ", b.storage,
                     type_of(d, d.storage_type, b.dtype, kernel), b.storage);
  }
  return s + "void main()";
}

bool is_signed(DType t) {
  return t == DType::kI8 || t == DType::kI16 || t == DType::kI32 || t == DType::kI64;
}

// Integer sign and remainder: GLSL has no bool arithmetic, and its `%` is undefined for negative
// operands (glslang emits OpSMod, the sign of the divisor), so C's truncated remainder is
// written out. Both keep the renderer's semantics (render.h).
std::optional<std::string> glsl_op(const Dialect& d, const OpView& v) {
  DType t = v.operand_dtype;
  if (!is_integer(t) || t == DType::kBool) return std::nullopt;
  const std::string& ty = d.compute_type[static_cast<int>(t)];
  auto lit = [&](int n) { return fmt::format("{}({})", ty, n); };
  if (v.expr.kind == lir::ExprKind::kUnary && v.expr.op == "sign") {
    const std::string& a = v.args.at(0);
    return fmt::format("({0} > {1} ? {2} : {0} < {1} ? {3} : {1})", a, lit(0), lit(1),
                       is_signed(t) ? lit(-1) : lit(0));
  }
  if (v.expr.kind == lir::ExprKind::kBinary && v.expr.op == "rem") {
    const std::string &a = v.args.at(0), &b = v.args.at(1);
    if (is_signed(t))
      return fmt::format("({1} == {2} || {1} == {3} ? {2} : {4}({0} - ({0} / {1}) * {1}))", a, b,
                         lit(0), lit(-1), ty);
    return fmt::format("({1} == {2} ? {2} : {3}({0} % {1}))", a, b, lit(0), ty);
  }
  return std::nullopt;
}

Dialect make_glsl_vulkan() {
  using D = DType;
  Dialect d = c_dialect();
  d.name = "glsl";
  for (DType t : {D::kU16, D::kU32, D::kU64}) drop_dtype(d, t);  // cpu-only for now
  // clang-format off
  const DTypeRow rows[] = {
    // dtype     storage     compute     load                           store
    {D::kBool, "uint8_t",  "bool",     "(uint({x}) != 0u)",           "uint8_t(({x}) ? 1u : 0u)"},
    {D::kI8,   "int8_t",   "int8_t",   "{x}",                         "{x}"},
    {D::kU8,   "uint8_t",  "uint8_t",  "{x}",                         "{x}"},
    {D::kI16,  "int16_t",  "int16_t",  "{x}",                         "{x}"},
    {D::kI32,  "int",      "int",      "{x}",                         "{x}"},
    {D::kI64,  "int64_t",  "int64_t",  "{x}",                         "{x}"},
    {D::kF16,  "uint16_t", "float",    "rlx_f16_to_f32(uint({x}))",   "uint16_t(rlx_f32_to_f16({x}))"},
    {D::kBF16, "uint16_t", "float",    "rlx_bf16_to_f32(uint({x}))",  "uint16_t(rlx_f32_to_bf16({x}))"},
    {D::kF32,  "float",    "float",    "{x}",                         "{x}"},
    {D::kF64,  "double",   "double",   "{x}",                         "{x}"},
  };  // c64 has no row: a target must split complex values before rendering
  // clang-format on
  set_dtype_rows(d, rows);
  // 32-bit indices: a storage buffer holds at most maxStorageBufferRange bytes (2^27 on
  // lavapipe, under 2^32 everywhere), so every element offset fits, and a device without
  // shaderInt64 still runs kernels that use no i64 value.
  d.index_type = "int";
  d.cast = "{type}({x})";
  d.float_suffix = "f";
  d.float64_suffix = "lf";  // a bare 0.1 is a float in GLSL: f64 constants would lose bits
  d.int64_suffix = "l";
  d.infinity = "uintBitsToFloat(0x7F800000u)";
  d.nan = "uintBitsToFloat(0x7FC00000u)";
  d.declare = "{type} {name} = {x};";
  d.declare_mutable = "{type} {name} = {x};";
  d.loop = "for ({type} {var} = 0; {var} < {end}; ++{var}) {{";
  // Builtins are overloaded (no suffix). GLSL has exp, log, tanh, sin, cos and pow for float
  // only: the vulkan target refuses them on f64 rather than computing them in f32.
  d.math = {{"abs", "abs"},       {"exp", "exp"},       {"log", "log"},         {"sqrt", "sqrt"},
            {"tanh", "rlx_tanh"}, {"erf", "rlx_erf"},   {"sin", "sin"},         {"cos", "cos"},
            {"floor", "floor"},   {"ceil", "ceil"},     {"round", "roundEven"}, {"pow", "rlx_pow"},
            {"rem", "rlx_fmod"},  {"ipow", "rlx_ipow"}, {"fma", "fma"}};
  d.math_float_suffix = "";
  d.prelude = std::string(kVulkanHeader) + kPrelude;
  d.kernel_prefix = "void";
  d.buffer_params = BufferParams::kOnePerBuffer;
  d.global_space = "";
  d.restrict_kw = "";
  d.mapping = DomainMapping::kWorkItemPerOutput;
  // Groups of 64 on a 2D grid: x up to the device's limit, y rows of x groups.
  d.global_id = "int(gl_GlobalInvocationID.y * (gl_NumWorkGroups.x * 64u) + gl_GlobalInvocationID.x)";
  // barrier() synchronises execution; memoryBarrierShared() before it orders the shared writes,
  // which not every GLSL version's wording promises barrier() alone does.
  d.shared_array = "shared {type} {name}[{size}];";
  d.shared_at_module_scope = true;
  d.barrier = "memoryBarrierShared(); barrier();";
  d.group_index = "int(gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x)";
  d.local_index = "gl_LocalInvocationIndex";
  d.render_op = glsl_op;
  d.render_signature = glsl_signature;
  return d;
}

// GLSL 4.30 for OpenGL: the Vulkan table without what OpenGL lacks (8/16-bit storage and
// arithmetic types). bool, f16 and bf16 live in buffers of uint words, packed as the host lays
// them out (bytes, halves): read by shift and mask, written with atomicAnd/atomicOr because
// neighbouring invocations share a word. i8, u8 and i16 have no row (no 8/16-bit arithmetic
// type to wrap in).
Dialect make_glsl_opengl() {
  Dialect d = make_glsl_vulkan();
  d.name = "glsl430";
  for (DType t : {DType::kI8, DType::kU8, DType::kI16}) {
    int i = static_cast<int>(t);
    d.storage_type[i] = d.compute_type[i] = d.load[i] = d.store[i] = "";
  }
  const std::string byte_read = "(({ptr}[({i}) >> 2] >> ((({i}) & 3) * 8)) & 0xFFu)";
  const std::string byte_write =
      "atomicAnd({ptr}[({i}) >> 2], ~(0xFFu << ((({i}) & 3) * 8))); "
      "atomicOr({ptr}[({i}) >> 2], ({x}) << ((({i}) & 3) * 8));";
  const std::string half_read = "(({ptr}[({i}) >> 1] >> ((({i}) & 1) * 16)) & 0xFFFFu)";
  const std::string half_write =
      "atomicAnd({ptr}[({i}) >> 1], ~(0xFFFFu << ((({i}) & 1) * 16))); "
      "atomicOr({ptr}[({i}) >> 1], ({x}) << ((({i}) & 1) * 16));";
  struct Row {
    DType dtype;
    const char *load, *store;
    bool byte;
  };
  const Row rows[] = {{DType::kBool, "({x} != 0u)", "(({x}) ? 1u : 0u)", true},
                      {DType::kF16, "rlx_f16_to_f32({x})", "rlx_f32_to_f16({x})", false},
                      {DType::kBF16, "rlx_bf16_to_f32({x})", "rlx_f32_to_bf16({x})", false}};
  for (const Row& r : rows) {
    int i = static_cast<int>(r.dtype);
    d.storage_type[i] = "uint";
    d.load[i] = r.load;
    d.store[i] = r.store;
    d.load_element[i] = r.byte ? byte_read : half_read;
    d.store_element[i] = r.byte ? byte_write : half_write;
  }
  d.prelude = std::string(kOpenGlHeader) + kPrelude;
  return d;
}

}  // namespace

const Dialect& glsl_opengl_dialect() {
  static const Dialect d = make_glsl_opengl();
  return d;
}

const Dialect& glsl_vulkan_dialect() {
  static const Dialect d = make_glsl_vulkan();
  return d;
}

}  // namespace rlx::sdk
