// The environment switches that turn one of the cuda target's kernel choices off, so a device
// run can race it against what it replaced (RLX_CUDA_GEMV_NORM=0, RLX_CUDA_ATTENTION_EARLY=0, ...),
// and those that turn on a choice not yet proven on a GPU (RLX_CUDA_ATTENTION_CLUSTER=1, ...).
#pragma once

#include <cstdlib>
#include <cstring>

namespace rlx::cuda {

// Whether the choice that `env` names is taken: yes unless the variable is set to "0".
inline bool switched_on(const char* env) {
  const char* value = std::getenv(env);
  return value == nullptr || std::strcmp(value, "0") != 0;
}

// Whether the opt-in choice that `env` names is taken: only when the variable is "1".
inline bool asked_for(const char* env) {
  const char* value = std::getenv(env);
  return value != nullptr && std::strcmp(value, "1") == 0;
}

}  // namespace rlx::cuda
