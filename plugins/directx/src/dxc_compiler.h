// HLSL -> DXIL with the DirectX Shader Compiler, loaded at run time (dxcompiler.dll, found by
// the normal DLL search: next to the executable, then PATH). Windows only. Thread-safe: the DLL
// and its compiler object are created once per process.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace rlx::directx {

// Whether dxcompiler.dll loads and makes a compiler; `why` says what is missing when not.
bool dxc_available(std::string* why);

// Compiles one compute shader (entry point `main`, target cs_6_2; -enable-16bit-types when the
// text uses 16-bit types) to a DXIL container. Throws rlx::Error (kCompile) with DXC's log and
// the kernel named by `what` on failure, kUser when dxcompiler.dll is absent.
std::vector<uint8_t> compile_dxil(const std::string& hlsl, const std::string& what);

}  // namespace rlx::directx
