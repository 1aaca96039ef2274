// LIR: what code generators consume. A program is a set of buffers (with an arena plan) and an
// ordered list of kernels. A kernel is a fused loop nest (index space, loads through affine
// maps, a scalar expression tree, an optional reduction, stores) or a library call.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "rlx/core/attr.h"
#include "rlx/core/dtype.h"
#include "rlx/core/tensor.h"

namespace rlx::lir {

enum class BufferKind { kInput, kOutput, kConstant, kTemp, kAlias };

struct Buffer {
  int32_t id = 0;
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  BufferKind kind = BufferKind::kTemp;
  int32_t alias_of = -1;                  // kAlias: the buffer whose memory this one reinterprets
  int64_t arena_offset = -1;              // kTemp: byte offset into the arena (from plan_buffers)
  int32_t first_use = -1, last_use = -1;  // kernel indices (lifetime)
  Tensor data;                            // kConstant
  int64_t numel() const;
  int64_t nbytes() const;
};

// A load reads buffer[offset + sum(strides[d] * i[d])] over the kernel's loop indices i.
// When `guards` is non-empty the load only reads where lo <= i[d] < hi for every guard and
// yields 0 elsewhere (pad and concat select around it).
struct Guard {
  int32_t dim;
  int64_t lo, hi;
};
struct AffineLoad {
  int32_t buffer = -1;
  int64_t offset = 0;
  std::vector<int64_t> strides;  // one per loop dim
  std::vector<Guard> guards;
};

enum class ExprKind {
  kLoad,     // load
  kConst,    // value (in dtype)
  kIndex,    // the loop index of dim `dim`, as dtype
  kInRange,  // bool: lo <= i[dim] < hi
  kUnary,    // op(args[0])
  kBinary,   // op(args[0], args[1]); comparisons yield bool
  kSelect,   // args[0] ? args[1] : args[2]
  kConvert,  // args[0] converted to dtype
};

struct Expr {
  ExprKind kind = ExprKind::kConst;
  DType dtype = DType::kF32;
  std::string op;             // unary/binary MIR op name ("exp", "add", "lt")
  std::vector<int32_t> args;  // indices of earlier exprs in the same kernel
  AffineLoad load;
  double value = 0;
  int32_t dim = 0;
  int64_t lo = 0, hi = 0;
};

struct Store {
  int32_t buffer = -1;
  int32_t expr = -1;  // root expression (for a reduction: the value reduced)
};

// Loop dims [0, num_parallel) index the outputs (row-major, the stores' buffers are contiguous
// over them); dims [num_parallel, rank) are reduced with `reduce` when present.
struct LoopKernel {
  std::string name;
  std::vector<int64_t> domain;
  int32_t num_parallel = 0;
  std::string reduce;  // "", "sum", "max", "min", "prod"
  std::vector<Expr> exprs;
  std::vector<Store> stores;
};

// A library call: a MIR primitive that is not a loop nest (dot_general, gather, scatter, while)
// or a HIR op the target claimed natively ("native:MatMul").
struct CallKernel {
  std::string callee;
  std::vector<int32_t> inputs;
  std::vector<int32_t> outputs;
  Attrs attrs;
  std::vector<std::shared_ptr<struct Program>> regions;  // while: cond, body
  std::string loc;
};

using Kernel = std::variant<LoopKernel, CallKernel>;

struct Program {
  std::vector<Buffer> buffers;
  std::vector<Kernel> kernels;
  std::vector<std::pair<std::string, int32_t>> inputs;   // graph input name -> buffer
  std::vector<std::pair<std::string, int32_t>> outputs;  // graph output name -> buffer
  int64_t arena_bytes = 0;

  // The buffer that owns the memory of b (follows alias chains).
  int32_t storage_of(int32_t b) const;
};

// Assigns arena offsets to temporaries from their lifetimes, reusing memory of buffers whose
// lifetimes do not overlap (greedy best fit, 64-byte aligned).
void plan_buffers(Program& p);
// The offsets plan_buffers would assign (-1 for buffers that are not temporaries) if each
// buffer's lifetime began at first_use[b] instead, and the arena's size. For executors that
// write a buffer before its first kernel runs, such as a product that applies the kernels after
// it as its epilogue and so writes their output.
std::vector<int64_t> plan_arena(const Program& p, const std::vector<int32_t>& first_use,
                                int64_t* arena_bytes);
// Constant data kept outside the text, in a side file (safetensors) beside it. Model weights
// printed as decimal text cost seconds and hundreds of MB; as binary they cost a copy.
//   b2 = constant %w : f32[8,2] live [1, 1] = external<"model.lir.safetensors": "b2">
// names the file (relative to the text) and the tensor in it. Keys are "b<id>" for the top
// program and "k<k>.r<r>.b<id>" for the buffers of region r of call kernel k (nested as deep as
// regions go).
struct ExternalData {
  std::string file;
  std::map<std::string, Tensor> tensors;
  // print_program: for a constant that already lies in a file on disk, that file's name as the
  // text should write it and the tensor's key there (nullopt: copy it into `file`).
  std::function<std::optional<std::pair<std::string, std::string>>(const Tensor&)> locate;
  // parse_program: the tensors of the other files the text names, by the names it uses.
  std::map<std::string, std::map<std::string, Tensor>> other_files;
};

// The textual form: print_program(parse_program(t)) reproduces t exactly for printed text.
// With `external`, constants of more than kInlineConstantBytes go to external->tensors (sharing
// their data, no copy) and the text refers to them under external->file.
inline constexpr int64_t kInlineConstantBytes = 64;
std::string print_program(const Program& p, ExternalData* external = nullptr);
// `source` names the text in error messages; errors carry line:column and name the bad reference.
// A text with external constants needs `external` holding them (under the file the text names).
Program parse_program(std::string_view text, const std::string& source = "<lir>",
                      const ExternalData* external = nullptr);

// The text at `path` and its constants in `path` + ".safetensors" beside it (written only when
// the program has such constants; an old side file is removed otherwise). Constants that are
// unchanged views of a mapped safetensors file (rlx::mapped_origin) are not copied: that file is
// hard-linked beside the text as `path` + "." + its name (copied where linking fails) and the
// text refers to it. Returns the names of the side files, relative to the text's folder.
std::vector<std::string> write_program(const std::string& path, const Program& p);
// Reads what write_program wrote: the side file is mapped, not copied.
Program read_program(const std::string& path);

}  // namespace rlx::lir
