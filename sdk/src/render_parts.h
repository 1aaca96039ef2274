// Pieces of kernel text that the loop renderer (render_c.cpp) and the matrix-product renderer
// (render_matmul.cpp) write the same way. Internal to librlx_sdk.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "rlx/sdk/render.h"

namespace rlx::sdk::detail {

bool is_signed_int(DType t);
// f16 and bf16 compute in the f32 compute type (render.h), so they share its literals and math;
// the cooperative kernels (render_matmul, render_attention) take exactly these three.
bool single_float(DType t);
// The range of an integer dtype within int64; u64 has its own cases where its maximum matters
// (reduce_init, conversions).
std::pair<int64_t, int64_t> int_limits(DType t);
// The shortest decimal text of a finite f32 that names it and lies inside f32's range. The
// shortest text of f32's largest value, 3.4028235e+38, lies past it and rounds back only by
// nearest rounding; WGSL refuses such a literal ("cannot be represented as f32"), so that value
// is written in full.
std::string float_text(float v);
std::string join(const std::vector<std::string>& parts, const char* sep);
std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims);

// How a loop kernel uses one storage buffer.
struct BufferUse {
  DType dtype;
  bool read = false, written = false;
};

// Storage buffer -> how the kernel uses it, ordered by id (the kOnePerBuffer parameter order).
std::map<int32_t, BufferUse> buffer_uses(const lir::LoopKernel& k, const lir::Program& p);

// The comment above a rendered loop kernel: its name (left out when `positional`, so that equal
// bodies stay equal text), domain, reduction and buffers (`local`: id -> number in the name).
std::string describe_kernel(const lir::LoopKernel& k, const lir::Program& p,
                            const std::map<int32_t, BufferUse>& uses,
                            const std::map<int32_t, int32_t>& local, bool positional);

// Whether a loop kernel's flat domain and the largest offset any of its loads, index
// expressions or stores can compute fit in 31 bits, and so the type its indices take in `d`:
// d.narrow_index_type where set and they fit, else d.index_type.
bool offsets_fit_31_bits(const lir::LoopKernel& k);
const std::string& index_type(const Dialect& d, const lir::LoopKernel& k);

// Element `index` of buffer `ptr` as stored: the dialect's load_element where it packs `dtype`
// in words, else ptr[index]. `load` converts it to the compute type.
std::string read_element(const Dialect& d, const std::string& ptr, const std::string& index,
                         DType dtype);

// The statement storing `bits` (what `store` made) at element `index` of buffer `ptr`.
std::string write_element(const Dialect& d, const std::string& ptr, const std::string& index,
                          DType dtype, const std::string& bits);

// `signature` (up to its closing parenthesis) with the dialect's simd_params after its last
// parameter, or "" where the dialect has none.
std::string with_simd_params(const Dialect& d, std::string signature);

// The dialect's SIMD-group function ({x}) for loop-kernel reduction `reduce` ("sum", "max",
// "min", "prod"); empty where it has none.
const std::string& simd_reduction(const Dialect& d, const std::string& reduce);

// One kOnePerBuffer parameter: "__global const float* restrict b0".
std::string buffer_param(const Dialect& d, const std::string& storage_type, bool written,
                         const std::string& name);

// The text of one hand-shaped kernel (render_attention; render_matmul's writer follows the same
// pattern) in a dialect: statements indented as they nest, the dialect's declarations, loops,
// conditionals, loads and stores, and the signature. Failures are compile errors naming the
// kernel (`what`) and the dialect.
class KernelText {
 public:
  KernelText(const Dialect& d, std::string what) : d_(d), what_(std::move(what)) {}

  [[noreturn]] void fail(const std::string& why) const;
  // The dialect's entry for `dtype` in `table`, or a compile error naming `what_entry`.
  const std::string& entry(const DTypeTable& table, DType dtype, const char* what_entry) const;

  // `comment` as a comment line, then the signature over buffers b0, b1, ... and the opening
  // brace. A cooperative kernel (render_matmul) also gets `shared`, its shared-array
  // declarations, where the dialect puts them, and the dialect's fixed group size attribute. A
  // kernel that calls the dialect's SIMD-group reductions (`simd`) takes its simd_params last.
  void open(const std::string& symbol, const std::vector<BufferParam>& params,
            const std::string& comment, const std::string& shared = "", bool cooperative = false,
            bool simd = false);
  // The closing brace of the function; the whole text.
  std::string finish();

  void line(const std::string& s);
  void declare(const std::string& type, const std::string& name, const std::string& x);
  void declare_mutable(const std::string& type, const std::string& name, const std::string& x);
  void let(const std::string& name, const std::string& x) { declare(d_.index_type, name, x); }
  // A per-invocation array of `size` elements (zeroed by the caller).
  void array(const std::string& type, const std::string& name, int64_t size);
  void loop(const std::string& var, int64_t end);
  void loop(const std::string& var, int64_t end, const std::string& type);
  void loop_to(const std::string& var, const std::string& end);  // a bound known at run time
  // `if (condition) {`, closed by close().
  void if_block(const std::string& condition);
  void close();
  // The flat work-item index, and a return for the items past `n` (one work-item per output).
  void work_item(const std::string& name, int64_t n);
  // A cooperative kernel's ids: the group's index gi, clamped to the last real group as g (a 2D
  // grid may launch more; those compute a copy of the last group's work and store nothing,
  // keeping every barrier uniform), and the invocation's index li within the group, an `int_type`.
  void group_ids(int64_t groups, const std::string& int_type);
  // The declaration of a workgroup-shared array of `size` elements, for open()'s `shared`.
  std::string shared_array(const std::string& type, const std::string& name, int64_t size) const;

  std::string choose(const std::string& c, const std::string& t, const std::string& f) const;
  std::string f32_literal(double v) const;
  std::string cast(const std::string& type, const std::string& x) const;
  std::string math(const std::string& op) const;  // the f32 function's name ("exp")
  // fma(a, b, c) where the dialect has it, else a * b + c.
  std::string multiply_add(const std::string& a, const std::string& b, const std::string& c) const;
  // Element `index` of buffer b<position> converted to its compute type.
  std::string load(int32_t position, DType dtype, const std::string& index) const;
  // The statement storing compute value `value` at element `index` of buffer b<position>.
  std::string store(int32_t position, DType dtype, const std::string& index,
                    const std::string& value) const;

  const Dialect& dialect() const { return d_; }
  // Whether the dialect has SIMD-group reductions (Dialect::simd_sum).
  bool has_simd() const { return !d_.simd_sum.empty() && !d_.simd_max.empty(); }
  // The dialect's SIMD-group sum / maximum of f32 `x`.
  std::string simd_sum(const std::string& x) const;
  std::string simd_max(const std::string& x) const;

  // `total` (an f32 declared here) = the sum of every invocation's `part` over a group of
  // `group` invocations whose index is `li`, through the f32 shared array `array`, in one order
  // (the same total in every invocation, and the same bits in every kernel that sums this way:
  // a norm and a product normalising its operand agree). Without SIMD-group reductions each
  // invocation writes its slot, and after a barrier adds all `group` slots in order, rather than
  // in a tree of conditional shared writes, which NVIDIA's OpenGL compiler got wrong for some
  // groups (rows of LayerNorm off by up to 0.9 at 4096 rows on an H200; Vulkan, OpenCL and
  // WebGPU were right); a last barrier lets the array be written again. With them, each SIMD
  // group adds its lanes in registers and its lane 0 writes one slot from `slots` on; after one
  // barrier every invocation adds the slots in order. Nothing writes those slots again, so there
  // is no second barrier: the next sum takes slots of its own.
  void group_sum(const std::string& part, const std::string& total, int64_t slots,
                 const std::string& array, int64_t group, const std::string& int_type);
  // The statements computing `prologue`'s element at `index`, ending with the f32 `name`
  // (render_prologue), at the current indentation.
  void computed(const OperandPrologue& prologue, const std::string& index, const std::string& name);

 protected:
  const Dialect& d_;
  std::string what_;
  std::string out_;
  int indent_ = 0;
};

// The statements declaring f32 `name`, element `index` of the output of `r`'s norm (where
// `guard` holds, else 0; "": always), computed from the norm's input at `indent` levels
// (render.h, NormedRead; render_normed_read.cpp). `program` holds r's buffers.
std::string normed_read(const NormedRead& r, const lir::Program& program, const Dialect& d,
                        const std::string& index, const std::string& guard, const std::string& name,
                        int indent);

}  // namespace rlx::sdk::detail
