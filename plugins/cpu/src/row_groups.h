// Rows in groups of up to eight with the group's size as a compile-time constant: the bf16
// register blocks (gemm_bf16_dot.cpp, nn_attention_bf16.cpp) keep eight rows' accumulators in
// registers only when the row count is a template parameter.
#pragma once
#include <cstdint>
#include <type_traits>

namespace rlx::cpu {

// f(std::integral_constant<int, R>, first row) for rows [0, rows) in groups of R <= 8.
template <typename F>
void by_eight(int64_t rows, const F& f) {
  for (int64_t i = 0; i < rows; i += 8) {
    switch (rows - i < 8 ? rows - i : 8) {
      case 1:
        f(std::integral_constant<int, 1>(), i);
        break;
      case 2:
        f(std::integral_constant<int, 2>(), i);
        break;
      case 3:
        f(std::integral_constant<int, 3>(), i);
        break;
      case 4:
        f(std::integral_constant<int, 4>(), i);
        break;
      case 5:
        f(std::integral_constant<int, 5>(), i);
        break;
      case 6:
        f(std::integral_constant<int, 6>(), i);
        break;
      case 7:
        f(std::integral_constant<int, 7>(), i);
        break;
      default:
        f(std::integral_constant<int, 8>(), i);
        break;
    }
  }
}

}  // namespace rlx::cpu
