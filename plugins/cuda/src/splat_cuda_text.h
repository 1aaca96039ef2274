// The pieces of CUDA text the splatting modules are made of, one file per op family
// (splat_text_project.cpp, splat_text_tile_bin.cpp, splat_text_rasterize.cpp); each piece
// relies on the constants and helpers splat_cuda_kernels.cpp writes before it.
#pragma once

namespace rlx::cuda::splat_text {

extern const char* const kProjectOne;  // the per-Gaussian projection, shared by both ops
extern const char* const kProject;
extern const char* const kProjectBackward;
extern const char* const kTileBin;
extern const char* const kRasterCommon;  // what Rasterize and its backward share
extern const char* const kRasterize;
extern const char* const kRasterizeBackward;

}  // namespace rlx::cuda::splat_text
