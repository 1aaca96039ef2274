// The C dialect: C99 compiled by the system compiler (the cpu target's kernels, and the base that
// cortex-m and hexagon start from). A new language copies this table and changes what differs.
#include "rlx/sdk/render.h"

namespace rlx::sdk {

namespace {

// f16/bf16 conversions are ports of core/src/ir/half.cpp (round to nearest even, NaN kept quiet) so
// that generated kernels round exactly like the host. Bit casts go through memcpy, which is
// well defined in C and compiles to a register move.
constexpr const char* kPrelude = R"(#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t rlx_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float rlx_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* Branch-free, so a compiler vectorises loops that read f16: the exponent is rebiased by 112
   (by 224 for inf/NaN), and a subnormal half (or zero) is mant * 2^-24, exact in float. */
static inline float rlx_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  uint32_t normal = ((exp + 112u + (exp == 0x1Fu) * 112u) << 23) | (mant << 13);
  uint32_t small = rlx_f32_bits((float)mant * 5.9604644775390625e-8f);
  uint32_t is_small = 0u - (uint32_t)(exp == 0u);
  return rlx_bits_f32(sign | (small & is_small) | (normal & ~is_small));
}

/* Branch-free too: normal halves (and the overflow to inf, which the carry into the exponent
   reaches) rebias and round to nearest even in integer arithmetic; below 2^-14, adding 0.5 makes
   the float sum's last mantissa bits the subnormal half, rounded to nearest even by the addition. */
static inline uint16_t rlx_f32_to_f16(float f) {
  uint32_t x = rlx_f32_bits(f), ax = x & 0x7FFFFFFFu;
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t normal = (ax + 0xC8000FFFu + ((ax >> 13) & 1u)) >> 13;
  uint32_t small = rlx_f32_bits(rlx_bits_f32(ax) + 0.5f) - 0x3F000000u;
  uint32_t nan = 0x7E00u | ((ax >> 13) & 0x3FFu);
  uint32_t bits = ax > 0x7F800000u ? nan : ax >= 0x477FF000u ? 0x7C00u : ax >= 0x38800000u ? normal : small;
  return (uint16_t)(sign | bits);
}

static inline float rlx_bf16_to_f32(uint16_t b) { return rlx_bits_f32((uint32_t)b << 16); }

static inline uint16_t rlx_f32_to_bf16(float f) {
  uint32_t x = rlx_f32_bits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((x >> 16) | 0x40u);
  x += 0x7FFFu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

/* Integer power by squaring in unsigned arithmetic (wraps); negative exponents give 0 unless the
   base is 1 or -1. */
static inline int64_t rlx_ipow(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  uint64_t r = 1, x = (uint64_t)a;
  for (; b; b >>= 1) {
    if (b & 1) r *= x;
    x *= x;
  }
  return (int64_t)r;
}
)";

Dialect make_c() {
  using D = DType;
  Dialect d;
  d.name = "c";
  // bool is stored as one byte and read as `!= 0`, so a byte other than 0 or 1 from the host is
  // still a valid bool (reading it as _Bool would be undefined). Integer arithmetic wraps in 32
  // bits for the narrow types too: uint16_t * uint16_t would promote to (signed) int and could
  // overflow it.
  // clang-format off
  const DTypeRow rows[] = {
    // dtype     storage     compute    load                     store                    wrap
    {D::kBool, "uint8_t",  "bool",    "({x} != 0)",            "(uint8_t)({x})",        ""},
    {D::kI8,   "int8_t",   "int8_t",  "{x}",                   "{x}",                   "uint32_t"},
    {D::kU8,   "uint8_t",  "uint8_t", "{x}",                   "{x}",                   "uint32_t"},
    {D::kI16,  "int16_t",  "int16_t", "{x}",                   "{x}",                   "uint32_t"},
    {D::kI32,  "int32_t",  "int32_t", "{x}",                   "{x}",                   "uint32_t"},
    {D::kI64,  "int64_t",  "int64_t", "{x}",                   "{x}",                   "uint64_t"},
    {D::kF16,  "uint16_t", "float",   "rlx_f16_to_f32({x})",   "rlx_f32_to_f16({x})",   ""},
    {D::kBF16, "uint16_t", "float",   "rlx_bf16_to_f32({x})",  "rlx_f32_to_bf16({x})",  ""},
    {D::kF32,  "float",    "float",   "{x}",                   "{x}",                   ""},
    {D::kF64,  "double",   "double",  "{x}",                   "{x}",                   ""},
    {D::kU16,  "uint16_t", "uint16_t", "{x}",                  "{x}",                   "uint32_t"},
    {D::kU32,  "uint32_t", "uint32_t", "{x}",                  "{x}",                   "uint32_t"},
    {D::kU64,  "uint64_t", "uint64_t", "{x}",                  "{x}",                   "uint64_t"},
  };  // c64 has no row: a target must split complex values before rendering
  // clang-format on
  set_dtype_rows(d, rows);
  d.index_type = "int64_t";
  d.cast = "(({type})({x}))";
  d.float_suffix = "f";
  d.int64_suffix = "LL";
  d.infinity = "INFINITY";
  d.nan = "NAN";
  d.declare = "const {type} {name} = {x};";
  d.declare_mutable = "{type} {name} = {x};";
  d.loop = "for ({type} {var} = 0; {var} < {end}; ++{var}) {{";
  d.comment = "// ";
  d.math = {{"abs", "fabs"},    {"exp", "exp"},      {"log", "log"},         {"sqrt", "sqrt"},
            {"tanh", "tanh"},   {"erf", "erf"},      {"sin", "sin"},         {"cos", "cos"},
            {"floor", "floor"}, {"ceil", "ceil"},    {"round", "nearbyint"}, {"pow", "pow"},
            {"rem", "fmod"},    {"ipow", "rlx_ipow"}};
  d.math_float_suffix = "f";
  d.prelude = kPrelude;
  d.kernel_prefix = "void";
  d.buffer_params = BufferParams::kPointerTable;
  d.restrict_kw = "restrict";
  d.mapping = DomainMapping::kSerialLoops;
  return d;
}

}  // namespace

const Dialect& c_dialect() {
  static const Dialect d = make_c();
  return d;
}

void set_dtype_rows(Dialect& d, std::span<const DTypeRow> rows) {
  for (const DTypeRow& r : rows) {
    const auto i = static_cast<size_t>(r.dtype);
    d.storage_type[i] = r.storage;
    d.compute_type[i] = r.compute;
    d.load[i] = r.load;
    d.store[i] = r.store;
    d.wrap_type[i] = r.wrap;
  }
}

void drop_dtype(Dialect& d, DType t) {
  const auto i = static_cast<size_t>(t);
  for (DTypeTable* table : {&d.storage_type, &d.compute_type, &d.load, &d.store, &d.wrap_type,
                            &d.load_element, &d.store_element})
    (*table)[i].clear();
}

}  // namespace rlx::sdk
