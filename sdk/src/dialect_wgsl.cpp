// The WGSL dialect (WebGPU Shading Language): the kernels of the webgpu target, run by
// wgpu-native and, through the generated ES module, by browsers. Like GLSL, WGSL has no pointer
// parameters, so each kernel is its own compute entry point in a section of the module: the
// signature hook declares the kernel's storage buffers at @group(0) @binding(j) (the j-th
// buffer of kernel_buffers()) and the entry point, named after the kernel.
//
// What WGSL changes in the renderer's text: `let`/`var` declarations with the type after the
// name, no conditional operator (the renderer's `conditional` is select(f, t, c), which
// evaluates both branches: every branch is a local or a bounds-checked read, and WebGPU clamps
// out-of-range storage reads, so nothing traps), no implicit conversions (indices are i32 and
// index expressions convert from it), and no infinity or NaN literals (a constant expression
// may not be either, so they come from bit patterns held in a `var`).
//
// Types: WGSL has no 8/16-bit storage, so bool, f16 and bf16 are packed in u32 words as the
// host lays them out (bytes, halves), read by shift and mask and written with atomicAnd/atomicOr
// because neighbouring invocations share a word; their buffers are array<atomic<u32>>. f16/bf16
// compute in f32 as in every dialect (no shader-f16 needed). i8, u8 and i16 have no row. i64
// and f64 are wgpu-native's extension types (`i64`, `f64`, literals 1li, 0.1lf) that exist only
// on a device with shader-int64 / shader-f64: the prelude never mentions them, so kernels
// without such values run everywhere, and a target refuses them where the device lacks them.
// Signed overflow wraps in WGSL and integer division by zero does not trap, so no wrap type.
#include <fmt/format.h>

#include "rlx/core/error.h"
#include "rlx/sdk/render.h"

namespace rlx::sdk {

namespace {

// Conversions are the GLSL dialect's (ports of core/src/ir/half.cpp). pow, fmod and erf keep C's
// semantics where WGSL's builtins are undefined (pow of a negative base or of zero) or missing.
constexpr const char* kPrelude = R"(// rlx WGSL kernels: 64 invocations per workgroup, a 2D grid of workgroups.
fn rlx_inf() -> f32 { var bits = 0x7F800000u; return bitcast<f32>(bits); }
fn rlx_nan() -> f32 { var bits = 0x7FC00000u; return bitcast<f32>(bits); }

fn rlx_f16_to_f32(h: u32) -> f32 {
  let sign = (h & 0x8000u) << 16u;
  let e = (h >> 10u) & 0x1Fu;
  var mant = h & 0x3FFu;
  var bits: u32;
  if (e == 0x1Fu) {
    bits = sign | 0x7F800000u | (mant << 13u);
  } else if (e != 0u) {
    bits = sign | ((e + 112u) << 23u) | (mant << 13u);
  } else if (mant == 0u) {
    bits = sign;
  } else {
    var ex = 113u;
    while ((mant & 0x400u) == 0u) { mant = mant << 1u; ex = ex - 1u; }
    bits = sign | (ex << 23u) | ((mant & 0x3FFu) << 13u);
  }
  return bitcast<f32>(bits);
}

fn rlx_f32_to_f16(f: f32) -> u32 {
  let x = bitcast<u32>(f);
  var ax = x & 0x7FFFFFFFu;
  let sign = (x >> 16u) & 0x8000u;
  if (ax > 0x7F800000u) { return sign | 0x7E00u | ((ax >> 13u) & 0x3FFu); }
  if (ax >= 0x477FF000u) { return sign | 0x7C00u; }
  if (ax >= 0x38800000u) {
    ax = ax + 0xC8000FFFu + ((ax >> 13u) & 1u);
    return sign | ((ax >> 13u) & 0xFFFFu);
  }
  if (ax <= 0x33000000u) { return sign; }
  let e = ax >> 23u;
  let m = (ax & 0x7FFFFFu) | 0x800000u;
  let shift = 126u - e;
  var r = m >> shift;
  let rest = m & ((1u << shift) - 1u);
  let mid = 1u << (shift - 1u);
  if (rest > mid || (rest == mid && (r & 1u) != 0u)) { r = r + 1u; }
  return sign | r;
}

fn rlx_bf16_to_f32(b: u32) -> f32 { return bitcast<f32>(b << 16u); }

fn rlx_f32_to_bf16(f: f32) -> u32 {
  var x = bitcast<u32>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) { return (x >> 16u) | 0x40u; }
  x = x + 0x7FFFu + ((x >> 16u) & 1u);
  return x >> 16u;
}

fn rlx_ipow(a: i32, b0: i32) -> i32 {
  var b = b0;
  if (b < 0) {
    if (a == 1) { return 1; }
    if (a == -1) { return select(1, -1, (b & 1) != 0); }
    return 0;
  }
  var r = 1u;
  var x = bitcast<u32>(a);
  while (b != 0) {
    if ((b & 1) != 0) { r = r * x; }
    x = x * x;
    b = b >> 1u;
  }
  return bitcast<i32>(r);
}

fn rlx_pow(a: f32, b: f32) -> f32 {
  if (b == 0.0 || a == 1.0) { return 1.0; }
  if (!(a == a) || !(b == b)) { return a + b; }
  if (a == -1.0 && abs(b) == rlx_inf()) { return 1.0; }
  let odd = abs(b) < 16777216.0 && fract(b) == 0.0 && b - 2.0 * floor(b * 0.5) == 1.0;
  let negative = (bitcast<u32>(a) & 0x80000000u) != 0u;
  if (a == 0.0) {
    var r = 0.0;
    if (b < 0.0) { r = rlx_inf(); }
    if (negative && odd) { return -r; }
    return r;
  }
  if (a < 0.0 && abs(b) != rlx_inf() && fract(b) != 0.0) { return rlx_nan(); }
  let r = pow(abs(a), b);
  if (a < 0.0 && odd) { return -r; }
  return r;
}

fn rlx_fmod(a: f32, b: f32) -> f32 { return a - b * trunc(a / b); }

fn rlx_tanh(x: f32) -> f32 { return select(tanh(x), sign(x), abs(x) > 10.0); }

fn rlx_erf(x: f32) -> f32 {
  let z = abs(x);
  let t = 1.0 / (1.0 + 0.5 * z);
  let r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
          t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
          t * (-0.82215223 + t * 0.17087277)))))))));
  return select(r - 1.0, 1.0 - r, x >= 0.0);
}
)";

bool packed(DType t) { return t == DType::kBool || t == DType::kF16 || t == DType::kBF16; }

std::string wgsl_signature(const Dialect& d, const std::string& kernel,
                           const std::vector<BufferParam>& params) {
  std::string s = fmt::format("{}{}\n", kShaderKernelMarker, kernel);
  for (size_t j = 0; j < params.size(); ++j) {
    const BufferParam& b = params[j];
    const std::string& t = d.storage_type[static_cast<int>(b.dtype)];
    if (t.empty())
      throw Error(ErrorKind::kCompile,
                  fmt::format("cannot render kernel {} in dialect {}: it has no storage type for {}",
                              kernel, d.name, dtype_name(b.dtype)));
    // Packed buffers are atomic words (written with atomics, so read that way too).
    bool atomic = packed(b.dtype);
    s += fmt::format("@group(0) @binding({}) var<storage, {}> b{}: array<{}>;\n", j,
                     b.written || atomic ? "read_write" : "read", b.storage,
                     atomic ? "atomic<u32>" : t);
  }
  return s + fmt::format(
                 "@compute @workgroup_size(64)\nfn {}(@builtin(global_invocation_id) rlx_id: "
                 "vec3<u32>, @builtin(num_workgroups) rlx_groups: vec3<u32>)",
                 kernel);
}

// What the table cannot say: integer pow (rlx_ipow64 for i64, see kWgslInt64Helpers), f64
// remainder (no f64 helper in the prelude for the same reason), and integer sign (WGSL has no
// bool arithmetic).
std::optional<std::string> wgsl_op(const Dialect& d, const OpView& v) {
  DType t = v.operand_dtype;
  const lir::Expr& e = v.expr;
  if (e.kind == lir::ExprKind::kBinary && e.op == "pow" && is_integer(t)) {
    if (t != DType::kI32 && t != DType::kI64)
      throw Error(ErrorKind::kCompile,
                  fmt::format("cannot render integer pow on {} in dialect {}", dtype_name(t), d.name));
    // rlx_ipow64 is not in the prelude (which must compile without i64): a host adds
    // kWgslInt64Helpers to the kernels that call it.
    return fmt::format("{}({}, {})", t == DType::kI64 ? "rlx_ipow64" : "rlx_ipow", v.args.at(0), v.args.at(1));
  }
  if (e.kind == lir::ExprKind::kBinary && e.op == "rem" && t == DType::kF64)
    return fmt::format("({0} - {1} * trunc({0} / {1}))", v.args.at(0), v.args.at(1));
  if (e.kind == lir::ExprKind::kUnary && e.op == "sign" && is_integer(t)) {
    const std::string& ty = d.compute_type[static_cast<int>(t)];
    return fmt::format("select(select({1}(0), {1}(-1), {0} < {1}(0)), {1}(1), {0} > {1}(0))",
                       v.args.at(0), ty);
  }
  return std::nullopt;
}

Dialect make_wgsl() {
  using D = DType;
  Dialect d = c_dialect();
  d.name = "wgsl";
  for (int i = 0; i < kNumDTypes; ++i)
    d.storage_type[i] = d.compute_type[i] = d.load[i] = d.store[i] = d.wrap_type[i] = "";
  // clang-format off
  const DTypeRow rows[] = {
    // dtype     storage  compute  load                      store
    {D::kBool, "u32",   "bool",  "({x} != 0u)",            "select(0u, 1u, {x})"},
    {D::kI32,  "i32",   "i32",   "{x}",                    "{x}"},
    {D::kI64,  "i64",   "i64",   "{x}",                    "{x}"},
    {D::kF16,  "u32",   "f32",   "rlx_f16_to_f32({x})",    "rlx_f32_to_f16({x})"},
    {D::kBF16, "u32",   "f32",   "rlx_bf16_to_f32({x})",   "rlx_f32_to_bf16({x})"},
    {D::kF32,  "f32",   "f32",   "{x}",                    "{x}"},
    {D::kF64,  "f64",   "f64",   "{x}",                    "{x}"},
  };  // i8, u8, i16 (no 8/16-bit integer type to wrap in) and c64 have no row
  // clang-format on
  set_dtype_rows(d, rows);
  const std::string byte_read =
      "((atomicLoad(&{ptr}[({i}) >> 2u]) >> (u32(({i}) & 3) * 8u)) & 0xFFu)";
  const std::string byte_write =
      "atomicAnd(&{ptr}[({i}) >> 2u], ~(0xFFu << (u32(({i}) & 3) * 8u))); "
      "atomicOr(&{ptr}[({i}) >> 2u], ({x}) << (u32(({i}) & 3) * 8u));";
  const std::string half_read =
      "((atomicLoad(&{ptr}[({i}) >> 1u]) >> (u32(({i}) & 1) * 16u)) & 0xFFFFu)";
  const std::string half_write =
      "atomicAnd(&{ptr}[({i}) >> 1u], ~(0xFFFFu << (u32(({i}) & 1) * 16u))); "
      "atomicOr(&{ptr}[({i}) >> 1u], ({x}) << (u32(({i}) & 1) * 16u));";
  for (DType t : {D::kBool, D::kF16, D::kBF16}) {
    int i = static_cast<int>(t);
    d.load_element[i] = t == D::kBool ? byte_read : half_read;
    d.store_element[i] = t == D::kBool ? byte_write : half_write;
  }
  // 32-bit indices: a storage binding holds at most maxStorageBufferBindingSize bytes (under
  // 2^32), so every element offset fits.
  d.index_type = "i32";
  d.index_dtype = D::kI32;
  d.cast = "{type}({x})";
  d.float_suffix = "f";
  d.float64_suffix = "lf";
  d.int64_suffix = "li";
  d.infinity = "rlx_inf()";
  d.nan = "rlx_nan()";
  d.conditional = "select({f}, {t}, {c})";
  // naga compiles `!=` on floats as an ordered comparison (false when either side is NaN).
  d.is_nan = "!({x} == {x})";
  d.declare = "let {name}: {type} = {x};";
  d.declare_mutable = "var {name}: {type} = {x};";
  d.loop = "for (var {var}: {type} = 0; {var} < {end}; {var}++) {{";
  d.comment = "// ";
  // Builtins are overloaded (no suffix); tanh, erf, pow and rem are the prelude's f32 helpers
  // (a target refuses them on f64, as on GLSL).
  d.math = {{"abs", "abs"},       {"exp", "exp"},     {"log", "log"},     {"sqrt", "sqrt"},
            {"tanh", "rlx_tanh"}, {"erf", "rlx_erf"}, {"sin", "sin"},     {"cos", "cos"},
            {"floor", "floor"},   {"ceil", "ceil"},   {"round", "round"}, {"pow", "rlx_pow"},
            {"rem", "rlx_fmod"},  {"fma", "fma"}};
  d.math_float_suffix = "";
  d.prelude = kPrelude;
  d.kernel_prefix = "fn";
  d.buffer_params = BufferParams::kOnePerBuffer;
  d.global_space = "";
  d.restrict_kw = "";
  d.mapping = DomainMapping::kWorkItemPerOutput;
  // Groups of 64 on a 2D grid: x up to the device's limit, y rows of x groups.
  d.global_id = "i32(rlx_id.y * (rlx_groups.x * 64u) + rlx_id.x)";
  // The group and local indices come from global_invocation_id (the entry point's builtins),
  // by global_id's rule; WGSL's uniformity analysis sees them as non-uniform, so cooperative
  // kernels never branch on them around a barrier.
  d.shared_array = "var<workgroup> {name}: array<{type}, {size}>;";
  d.private_array = "var {name}: array<{type}, {size}>;";
  d.shared_at_module_scope = true;
  d.barrier = "workgroupBarrier();";
  d.group_index = "i32(rlx_id.y * rlx_groups.x + rlx_id.x / 64u)";
  d.local_index = "rlx_id.x % 64u";
  d.float_accumulator.reset();
  d.render_op = wgsl_op;
  d.render_signature = wgsl_signature;
  return d;
}

}  // namespace

const char* const kWgslInt64Helpers = R"(fn rlx_ipow64(a: i64, b0: i64) -> i64 {
  var b = b0;
  if (b < 0li) {
    if (a == 1li) { return 1li; }
    if (a == -1li) { return select(1li, -1li, (b & 1li) != 0li); }
    return 0li;
  }
  var r = 1li;
  var x = a;
  while (b != 0li) {
    if ((b & 1li) != 0li) { r = r * x; }
    x = x * x;
    b = b >> 1u;
  }
  return r;
}
)";

const Dialect& wgsl_dialect() {
  static const Dialect d = make_wgsl();
  return d;
}

}  // namespace rlx::sdk
