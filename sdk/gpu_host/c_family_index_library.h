// Gather and scatter as source text for the C-family kernel languages (OpenCL C, CUDA C++ and HIP,
// MSL): their kernels differ only in the words (the signature, the 64-bit types, the flat index,
// the atomic that claims a status slot), so the text is written here once and each language's
// library gives its words. The shader languages (GLSL, HLSL, WGSL) write their own.
#pragma once
#include <string>
#include <vector>

#include "index_call_library.h"

namespace rlx::gpu_host {

class CFamilyIndexLibrary : public IndexCallLibrary {
 protected:
  // The language's names for what the kernels use.
  struct Words {
    std::string i64, u32, u64;  // "long", "uint", "ulong"
    std::string i64_suffix;     // of a 64-bit literal: "L"
    std::string low_mask;       // the low 32 bits as a 64-bit unsigned literal: "0xFFFFFFFFUL"
    std::string global_id;      // the flat work-item index as i64: "get_global_id(0)"
    std::string kernel_word;    // "work-item" or "thread", in the kernels' first comment line
  };
  // One buffer parameter of a kernel, in binding order.
  struct Param {
    std::string type;  // the element's storage type
    std::string name;
    bool written = false;
  };

  CFamilyIndexLibrary(std::string language, Words words)
      : IndexCallLibrary(std::move(language)), words_(std::move(words)) {}

  // `<qualifiers> void <symbol>(<params>)`, without the opening brace.
  virtual std::string signature(const std::string& symbol, const std::vector<Param>& params) const = 0;
  // The statement that makes exactly one work-item with a bad index write status slot
  // `slot` (its flag word): the lines up to and including `if (<it won>) {`, indented by six.
  virtual std::string claim_status(int32_t slot) const = 0;

  // A scatter computes its updates itself where the dialect names buffers by position.
  bool computes_updates() const override {
    return dialect().buffer_params == sdk::BufferParams::kOnePerBuffer;
  }
  std::string gather_source(const IndexCall& c) const final;
  std::string scatter_source(const IndexCall& c) const final;

 private:
  Words words_;
  // Reads index j, resolves a negative one from the end and, on a bad one, records the first
  // (position, value) in the call's status slot; leaves an `if` open for the caller's exit.
  std::string resolve_index(int32_t slot) const;
  std::string body_entry() const;
};

}  // namespace rlx::gpu_host
