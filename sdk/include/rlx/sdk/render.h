// Renders LIR loop kernels as source code for C-family kernel languages (docs/architecture.md
// section 6). One renderer serves every such language: a Dialect is a table of what differs between
// them (type names, kernel signature, index builtins, address spaces, math function names) plus two
// hooks for what a table cannot say. A new language is a new table, usually a copy of another
// with a few fields changed, never a copy of the renderer (tinygrad's CStyleLanguage design).
// Shipped: c_dialect(), opencl_dialect(), cuda_dialect(), hip_dialect(), msl_dialect(), the shader
// dialects (glsl, hlsl, wgsl) below.
//
// The numeric semantics are the renderer's, not the dialect's, so every language computes the
// same thing (a hook that overrides an op must keep them):
//  * f16 and bf16 are stored as their 16-bit patterns and computed in float. Every op whose
//    result is f16/bf16 rounds it to nearest even, so a fused chain gives the bits of one
//    kernel per op. (f64 -> f16 goes through float: two roundings, off by one ulp in rare ties.)
//  * float max/min propagate NaN: if either operand is NaN the result is NaN, as in XLA, JAX and
//    PyTorch. C's fmaxf/fminf return the other operand and would hide the NaN.
//  * integer add, sub, mul and neg wrap (two's complement). Integer division and remainder by
//    zero yield 0, and INT_MIN / -1 wraps to INT_MIN (remainder 0): a kernel never traps, and
//    the compiler never sees undefined behaviour it could exploit.
//  * integer pow with a negative exponent yields 0 unless the base is 1 or -1.
//  * float -> integer conversion truncates toward zero, saturates out-of-range values and maps
//    NaN to 0; anything -> bool is `x != 0`.
//  * round is round-half-to-even (nearbyint in the default rounding mode); rem is fmod for
//    floats (sign of the dividend) and C's % for integers.
//
// Every function here is pure and thread-safe; the dialect tables are immutable after creation.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rlx/core/dtype.h"
#include "rlx/core/lir.h"

namespace rlx::sdk {

// How one kernel invocation covers the loop domain.
enum class DomainMapping {
  // One call runs the whole domain in nested loops (C on a CPU).
  kSerialLoops,
  // One work-item per output element (GPU languages): the parallel dims are flattened row-major
  // into the work-item index, and each work-item loops over the reduced dims itself. The host
  // launches work_items(kernel) items; extra items return at once.
  kWorkItemPerOutput,
  // One call runs the points [begin, end) of the parallel dims flattened row-major; the kernel
  // takes `<index_type> begin, <index_type> end` after its buffers, and the host splits
  // [0, work_items(kernel)) over its threads (C on a multicore CPU). The innermost parallel dim
  // stays a plain counted loop, so the compiler can vectorise it; each point loops over the
  // reduced dims itself.
  kPointRange,
};

// How buffers reach a kernel.
enum class BufferParams {
  // One parameter `char* const* buffers`; buffers[id] is the address of storage buffer `id`
  // (Program::storage_of: an alias reads and writes its storage's entry, so alias entries are
  // never read). Lets a host call every kernel of a program with one table.
  kPointerTable,
  // One typed pointer parameter per storage buffer the kernel touches, in the order of
  // kernel_buffers() (what OpenCL, CUDA and Metal bind).
  kOnePerBuffer,
  // One parameter `char* const* args`; args[j] is the address of the j-th storage buffer of
  // kernel_buffers(), and the pointers are named by that position too. Two kernels that differ
  // only in which buffers they touch render to the same text (but for the name), so a host can
  // compile such a body once (the layers of a transformer).
  kPositionalTable,
};

// Per-DType strings of a dialect; an empty entry means the dialect has no such type and
// rendering a kernel that needs it fails with an rlx::Error naming the kernel and dtype.
using DTypeTable = std::array<std::string, kNumDTypes>;

// What an op hook sees: the expression, the dtype of its first operand (what a comparison
// compares) and its operands, already rendered as names of locals.
struct OpView {
  const lir::Expr& expr;
  DType operand_dtype;
  const std::vector<std::string>& args;
};

// One pointer parameter of a kernel, for the signature hook.
struct BufferParam {
  int32_t storage;  // buffer id (a storage buffer: never an alias)
  DType dtype;
  bool written;  // stored to by this kernel (read-only buffers are const)
};

struct Dialect {
  std::string name;  // "c"

  // Types. Format strings take fmt named arguments, shown in braces.
  DTypeTable storage_type;  // element type of a buffer in memory ("uint16_t" for f16 in C)
  DTypeTable compute_type;  // type arithmetic runs in ("float" for f16)
  DTypeTable load;          // storage element {x} -> compute value ("rlx_f16_to_f32({x})")
  DTypeTable store;         // compute value {x} -> storage element
  // A compute value already exact in the storage type (every 16-bit float expression is rounded
  // by the op that makes it) -> storage element, where that is cheaper than `store`'s rounding
  // (the bits of a bf16-exact float are its top half). Empty: `store`.
  DTypeTable store_exact;
  // Integer add/sub/mul/neg run in this unsigned type so that overflow wraps; empty: the
  // language already defines signed overflow as wrapping.
  DTypeTable wrap_type;
  // Sub-word elements in buffers of 32-bit words (OpenGL has no 8/16-bit storage): where set,
  // element {i} of buffer {ptr} is read as load_element ("({ptr}[{i} >> 2] >> ...) & 0xFFu", the
  // element's bits, which `load` then converts) and written by the statement store_element
  // ({x}: the bits `store` made; atomics, since neighbours share a word). Empty: {ptr}[{i}].
  DTypeTable load_element, store_element;
  std::string index_type;      // loop indices and element offsets ("int64_t")
  // Where set, the index type of a loop kernel whose domain and every offset fit 31 bits ("int"
  // in CUDA and HIP, where a 64-bit division by a constant is a dozen instructions and a
  // memory-bound kernel's index arithmetic can outlast its loads).
  std::string narrow_index_type;
  std::string cast;            // {type}, {x}: "(({type})({x}))"
  std::string float_suffix;    // on f32 literals ("f")
  std::string int64_suffix;    // on i64 literals ("LL")
  std::string float64_suffix;  // on f64 literals where a bare one is single precision ("lf", GLSL)
  std::string infinity, nan;   // f32 +inf and NaN ("INFINITY", "NAN")
  // `c ? t : f` with {c} {t} {f}; both branches are plain locals or side-effect-free reads, so
  // a language without the operator may evaluate both (WGSL: "select({f}, {t}, {c})").
  std::string conditional = "({c} ? {t} : {f})";
  // Whether float {x} is NaN. WGSL compilers may take `x != x` as ordered (false for NaN), so
  // WGSL writes "!({x} == {x})".
  std::string is_nan = "{x} != {x}";
  // The dtype index_type holds (loop indices, affine offsets): what an index expression
  // converts from. Languages without implicit conversions (WGSL) need it exact.
  DType index_dtype = DType::kI64;

  // Statements.
  std::string declare;          // immutable local: {type} {name} {x}: "const {type} {name} = {x};"
  std::string declare_mutable;  // accumulator: "{type} {name} = {x};"
  std::string loop;     // {type} {var} {end}: "for ({type} {var} = 0; {var} < {end}; ++{var}) {{"
  std::string comment;  // "// "

  // Math functions by op name ("exp", "erf", "round", "abs", "pow", "rem"), named for the
  // double version; float-computed values append math_float_suffix ("expf"). Ops without an
  // entry (rsqrt, logistic, sign) are written as formulas. "ipow" names the integer power
  // helper the prelude defines.
  std::map<std::string, std::string, std::less<>> math;
  std::string math_float_suffix;

  // Kernel signature and source layout.
  std::string prelude;        // once per source file: includes, conversion helpers
  std::string kernel_prefix;  // "void", "__kernel void", "extern \"C\" __global__ void"
  BufferParams buffer_params = BufferParams::kPointerTable;
  std::string global_space;  // address space of buffer pointers ("", "__global", "device")
  std::string restrict_kw;   // "restrict", "__restrict__", or "" where the language has none
  // Appended to the parameter list verbatim ("uint3 gid [[thread_position_in_grid]]").
  std::vector<std::string> extra_params;
  // The first statement of every kernel body the SDK writes (CUDA: rlx_await_producers(), which
  // makes a kernel the host launched as a programmatic dependent wait for the kernels before it
  // before it touches memory, then lets the next kernel launch); empty elsewhere. Hand-written
  // kernels of a target call it themselves.
  std::string kernel_entry;

  // Index space.
  DomainMapping mapping = DomainMapping::kSerialLoops;
  // Flat work-item index for kWorkItemPerOutput ("get_global_id(0)"). When empty it is composed
  // as group_id[0] * group_size[0] + local_id[0] (CUDA: blockIdx.x * blockDim.x + threadIdx.x).
  std::string global_id;
  std::array<std::string, 3> group_id, local_id, group_size;

  // Cooperative kernels (render_matmul): the 64 invocations of a workgroup share arrays and
  // wait for each other. Empty shared_array: the dialect cannot say it, and render_matmul
  // refuses. Hosts launch such a kernel over groups * 64 work-items, exactly 64 to a group.
  std::string shared_array;  // {type} {name} {size}: "__local {type} {name}[{size}];"
  // Whether shared arrays are declared at module scope, before the entry point (GLSL, HLSL,
  // WGSL: after the section marker), or as the first statements of the kernel (OpenCL C).
  bool shared_at_module_scope = false;
  // Waits for every invocation of the group and makes their shared-array writes visible.
  std::string barrier;  // "barrier(CLK_LOCAL_MEM_FENCE);"
  // The flat index of the invocation's group (an index_type value) and its index within the
  // group ([0, 64), of any integer type: the renderer casts it). The flat group index follows
  // global_id's rule (global_id == group * 64
  // + local), so a launch of G * 64 work-items reaches groups [0, G) (and possibly more on a 2D
  // grid, which a kernel must ignore).
  std::string group_index, local_index;
  // Written between kernel_prefix and the name of a cooperative kernel where the language must
  // be told the group size (OpenCL C's reqd_work_group_size, which also makes a host that asks
  // for another size fail instead of computing garbage).
  std::string fixed_group_size_attribute;

  // SIMD-group reductions (MSL's simd_sum and simd_max; {x}: an f32 value): every lane of the
  // calling SIMD group gets the sum / maximum over the group's lanes, with no shared memory and
  // no barrier. Where set, the cooperative kernels that combine one value per invocation
  // (render_norm's row sums, render_matmul's gemv, render_attention's rows) reduce within each
  // SIMD group first and pass one value per SIMD group through shared memory: one barrier per
  // reduction instead of a tree of log2(64). CUDA has them as warp shuffles (rlx_warp_sum),
  // with built-in lane and warp indices and no simd_params. Empty (every other dialect): shared
  // memory alone. A kernel that uses them takes simd_params after extra_params, which give
  // simd_lane (the invocation's lane), simd_group (its SIMD group's index in the workgroup) and
  // simd_groups (how many the workgroup has: 64 / the SIMD width). Every lane of a SIMD group
  // must call a reduction (uniform control flow within the SIMD group).
  std::string simd_sum, simd_max;
  std::vector<std::string> simd_params;
  std::string simd_lane, simd_group, simd_groups;
  // The SIMD width a kernel may rely on for its work split (render_attention's rows: one SIMD
  // group per query row); 0: none. The host must run SIMD groups of exactly this width.
  int simd_width = 0;
  // Loop kernels (render_kernel) whose reduction spans at least this many elements (the product
  // of the reduced dims) get one SIMD group of simd_width lanes per output element instead of
  // one work-item: lane l folds elements l, l + simd_width, ... and the lanes combine with
  // simd_sum / simd_max / simd_min / simd_product (whichever the reduction needs, and only where
  // the dialect has it), lane 0 storing. Only f16/bf16/f32 values reduced in f32 qualify. The
  // host then launches lanes_per_output(kernel, dialect) work-items per output. 0 (every
  // dialect but MSL): one work-item per output, looping serially.
  int64_t simd_reduce_min_extent = 0;
  std::string simd_min, simd_product;  // as simd_max, for those reductions
  // Up to this many outputs (a power of two) of an elementwise kWorkItemPerOutput kernel per
  // work-item, `items` apart so that a warp's loads stay neighbours, each loop of them unrolled
  // ("#pragma unroll") so that all their loads are in flight at once: a memory-bound kernel of
  // one 2-byte load per thread left most of an H100's warps waiting (MiniLM's bias-and-transpose
  // at 10% of DRAM bandwidth). The host launches outputs_per_item(kernel, dialect) times fewer.
  int64_t max_outputs_per_item = 1;

  // A per-invocation array ({type} {name} {size}), for kernels that keep a row in registers
  // (render_attention). C's form unless the language differs (WGSL's `var`).
  std::string private_array = "{type} {name}[{size}];";

  // Sums and products of f16/bf16/f32 values accumulate in this dtype when set (the cpu sets
  // f64: one rounding at the store, as its interpreter does); unset, in the compute type.
  std::optional<DType> float_accumulator;

  // Hooks. Each may be empty; a hook returning std::nullopt falls back to the table.
  // Renders a unary, binary, select or convert expression (WGSL's select argument order, GLSL's
  // mod): the returned text is the value of the expression.
  std::function<std::optional<std::string>(const Dialect&, const OpView&)> render_op;
  // Renders the kernel's signature up to and excluding the opening brace (WGSL's bindings).
  std::function<std::optional<std::string>(const Dialect&, const std::string& kernel_name,
                                           const std::vector<BufferParam>&)>
      render_signature;
};

// C99 with <math.h>: kernels `void <name>(char* const* buffers)` run their whole domain in
// serial loops. For the cpu target and C-based targets (cortex-m, hexagon).
const Dialect& c_dialect();

// One dtype's entries of a dialect, for writing a dialect as a table of rows (wrap: see
// Dialect::wrap_type; empty where the language wraps signed overflow itself).
struct DTypeRow {
  DType dtype;
  const char *storage, *compute, *load, *store;
  const char* wrap = "";
};
// Sets storage_type, compute_type, load, store and wrap_type of each row's dtype.
void set_dtype_rows(Dialect& d, std::span<const DTypeRow> rows);

// Empties a dtype's entries, so rendering a kernel that uses it fails naming the kernel and dtype
// (and a target's dtype check refuses it first). A dialect built from c_dialect() uses it for the
// C types its language lacks.
void drop_dtype(Dialect& d, DType t);

// OpenCL C 1.2: `__kernel void <name>(__global T* b<id>, ...)`, one work-item per output element
// (get_global_id(0)), 16-bit floats as ushort bits, FP_CONTRACT off. For gpu and oneapi.
const Dialect& opencl_dialect();

// CUDA C++ for NVRTC: `extern "C" __global__ void <name>(T* __restrict__ b<id>, ...)`, one thread
// per output element (blockIdx.x * blockDim.x + threadIdx.x in 64 bits), 16-bit floats as
// uint16_t bits, a prelude that needs no header under NVRTC. Hosts launch blocks of 64 threads and compile
// with --fmad=false. For the cuda target.
const Dialect& cuda_dialect();
// HIP for hiprtc and hipcc (the rocm target): the CUDA table, whose kernel language HIP shares,
// with a prelude that includes hip/hip_runtime.h (under hiprtc, which has it built in, it declares
// the 8- and 16-bit integer types hiprtc lacks instead). Hosts launch blocks of 64 threads and
// compile with -ffp-contract=off.
const Dialect& hip_dialect();
// Metal Shading Language 3.1 for the metal target (sdk/src/dialect_msl.cpp): `kernel void
// <name>(device T* b<id> [[buffer(j)]], ..., uint rlx_gid [[thread_position_in_grid]], uint rlx_lid
// [[thread_position_in_threadgroup]], uint rlx_group [[threadgroup_position_in_grid]])`, one
// thread per output element, buffers bound at index j in kernel_buffers() order, f16 and bf16
// stored as half and bfloat, no f64 (MSL has no double: rendering one fails naming it),
// threadgroup arrays and threadgroup_barrier for the cooperative kernels, whose reductions run in
// SIMD groups first (simd_sum, simd_max; those kernels also take [[thread_index_in_simdgroup]],
// [[simdgroup_index_in_threadgroup]] and [[simdgroups_per_threadgroup]]). Hosts launch groups of
// 64 threads in SIMD groups of 32 and compile with fast math off (MTLMathModeSafe), as NaN tests
// need.
const Dialect& msl_dialect();
// The eight fixed-width integer typedefs of <stdint.h> for NVRTC, which has no C library headers
// (what the CUDA prelude declares under __CUDACC_RTC__), for headers that stand in for one that
// includes <stdint.h> (the rocm target's HIP-on-CUDA hip/hip_runtime.h).
extern const char* const kNvrtcStdintTypes;

// Shader languages (sdk/src/dialect_glsl.cpp, dialect_hlsl.cpp): compute shaders, one per kernel,
// each an entry point `main` after a line `//@rlx-kernel <symbol>` that starts the kernel's
// section of the module; a host compiles each section with the prelude before it. Buffers are
// storage buffers bound in kernel_buffers() order (binding j, set 0), 64 invocations per work
// group, dispatched as a 2D grid of groups (x first) so counts past one dimension's limit fit.
// GLSL 4.50 for Vulkan (8/16/64-bit storage through the GL_EXT_shader_* extensions; a target
// refuses dtypes the device lacks) and HLSL (Shader Model 6.2 with 16-bit types; no 8-bit types).
const Dialect& glsl_vulkan_dialect();
// GLSL 4.30 for OpenGL compute (SSBOs at binding j): no 8/16-bit storage, so bool, f16 and bf16
// are packed in uint words (load_element/store_element) and i8, u8, i16 have no storage type;
// int64_t where GL_ARB_gpu_shader_int64 exists.
const Dialect& glsl_opengl_dialect();
const Dialect& hlsl_dialect();
// WGSL for WebGPU (sdk/src/dialect_wgsl.cpp): the shader layout above with `@compute` entry
// points named after the kernel (`//@rlx-kernel <symbol>` sections), storage buffers at
// @group(0) @binding(j), i32 indices. WGSL has no 8/16-bit storage: bool, f16 and bf16 are
// packed in u32 words (atomics for writes) and i8, u8, i16 have no row. i64 and f64 render as
// wgpu-native's `i64`/`f64` extension types, which exist only where a device enables
// shader-int64 / shader-f64 (never in browsers): a target refuses them elsewhere.
const Dialect& wgsl_dialect();
// WGSL functions on i64 (rlx_ipow64) that the prelude cannot hold, as it must compile on devices
// without i64: a host puts them before the section of each kernel that calls one.
extern const char* const kWgslInt64Helpers;
// The line that starts a kernel's section in glsl/hlsl/wgsl modules.
inline constexpr const char* kShaderKernelMarker = "//@rlx-kernel ";
// Splits a module at its kernel markers into (kernel symbol, prelude + that kernel's section):
// shader languages compile one entry point per module, so a host compiles each on its own.
std::vector<std::pair<std::string, std::string>> shader_sections(const std::string& module);

// One kernel as one function named after the kernel (made a valid identifier). The text needs
// the dialect's prelude before it (render_program adds it). Throws rlx::Error (kCompile) when
// the kernel uses a dtype or op the dialect cannot express, naming kernel and expression.
std::string render_kernel(const lir::LoopKernel& kernel, const lir::Program& program,
                          const Dialect& dialect);

// One source file: the prelude, then every LoopKernel in program order. CallKernels are library
// calls the target provides itself; they appear as a comment naming the callee and buffers.
std::string render_program(const lir::Program& program, const Dialect& dialect);

// Elementwise loop kernels applied to each element of a matrix product's C in registers, instead
// of storing C and launching them over it (fused epilogues: a bias, an activation, a residual).
// `program` holds them in order. Buffer ids below `params` are the product kernel's parameters,
// numbered by position (A and B among them); ids from `params` on are never bound: inputs[j] is
// the buffer kernel j reads the previous result from (C for kernel 0), with the identity map over
// C's row-major elements, and each kernel but the last stores only into the next one's input.
// The last kernel's store is the product's output. Every kernel is elementwise (no reduction)
// over a domain with C's element count; a value passes from one to the next rounded to the
// buffer's dtype, as a store and a reload would round it.
//
// The last kernel may instead read the previous result through a permutation of its dims (the
// transpose that splits attention heads): last_strides are then the strides of that read, its
// loop indices are recovered from C's element index through them, and it stores at its own
// row-major index. Empty: the identity.
struct MatmulEpilogue {
  lir::Program program;
  int32_t params = 0;
  std::vector<int32_t> inputs;
  std::vector<int64_t> last_strides;
};

// The statements that apply `epilogue` to one element of C: `value` (an f32 expression, the
// element before rounding to C's dtype) at row-major element index `index` (an index-type
// variable), ending with the store of the last kernel; at `indent` levels, in a block of their
// own. Throws rlx::Error (kCompile) like render_kernel.
std::string render_epilogue(const MatmulEpilogue& epilogue, const Dialect& dialect,
                            const std::string& index, const std::string& value, int indent);

// An operand computed element by element where a kernel reads it, by the elementwise loop kernel
// that would have stored it (SiLU(gate) x up before a decode step's down projection, the rotated
// key row a scatter writes into a KV cache), instead of that kernel's launch and the operand's
// round trip through memory. `program` holds the kernel over the operand's row-major elements;
// its buffers below `params` are the reading kernel's parameters by position, and its store's
// buffer is one past them, never bound (the store is never made). A product's A position then
// binds one of the buffers the kernel reads (a_dtype its dtype), since a parameter nothing reads
// may not be bound at all (WebGPU).
// A norm computed where the prologue loads its output (a decode step's k norm before the key's
// rotation, in the scatter's prologue): `buffer`, a buffer of the program that nothing stores, is the output of a
// LayerNorm or RMSNorm over rows of `n` whose input, scale and bias are the program's buffers
// `x`, `scale`, `bias` (-1: none; parameters). Each load sums its row of x itself (one pass for
// RMSNorm, two for LayerNorm), then normalises its element and rounds it to out_dtype, as the
// norm's store would; rows sit in x as NormShape's x_offset, x_rows_per_block, x_block_stride say.
struct NormedRead {
  std::string name;  // the norm's kernel ("k11_RMSNorm"), for comments
  int32_t buffer = -1, x = -1, scale = -1, bias = -1;
  bool rms = false;
  double epsilon = 1e-5;
  int64_t n = 1;
  int64_t x_offset = 0, x_rows_per_block = 0, x_block_stride = 0;
  DType out_dtype = DType::kF32;
};

struct OperandPrologue {
  lir::Program program;
  int32_t params = 0;
  std::optional<NormedRead> norm;  // one of the buffers it loads is a norm's output
};

// The one loop kernel of `prologue` (the kernel a fused kernel's comment names: "A computed by
// k24_..."). Throws an internal error when the program holds anything else.
const lir::LoopKernel& prologue_kernel(const OperandPrologue& prologue);
// What computes the operand, for a kernel's comment: "k13_rotate", or "k13_rotate after
// k11_RMSNorm" where the prologue computes a norm too.
std::string computed_by(const OperandPrologue& prologue);

// The statements computing `prologue`'s element at row-major index `index` (an index-type
// expression), ending with the declaration of `name`, an f32 holding the element rounded to the
// dtype the kernel stores; at `indent` levels. Throws rlx::Error (kCompile) like render_kernel.
std::string render_prologue(const OperandPrologue& prologue, const Dialect& dialect,
                            const std::string& index, const std::string& name, int indent);

// A batched matrix product C[b, m, n] = sum_k A[b, m, k] * B[b, k, n] over f16, bf16 or f32
// buffers, the operands read through element strides (so a transposed operand, such as the
// [out, in] weight of a Linear layer, needs no copy) and C written row-major ([batch, m, n]).
// Every product accumulates in f32 and is rounded once, at the store.
// A LayerNorm or RMSNorm over each row of A (its k elements), computed by the product kernel
// itself where the norm's output has no other reader: A's buffer is then the norm's input, and
// each normalised element is rounded to out_dtype, as the norm's store would round it, before it
// is multiplied. Positions and dtypes as MatmulShape's (scale and bias: [k]; -1 none).
struct MatmulNormPrologue {
  bool rms = false;
  double epsilon = 1e-5;
  int32_t scale_buffer = -1, bias_buffer = -1;
  DType scale_dtype = DType::kF32, bias_dtype = DType::kF32, out_dtype = DType::kF32;
};

struct MatmulShape {
  std::string name;  // the kernel's name (made a valid identifier by kernel_symbol)
  int64_t batch = 1, m = 1, n = 1, k = 1;
  DType a_dtype = DType::kF32, b_dtype = DType::kF32, c_dtype = DType::kF32;
  // Element strides of A over (batch, m, k) and of B over (batch, k, n).
  int64_t a_batch = 0, a_m = 0, a_k = 0;
  int64_t b_batch = 0, b_k = 0, b_n = 0;
  // The kernel's buffers are the distinct ones of (a, b, c) in that order, bound as
  // kOnePerBuffer parameters b0, b1, ...: a_buffer, b_buffer and c_buffer name their positions
  // (A and B may be one buffer: x @ x^T).
  int32_t a_buffer = 0, b_buffer = 1, c_buffer = 2;
  // Applied to C before the store (nullptr: C is stored). With one, c_dtype is still C's dtype
  // (what the element is rounded to first), the kernel's parameters are the epilogue's, and
  // c_buffer names the last epilogue kernel's output.
  std::shared_ptr<const MatmulEpilogue> epilogue;
  // Set: A is normalised row by row first (render_matmul takes it at m == 1 over B contiguous
  // along k, the GEMV; a_k must be 1). Its buffers are parameters after all of the above.
  std::optional<MatmulNormPrologue> a_norm;
  // Set: A's elements are computed by this kernel where they are read (render_matmul takes it at
  // m == 1 over B contiguous along k with A's rows contiguous, the GEMV); A's buffer is not read.
  std::shared_ptr<const OperandPrologue> a_loop;
  // f32 operands may be rounded to TF32 on tensor cores (the user's --allow-tf32, the product's
  // {tf32} attribute); only a vendor library acts on it, rendered kernels compute in f32.
  bool tf32 = false;
  // B is a constant of the program (weights): no kernel writes it, so a kernel may read it
  // before it has waited for the kernels launched before it (Dialect::kernel_entry).
  bool b_constant = false;
};

// A matrix-product kernel and how to launch it.
struct MatmulKernel {
  std::string source;   // one function (a shader section), named kernel_symbol(shape.name)
  int64_t groups = 0;   // launch groups * 64 work-items, 64 to a group
  std::string variant;  // "tiled 64x64", "gemv", ... (for comments and tests)
};

// Renders `shape` as a cooperative kernel of the dialect (shared_array, barrier, group_index,
// local_index must be set): output tiles staged through shared memory, or, for a single row
// (m == 1) whose B is contiguous along k, one group per strip of outputs with k split over the
// group. Throws rlx::Error (kCompile) when the dialect lacks cooperative kernels, a dtype, or when
// the shape has an empty dim (nothing to tile; use the loop kernel).
MatmulKernel render_matmul(const MatmulShape& shape, const Dialect& dialect);

// Attention: out[b, h, i, :] = softmax_j(scale * q[b, h, i, :] . k[b, h / (H / Hkv), j, :],
// masked) . v[b, h / (H / Hkv), j, :] over row-major q [B, H, Sq, D], k [B, Hkv, Sk, D],
// v [B, Hkv, Sk, Dv] and out [B, H, Sq, Dv] of f16, bf16 or f32, computed in f32 with an online
// softmax (one pass over the keys, a running maximum and sum). Masks as the HIR op Attention
// has them: "causal" keeps key j for query i when j <= i + Sk - Sq; "padding" keeps it where
// mask[b, j] != 0 (a [mask_batch, mask_len] buffer of any dtype, a size-1 dim broadcasting).
// A masked score is f32's lowest finite value, not -inf, as the decomposition writes it: a row
// whose every key is masked averages v uniformly.
struct AttentionShape {
  std::string name;  // the kernel's name (made a valid identifier by kernel_symbol)
  int64_t batch = 1, heads = 1, kv_heads = 1, q_len = 1, kv_len = 1, head_dim = 1, v_dim = 1;
  double scale = 1.0;
  std::string mask = "none";  // "none", "causal", "padding"
  DType q_dtype = DType::kF32, k_dtype = DType::kF32, v_dtype = DType::kF32,
        out_dtype = DType::kF32;
  DType mask_dtype = DType::kBool;
  int64_t mask_batch = 1, mask_len = 1;
  // Parameter positions b0, b1, ... of q, k, v, the mask (padding only) and out: distinct.
  int32_t q_buffer = 0, k_buffer = 1, v_buffer = 2, mask_buffer = -1, out_buffer = 3;
  // out is [B, Sq, H, Dv] instead: the heads merged back into each position's row, as the
  // transpose after a transformer's attention writes them.
  bool merge_heads = false;
  // q, k or v is read as [B, S, H, D] instead (each position's row holds every head), as the
  // projection before a transformer's attention writes it: the transpose that splits the heads
  // is then never launched.
  bool q_split_heads = false, k_split_heads = false, v_split_heads = false;
  // Read so, an operand may be a column slice of a wider [B, S, R] product (q, k and v of one
  // fused projection): R elements from a position's row to the next (0: the operand's own
  // heads x dim) and the element where the slice starts. Both stay 0 for the [B, H, S, D] layout.
  int64_t q_row = 0, k_row = 0, v_row = 0;
  int64_t q_offset = 0, k_offset = 0, v_offset = 0;
  int64_t q_row_stride() const { return q_row ? q_row : heads * head_dim; }
  int64_t k_row_stride() const { return k_row ? k_row : kv_heads * head_dim; }
  int64_t v_row_stride() const { return v_row ? v_row : kv_heads * v_dim; }
  // Set: q's elements are computed where the kernel reads them (the element at q's buffer offset
  // X is the prologue's element X): a decode step's rotated queries, whose kernel only the
  // attention reads. q's position then binds a buffer the prologue reads (q_dtype its dtype); the
  // prologue's other buffers are parameters after all of the above.
  std::shared_ptr<const OperandPrologue> q_loop;
};

// An attention kernel and how to launch it. A short query (decode) gets one work-item per query
// row (B * H * Sq of them), each keeping its q row and its output row in private arrays (in a
// dialect with SIMD-group reductions, one SIMD group per row, its lanes splitting the keys); longer
// ones a cooperative kernel (the dialect's shared_array and barrier) where each group owns 64
// query rows of one head and stages the keys and values in shared memory a tile at a time, so
// the group reads each key once instead of once per query. Throws rlx::Error (kCompile) when the
// dialect lacks a dtype or the shape is inconsistent.
struct AttentionKernel {
  std::string source;
  int64_t groups = 0;   // launch groups * 64 work-items, 64 to a group
  std::string variant;  // "rows", "tiled 64 keys", ... (for comments and tests)
  // > 0: the kernel takes one more parameter, last, a device buffer of at least this many bytes
  // that is zero before the program's first run and shared by its kernels (they run in order):
  // a kernel that splits its work over groups keeps partial results and counters there, and
  // leaves the counters at zero when it ends.
  int64_t scratch_bytes = 0;
};
AttentionKernel render_attention(const AttentionShape& shape, const Dialect& dialect);

// LayerNorm / RMSNorm over the last axis of row-major x [rows, n] (the HIR ops' meaning, in f32):
// LayerNorm y = (x - mean) / sqrt(var + epsilon) * scale + bias with the variance of the centred
// row, RMSNorm y = x / sqrt(mean(x^2) + epsilon) * scale; scale and bias optional.
struct NormShape {
  std::string name;  // the kernel's name (made a valid identifier by kernel_symbol)
  bool rms = false;
  int64_t rows = 1, n = 1;
  double epsilon = 1e-5;
  // Parameter positions b0, b1, ... of x, scale and bias (-1: none) and out: distinct.
  int32_t x_buffer = 0, scale_buffer = -1, bias_buffer = -1, out_buffer = 1;
  // Their dtypes: f32, f16 or bf16. The statistics and the arithmetic are f32 whatever the
  // storage (loads convert to f32, the store converts from it), as the attention kernel does.
  DType x_dtype = DType::kF32, scale_dtype = DType::kF32, bias_dtype = DType::kF32,
        out_dtype = DType::kF32;
  // Where row r of x starts, in elements: x_offset + (r / x_rows_per_block) * x_block_stride +
  // (r % x_rows_per_block) * n, so a norm reads its rows out of a wider buffer (the q or k part
  // of a fused q|k|v product) instead of a copy of them. x_rows_per_block == 0: x is the
  // row-major [rows, n] (the output always is).
  int64_t x_offset = 0, x_rows_per_block = 0, x_block_stride = 0;
};

// A cooperative kernel (the dialect's shared_array, barrier, group_index and local_index): one
// group of 64 invocations per row; each sums a strided part of the row and the group adds the
// parts through shared memory (SIMD groups first where the dialect has them), so a row is read from memory once per pass over it (two for
// RMSNorm, three for LayerNorm) instead of once per kernel of the decomposition.
struct NormKernel {
  std::string source;
  int64_t groups = 0;  // launch groups * 64 work-items
};
NormKernel render_norm(const NormShape& shape, const Dialect& dialect);

// The function name render_kernel gives `kernel` (its name with every character outside
// [A-Za-z0-9_] replaced by '_').
std::string kernel_symbol(const lir::LoopKernel& kernel);
// The same rule for a bare name.
std::string kernel_symbol(const std::string& name);

// The storage buffers a kernel touches, ascending: the parameter order under kOnePerBuffer.
std::vector<int32_t> kernel_buffers(const lir::LoopKernel& kernel, const lir::Program& program);

// How many work-items a kWorkItemPerOutput kernel needs: the product of its parallel dims.
int64_t work_items(const lir::LoopKernel& kernel);

// How many work-items render_kernel gives each output element of `kernel` in `dialect`: the
// dialect's simd_width where the kernel's reduction runs across a SIMD group
// (Dialect::simd_reduce_min_extent), else 1. A host launches work_items(kernel) times this.
int64_t lanes_per_output(const lir::LoopKernel& kernel, const Dialect& dialect);

// How many outputs of `kernel` one work-item computes in `dialect` (Dialect::max_outputs_per_item):
// the largest power of two up to it that divides work_items(kernel) and leaves at least 32768
// work-items, for a kernel without reduction; else 1. A host launches work_items(kernel) divided
// by this.
int64_t outputs_per_item(const lir::LoopKernel& kernel, const Dialect& dialect);

}  // namespace rlx::sdk
