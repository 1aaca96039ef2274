// What the gpu target refuses because of its device's capabilities, apart from OpenClDevice so
// that a device without an extension can be tested where the OpenCL driver has it (PoCL offers
// cl_khr_fp64 on x86).
#pragma once
#include <string>

#include "rlx/core/target.h"

namespace rlx::gpu {

// f64 needs cl_khr_fp64 and is never narrowed to f32 behind the user's back. 16-bit floats are
// stored as bits and computed in f32 (render.h), so they need no cl_khr_fp16. Decompositions
// write scalars as an f64 constant converted to the compute dtype, which constant folding
// removes before lowering: those two ops are accepted, and compile() checks that no f64 reached
// a kernel. `device` is how the refusal names the device ("<platform> / <name> (<version>)").
Verdict fp64_verdict(const NodeSignature& s, bool device_has_fp64, const std::string& device);

}  // namespace rlx::gpu
