// A MatMul, Linear or dot_general call kernel in a float class (f16, bf16, f32 -> f32 compute;
// f64), prepared once for the packed GEMM: operands are read in place through strided views
// (no copies unless a group of dims cannot be viewed as one stride), a constant B (weights) is
// packed once, when the kernel is prepared, and reused by every run, batches run in parallel, and an
// epilogue fused by fuse_gemm_epilogues() runs on each finished tile.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gemm.h"
#include "gemm_bf16.h"
#include "rlx/core/lir.h"

namespace rlx::cpu {

class GemmCall {
 public:
  // True when `k` is a GEMM call (native:MatMul, native:Linear, dot_general) whose output is a
  // float dtype; integer GEMMs stay on the baseline.
  static bool handles(const lir::CallKernel& k, const lir::Program& p);
  // Whether `callee` is a product this class runs when its output is a float dtype.
  static bool is_product(const std::string& callee);
  GemmCall(const lir::CallKernel& k, const lir::Program& p);
  ~GemmCall();
  void run(const std::vector<void*>& ptrs) const;
  // The input buffer B, and making B count as a constant: the executable computes it once from
  // constants (a hoisted f16 -> f32 weight conversion, say) into memory that stays put, so it is
  // packed at its first run and then reused. forget_packed() after that memory was recomputed.
  int32_t b_input() const { return b_.buffer; }
  void treat_b_as_fixed() { b_constant_ = b_constant_ || b_packable_; }
  void forget_packed() const;

 private:
  // One operand as batch dims plus one (size, stride) for its rows and one for its columns.
  struct Operand {
    int32_t buffer = -1;
    DType dtype = DType::kF32;
    std::vector<int64_t> batch_strides;  // per batch dim (0: broadcast)
    int64_t rs = 0, cs = 0;
    bool gather = false;  // rows/cols not one stride each: copied contiguous per run
    std::vector<int64_t> shape, strides;  // the full view, for the gathering copy
  };
  struct EpilogueLoad {
    int32_t input;  // index into the kernel's inputs
    int64_t offset, rs, cs;
  };

  std::vector<int64_t> batch_sizes_;
  int64_t batch_ = 1, M_ = 0, N_ = 0, K_ = 0;
  Operand a_, b_;
  int32_t out_ = -1;
  DType out_dtype_ = DType::kF32;
  bool f64_ = false;
  bool b_constant_ = false;
  bool b_packable_ = false;  // B is one matrix (not batched, not gathered): packable once
  int32_t bias_ = -1;  // Linear's bias buffer (the f64 path adds it after the product)
  // A 16-bit Linear's bias (in the result's type): added to the product rounded to that type and
  // rounded again, the decomposition's two roundings, as the result is stored.
  bool narrow_bias_ = false;
  // The unit of a bf16 x bf16 product the bf16 GEMM takes (gemm_bf16.h); kNone: widened to f32.
  Bf16Unit bf16_unit_ = Bf16Unit::kNone;
  std::vector<int32_t> inputs_;  // the kernel's input buffers
  GemmEpilogue epilogue_;                  // load data pointers filled per run
  std::vector<EpilogueLoad> epilogue_loads_;

  struct PackCache {
    std::mutex mu;
    const void* source = nullptr;
    GemmIsa isa = GemmIsa::kPortable;
    std::shared_ptr<const PackedB> packed;
    std::shared_ptr<const PackedBf16B> bf16_packed;
  };
  std::unique_ptr<PackCache> cache_;

  std::shared_ptr<const PackedB> packed_b(const void* b) const;
  std::shared_ptr<const PackedBf16B> bf16_packed_b(const void* b) const;
  void run_bf16(const char* a_base, const void* b_base, char* out, const GemmEpilogue& ep,
                const uint16_t* bias16) const;
};

}  // namespace rlx::cpu
