// Pieces of kernel text that the loop renderer (render_c.cpp) and the matrix-product renderer
// (render_matmul.cpp) write the same way. Internal to librlx_sdk.
#pragma once
#include <string>

#include "rlx/sdk/render.h"

namespace rlx::sdk::detail {

// Element `index` of buffer `ptr` as stored: the dialect's load_element where it packs `dtype`
// in words, else ptr[index]. `load` converts it to the compute type.
std::string read_element(const Dialect& d, const std::string& ptr, const std::string& index,
                         DType dtype);

// The statement storing `bits` (what `store` made) at element `index` of buffer `ptr`.
std::string write_element(const Dialect& d, const std::string& ptr, const std::string& index,
                          DType dtype, const std::string& bits);

// One kOnePerBuffer parameter: "__global const float* restrict b0".
std::string buffer_param(const Dialect& d, const std::string& storage_type, bool written,
                         const std::string& name);

}  // namespace rlx::sdk::detail
