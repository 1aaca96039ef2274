// The CPU a code-generating target generates for (`rlx compile --cpu NAME`): microcontroller
// targets emit code and build fragments for one core of a family (cortexm: cortex-m4, -m7,
// -m55). A target answers through Target::extension under kTargetCpuExtension, version
// kTargetCpuVersion; a target without it takes no --cpu.
#pragma once
#include <cstdint>
#include <string>

#include "rlx/core/target.h"

namespace rlx {

inline constexpr const char* kTargetCpuExtension = "rlx.target_cpu";
inline constexpr uint32_t kTargetCpuVersion = 1;

// The layout of version 1, owned by the target; `select` is noexcept (it crosses the plugin
// boundary unguarded) and reports failure as a message that lives as long as the target.
struct TargetCpuV1 {
  const char* cpus = "";  // the names it takes, comma-separated ("cortex-m4,cortex-m7")
  // Makes later emits generate for `cpu`: nullptr on success, else why not.
  const char* (*select)(void* context, const char* cpu) = nullptr;
  void* context = nullptr;
};

}  // namespace rlx
