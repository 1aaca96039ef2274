// A compiled LIR program of the hello target: its loop kernels as one loaded C library, called in
// program order on a table of buffer addresses.
#pragma once
#include <string>
#include <vector>

#include "c_library.h"
#include "rlx/core/lir.h"
#include "rlx/core/target.h"

namespace hello {

class HelloExecutable final : public rlx::Executable {
 public:
  HelloExecutable(const rlx::lir::Program& program, const std::string& compiler);
  // buffers[i] is the memory of program buffer i for inputs, outputs and constants (the
  // runtime's); temporaries and aliases are resolved into the executable's own table.
  void run(const std::vector<void*>& buffers) override;

 private:
  using KernelFn = void (*)(char* const* buffers);

  rlx::lir::Program program_;
  CLibrary library_;
  std::vector<KernelFn> kernels_;   // in program order
  std::vector<char> arena_;         // the temporaries, at their planned offsets
  std::vector<char*> table_;        // buffers[id] as the kernels see it
};

}  // namespace hello
