// Blocking parameters of the GEMM kernels with an environment override, read once when the
// plugin loads: the benchmark (bench/gemm) tunes them without rebuilding. A value that is not a
// positive multiple of `multiple` is rounded up to one; unset or unparsable keeps the default.
#pragma once
#include <cstdint>
#include <cstdlib>

namespace rlx::cpu {

inline int64_t blocking_from_env(const char* name, int64_t fallback, int64_t multiple) {
  const char* v = std::getenv(name);
  int64_t x = v ? std::atoll(v) : 0;
  if (x <= 0) x = fallback;
  return (x + multiple - 1) / multiple * multiple;
}

}  // namespace rlx::cpu
