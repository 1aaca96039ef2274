// The webgpu target's browser artifact: an ES module (model.mjs) that runs a compiled program's
// WGSL with WebGPU (navigator.gpu), beside the kernels (webgpu_kernels.wgsl) and the constants
// (weights.bin, each constant at a 4-byte aligned offset). It does what the native executor
// does (gpu_host/device_executable.h): one storage buffer per storage, constants uploaded once,
// launches in order on a 2D grid of 64-wide groups, whole-buffer copies, the index status check.
//
//   import { run } from './model.mjs';
//   const outputs = await run({ x: new Float32Array([...]) });  // name -> typed array
//
// Inputs and outputs are typed arrays holding the tensors' row-major bytes: Float32Array (f32),
// Int32Array (i32), Uint16Array (f16/bf16 bits), Uint8Array (bool), BigInt64Array (i64),
// Float64Array (f64). The module is self-contained (no rlx at run time) and needs its files
// served over http(s): browsers refuse fetch() of file:// URLs.
//
// What it cannot run it refuses when run() is called, saying why: while loops (host control flow
// not written in JavaScript yet), and kernels using i64/f64, which only wgpu-native's extensions
// have (compile with RLX_WEBGPU_PORTABLE=1 to have rlx refuse those at compile time instead).
#pragma once
#include <filesystem>
#include <vector>

#include "module_plan.h"
#include "rlx/core/target.h"

namespace rlx::webgpu {

// Writes model.mjs and weights.bin into `dir` (webgpu_kernels.wgsl is the caller's).
std::vector<Artifact> write_es_module(const lir::Program& program, const gpu_host::ModulePlan& plan,
                                      const std::filesystem::path& dir);

}  // namespace rlx::webgpu
