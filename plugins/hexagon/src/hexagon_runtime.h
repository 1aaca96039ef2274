// The freestanding runtime every Hexagon program is built with (plugins/hexagon/runtime: float
// math, the division helpers of clang's Hexagon backend, HVX dot products, syscall file I/O),
// embedded in the plugin by the build.
#pragma once

namespace rlx::hexagon {

inline constexpr const char* kRuntimeHeaderName = "rlx_hexagon_rt.h";
inline constexpr const char* kRuntimeSourceName = "rlx_hexagon_rt.c";
extern const char* const kRuntimeHeader;
extern const char* const kRuntimeSource;

}  // namespace rlx::hexagon
