// The base of the kernel libraries whose gather and scatter are written as source text (OpenCL C,
// GLSL, HLSL, and the languages that follow them): everything but the text is the same in every
// language, so it is here once. The index semantics: a negative index counts from the end; a bad
// one is recorded in the call's status slot (flag, position, value low and high words) and the
// executor reports it. gather has one work-item per output element; scatter starts from a copy
// of its operand and has one work-item per (outer, inner) position that walks the indices in
// order, so a repeated index keeps the last update (replace) or sums every one (add), as on the
// cpu, with no race between work-items.
#pragma once
#include <string>

#include "device_api.h"

namespace rlx::gpu_host {

// One gather or scatter call, checked and split at its axis.
struct IndexCall {
  const lir::CallKernel& call;
  std::string symbol;          // the entry point: "k3_gather"
  std::string where;           // "gather ('node location')", for the source's comment
  DType dtype, index_dtype;    // of the operand (and output, updates) and of the indices
  std::string type, index_type;  // their storage types in the dialect
  int64_t outer, len, inner;   // the operand's shape split at the axis
  int64_t nidx;                // number of indices
  int64_t work_items;
  int32_t status_slot;
  bool add;                    // scatter: reduce = "add" (else replace)
  // Scatter: the updates computed in the kernel (parameters b0, b1, ... by position, before
  // the indices) instead of read from `upd`; nullptr: read.
  const sdk::OperandPrologue* updates = nullptr;
};

class IndexCallLibrary : public KernelLibrary {
 public:
  bool has_call(const std::string& callee) const override;
  NativeKernel call_kernel(const lir::CallKernel& call, const lir::Program& program, int32_t index,
                           int32_t status_slot, const ComputedUpdates* updates) const final;

 protected:
  // `language` names the kernel language in compile errors ("GLSL has no type for c64").
  explicit IndexCallLibrary(std::string language) : language_(std::move(language)) {}
  // The kernel source of one call, its bindings in the order of NativeKernel::buffers (gather:
  // operand, indices, output; scatter: indices, updates, output) then the status buffer.
  virtual std::string gather_source(const IndexCall& c) const = 0;
  virtual std::string scatter_source(const IndexCall& c) const = 0;
  // The dialect table's entry for `dtype`; a compile error naming the call when it has none.
  const std::string& entry(const sdk::DTypeTable& table, DType dtype, const IndexCall& c) const;
  // ", updates computed by <kernel>" for a scatter that computes its updates, else "": for the
  // kernel's comment.
  static std::string computed_note(const IndexCall& c);
  // `entry` with {x} replaced by `x` (the dialect's load, store, convert templates).
  std::string apply(const sdk::DTypeTable& table, DType dtype, const std::string& x, const IndexCall& c) const;

 private:
  const std::string& entry(const sdk::DTypeTable& table, DType dtype, const std::string& where) const;
  std::string language_;
};

}  // namespace rlx::gpu_host
