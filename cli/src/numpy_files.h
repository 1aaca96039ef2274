// numpy's array files as inputs: .npy (one array, `--input NAME=@x.npy`) and .npz (a zip of
// .npy members named <input>.npy, `--inputs IN.npz`). Little-endian C-order arrays of bool,
// i8/u8, i16/u16, i32/u32, i64/u64, f16, f32, f64 and complex64; anything else (big-endian,
// Fortran order, strings, objects, structured dtypes) is a user error naming the file and member.
#pragma once
#include <string>

#include "rlx/core/safetensors.h"
#include "rlx/core/tensor.h"

namespace rlx::cli {

// One .npy file's array; `where` names it in errors ("x.npy", "in.npz member 'ids.npy'").
Tensor parse_npy(const std::string& bytes, const std::string& where);
Tensor read_npy(const std::string& path);

// Every member of an .npz archive, by its name without ".npy"; stored and deflated members.
TensorMap read_npz(const std::string& path);

}  // namespace rlx::cli
