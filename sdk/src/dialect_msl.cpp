// The Metal Shading Language dialect (MSL 3.1, for the metal target). MSL is C++14 with address
// spaces, so this is the OpenCL C table with what differs changed: `kernel void` entry points
// whose buffers are `device` pointers bound with [[buffer(j)]] in kernel_buffers() order, the
// grid position and group indices as attributed parameters, `threadgroup` arrays and
// threadgroup_barrier() for the cooperative kernels (whose reductions run in SIMD groups first:
// simd_sum, simd_max), loop-kernel reductions of 32 or more elements across a SIMD group, `half`
// and `bfloat` storage, and the `precise::` math functions (Metal compiles with fast math unless
// told otherwise; the precise overloads keep their accuracy whatever the host asks for). MSL
// has no 64-bit float: f64 has no row, so a kernel that needs it fails naming it (and the target
// refuses it first).
#include <fmt/format.h>

#include <string>

#include "rlx/sdk/render.h"

namespace rlx::sdk {

namespace {

// MSL has no erf, and precise::exp/log/... have no such sibling: rlx_erf is a Maclaurin series
// below 1 (exact to f32 rounding there, where erf(x) ~ x needs relative accuracy) and 1 - erfc
// above, erfc from Abramowitz & Stegun 7.1.26 (absolute error 1.5e-7 where erf is near 1).
// rlx_ipow is the integer power of the other dialects (wrapping, by squaring).
constexpr const char* kPrelude = R"(#include <metal_stdlib>
using namespace metal;

float rlx_erf(float x) {
  const float ax = fabs(x);
  if (ax < 1.0f) {
    const float x2 = x * x;
    float term = x, sum = x;
    for (int n = 1; n < 14; ++n) {
      term = -term * x2 / (float)n;
      sum += term / (float)(2 * n + 1);
    }
    return 1.1283791670955126f * sum;
  }
  const float t = 1.0f / (1.0f + 0.3275911f * ax);
  const float poly =
      t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  const float r = 1.0f - poly * precise::exp(-ax * ax);
  return x < 0.0f ? -r : r;
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

// `kernel void name(device const T* b3 [[buffer(0)]], ..., <the index parameters>)`: Metal binds
// a buffer by the index in its attribute, which is the parameter's position (the order the host
// binds them in), not the program's buffer id the name carries.
std::optional<std::string> msl_signature(const Dialect& d, const std::string& name,
                                         const std::vector<BufferParam>& params) {
  std::string ps;
  for (size_t j = 0; j < params.size(); ++j) {
    const std::string& type = d.storage_type[static_cast<int>(params[j].dtype)];
    if (type.empty()) return std::nullopt;  // the default signature fails naming the dtype
    ps += fmt::format("{}device {}{}* b{} [[buffer({})]]", j ? ", " : "",
                      params[j].written ? "" : "const ", type, params[j].storage, j);
  }
  for (const std::string& extra : d.extra_params) ps += (ps.empty() ? "" : ", ") + extra;
  return fmt::format("{} {}({})", d.kernel_prefix, name, ps);
}

Dialect make_msl() {
  using D = DType;
  Dialect d = opencl_dialect();  // the same scalar names (char, uchar, short, long, ...)
  d.name = "msl";
  // MSL has ushort/uint/ulong too, but the other GPU dialects keep the unsigned wide types
  // cpu-only, and the target's suite checks them as they do.
  // clang-format off
  const DTypeRow rows[] = {
    // dtype     storage   compute   load            store             wrap
    {D::kBool, "uchar",  "bool",   "({x} != 0)",   "(uchar)({x})",   ""},
    {D::kI8,   "char",   "char",   "{x}",          "{x}",            "uint"},
    {D::kU8,   "uchar",  "uchar",  "{x}",          "{x}",            "uint"},
    {D::kI16,  "short",  "short",  "{x}",          "{x}",            "uint"},
    {D::kI32,  "int",    "int",    "{x}",          "{x}",            "uint"},
    {D::kI64,  "long",   "long",   "{x}",          "{x}",            "ulong"},
    // Metal's float -> half and float -> bfloat conversions round to nearest even, as the
    // renderer's semantics ask (render.h).
    {D::kF16,  "half",   "float",  "float({x})",   "half({x})",      ""},
    {D::kBF16, "bfloat", "float",  "float({x})",   "bfloat({x})",    ""},
    {D::kF32,  "float",  "float",  "{x}",          "{x}",            ""},
  };  // no f64 (MSL has no double) and no c64 (a target splits complex values first)
  // clang-format on
  set_dtype_rows(d, rows);
  drop_dtype(d, D::kF64);
  d.index_type = "long";
  d.int64_suffix = "L";
  d.float64_suffix = "";
  // Overloaded for float and half; precise:: is what fast math cannot loosen.
  d.math = {{"abs", "fabs"},
            {"exp", "precise::exp"},
            {"log", "precise::log"},
            {"sqrt", "precise::sqrt"},
            {"tanh", "precise::tanh"},
            {"erf", "rlx_erf"},
            {"sin", "precise::sin"},
            {"cos", "precise::cos"},
            {"floor", "floor"},
            {"ceil", "ceil"},
            {"round", "rint"},
            {"pow", "precise::pow"},
            {"rem", "precise::fmod"},
            {"ipow", "rlx_ipow"},
            {"fma", "fma"}};
  d.math_float_suffix = "";
  d.prelude = kPrelude;
  d.kernel_prefix = "kernel void";
  d.buffer_params = BufferParams::kOnePerBuffer;
  d.global_space = "device";
  d.restrict_kw = "";
  // The three indices a kernel may use, always in this order, so a host (or the tests' C++
  // stand-in) calls every kernel alike.
  d.extra_params = {"uint rlx_gid [[thread_position_in_grid]]",
                    "uint rlx_lid [[thread_position_in_threadgroup]]",
                    "uint rlx_group [[threadgroup_position_in_grid]]"};
  d.mapping = DomainMapping::kWorkItemPerOutput;
  d.global_id = "(long)rlx_gid";
  d.shared_array = "threadgroup {type} {name}[{size}];";
  d.shared_at_module_scope = false;  // MSL declares threadgroup arrays in the kernel's scope
  d.barrier = "threadgroup_barrier(mem_flags::mem_threadgroup);";
  d.group_index = "(long)rlx_group";
  d.local_index = "rlx_lid";
  // [[max_total_threads_per_threadgroup(64)]] would go before `kernel`, where the renderer puts
  // nothing; the host sets 64 threads a group itself.
  d.fixed_group_size_attribute = "";
  // SIMD-group functions (32 lanes on Apple GPUs): the cooperative kernels' row sums and maxima
  // reduce in registers within each SIMD group, and only one value per SIMD group goes through a
  // threadgroup array. The lane and SIMD-group indices come from the
  // attributes, not from rlx_lid: the specification does not promise how a threadgroup's threads
  // are laid out over SIMD groups, and the reductions need the hardware's own grouping.
  d.simd_sum = "simd_sum({x})";
  d.simd_max = "simd_max({x})";
  d.simd_params = {"uint rlx_lane [[thread_index_in_simdgroup]]",
                   "uint rlx_simd [[simdgroup_index_in_threadgroup]]",
                   "uint rlx_simds [[simdgroups_per_threadgroup]]"};
  d.simd_lane = "rlx_lane";
  d.simd_group = "rlx_simd";
  d.simd_groups = "rlx_simds";
  d.simd_width = 32;
  // LIR reduction loops over at least 32 elements (a SIMD group's width; fewer would leave lanes
  // idle for a loop that is short anyway) run as one SIMD group per output: 32 lanes striding
  // over the row, combined by these (simd_product is in MSL's set, as MLX's Prod reduction uses).
  d.simd_min = "simd_min({x})";
  d.simd_product = "simd_product({x})";
  d.simd_reduce_min_extent = 32;
  d.render_signature = msl_signature;
  return d;
}

}  // namespace

const Dialect& msl_dialect() {
  static const Dialect d = make_msl();
  return d;
}

}  // namespace rlx::sdk
