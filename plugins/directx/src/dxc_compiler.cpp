#include "dxc_compiler.h"

#include <fmt/format.h>
#include <wrl/client.h>

#include <mutex>

#include "dxc_api.h"
#include "rlx/core/error.h"

namespace rlx::directx {

namespace {

using Microsoft::WRL::ComPtr;

struct Loaded {
  ComPtr<dxc::Compiler3> compiler;
  std::mutex mutex;  // one compile at a time: IDxcCompiler3 objects are not documented thread-safe
  std::string error;
};

Loaded& loaded() {
  static Loaded* l = [] {
    auto* out = new Loaded;  // never freed: the DLL stays loaded for the process
    HMODULE dll = LoadLibraryW(L"dxcompiler.dll");
    if (!dll) {
      out->error = fmt::format("dxcompiler.dll could not be loaded (Windows error {}); install the DirectX "
                               "Shader Compiler (it ships with the Windows SDK and in "
                               "github.com/microsoft/DirectXShaderCompiler releases) next to rlx or on PATH",
                               GetLastError());
      return out;
    }
    auto create = reinterpret_cast<dxc::CreateInstanceProc>(
        reinterpret_cast<void*>(GetProcAddress(dll, "DxcCreateInstance")));
    if (!create) {
      out->error = "dxcompiler.dll has no DxcCreateInstance export: it is not the DirectX Shader Compiler";
      return out;
    }
    HRESULT hr = create(dxc::kClsidCompiler, dxc::kIidCompiler3, reinterpret_cast<LPVOID*>(out->compiler.GetAddressOf()));
    if (FAILED(hr) || !out->compiler)
      out->error = fmt::format("dxcompiler.dll could not create IDxcCompiler3 (HRESULT 0x{:08X}); a DXC from "
                               "2019 or later is needed",
                               static_cast<uint32_t>(hr));
    return out;
  }();
  return *l;
}

std::string error_text(dxc::OperationResult& result) {
  ComPtr<dxc::BlobEncoding> errors;
  if (FAILED(result.GetErrorBuffer(errors.GetAddressOf())) || !errors || errors->GetBufferSize() == 0) return "";
  return std::string(static_cast<const char*>(errors->GetBufferPointer()), errors->GetBufferSize());
}

}  // namespace

bool dxc_available(std::string* why) {
  Loaded& l = loaded();
  if (!l.compiler && why) *why = l.error;
  return l.compiler != nullptr;
}

std::vector<uint8_t> compile_dxil(const std::string& hlsl, const std::string& what) {
  Loaded& l = loaded();
  if (!l.compiler) throw Error(ErrorKind::kUser, fmt::format("{}: {}", what, l.error));
  // uint16_t storage (f16, bf16, i16, u16 buffers) needs DXC's native 16-bit types.
  const bool sixteen = hlsl.find("int16_t") != std::string::npos || hlsl.find("float16_t") != std::string::npos;
  std::vector<LPCWSTR> args = {L"-T", L"cs_6_2", L"-E", L"main", L"-O3"};
  if (sixteen) args.push_back(L"-enable-16bit-types");
  dxc::Buffer source{hlsl.data(), hlsl.size(), dxc::kCodePageUtf8};
  ComPtr<dxc::OperationResult> result;
  std::lock_guard lock(l.mutex);
  HRESULT hr = l.compiler->Compile(&source, args.data(), static_cast<UINT32>(args.size()), nullptr,
                                   dxc::kIidOperationResult, reinterpret_cast<LPVOID*>(result.GetAddressOf()));
  if (FAILED(hr) || !result)
    throw Error(ErrorKind::kCompile, fmt::format("{}: IDxcCompiler3::Compile failed (HRESULT 0x{:08X})", what,
                                                 static_cast<uint32_t>(hr)));
  HRESULT status = E_FAIL;
  result->GetStatus(&status);
  if (FAILED(status))
    throw Error(ErrorKind::kCompile, fmt::format("{}: dxc -T cs_6_2 rejected the HLSL:\n{}", what, error_text(*result.Get())));
  ComPtr<dxc::Blob> dxil;
  if (FAILED(result->GetResult(dxil.GetAddressOf())) || !dxil || dxil->GetBufferSize() == 0)
    throw Error(ErrorKind::kCompile, fmt::format("{}: dxc returned no DXIL", what));
  const auto* bytes = static_cast<const uint8_t*>(dxil->GetBufferPointer());
  return std::vector<uint8_t>(bytes, bytes + dxil->GetBufferSize());
}

}  // namespace rlx::directx
