// The few DirectX Shader Compiler (dxcompiler.dll) COM interfaces the directx target calls,
// declared from their published layout (dxcapi.h is not in every Windows toolchain: MinGW-w64
// lacks it). Only what compile_dxil() uses: DxcCreateInstance, IDxcCompiler3::Compile, and the
// result read through IDxcOperationResult (which IDxcResult extends). Vtable order matters:
// methods are listed exactly in the order of the published interfaces, unused ones included.
// Windows only. The names live in rlx::directx::dxc so they never clash with a real dxcapi.h.
#pragma once
#include <windows.h>
#include <unknwn.h>

namespace rlx::directx::dxc {

// CLSID_DxcCompiler {73E22D93-E6CE-47F3-B5BF-F0664F39C1B0}
inline constexpr GUID kClsidCompiler = {0x73e22d93, 0xe6ce, 0x47f3, {0xb5, 0xbf, 0xf0, 0x66, 0x4f, 0x39, 0xc1, 0xb0}};
// IID_IDxcCompiler3 {228B4687-5A6A-4730-900C-9702B2203F54}
inline constexpr GUID kIidCompiler3 = {0x228b4687, 0x5a6a, 0x4730, {0x90, 0x0c, 0x97, 0x02, 0xb2, 0x20, 0x3f, 0x54}};
// IID_IDxcOperationResult {CEDB484A-D4E9-445A-B991-CA21CA157DC2}
inline constexpr GUID kIidOperationResult = {0xcedb484a, 0xd4e9, 0x445a, {0xb9, 0x91, 0xca, 0x21, 0xca, 0x15, 0x7d, 0xc2}};

inline constexpr UINT32 kCodePageUtf8 = 65001;  // DXC_CP_UTF8

// DxcBuffer: source text handed to Compile.
struct Buffer {
  LPCVOID ptr;
  SIZE_T size;
  UINT encoding;
};

// IDxcBlob {8BA5FB08-5195-40E2-AC58-0D989C3A0102}
struct Blob : public IUnknown {
  virtual LPVOID STDMETHODCALLTYPE GetBufferPointer() = 0;
  virtual SIZE_T STDMETHODCALLTYPE GetBufferSize() = 0;
};

// IDxcBlobEncoding {7241D424-2646-4191-97C0-98E96E42FC68}
struct BlobEncoding : public Blob {
  virtual HRESULT STDMETHODCALLTYPE GetEncoding(BOOL* known, UINT32* code_page) = 0;
};

// IDxcIncludeHandler: never implemented here (the kernels include nothing); passed as null.
struct IncludeHandler;

// IDxcOperationResult {CEDB484A-D4E9-445A-B991-CA21CA157DC2}
struct OperationResult : public IUnknown {
  virtual HRESULT STDMETHODCALLTYPE GetStatus(HRESULT* status) = 0;
  virtual HRESULT STDMETHODCALLTYPE GetResult(Blob** result) = 0;           // the DXIL container
  virtual HRESULT STDMETHODCALLTYPE GetErrorBuffer(BlobEncoding** errors) = 0;  // the log
};

// IDxcCompiler3 {228B4687-5A6A-4730-900C-9702B2203F54}
struct Compiler3 : public IUnknown {
  virtual HRESULT STDMETHODCALLTYPE Compile(const Buffer* source, LPCWSTR* arguments, UINT32 argument_count,
                                            IncludeHandler* include_handler, REFIID riid, LPVOID* result) = 0;
  virtual HRESULT STDMETHODCALLTYPE Disassemble(const Buffer* object, REFIID riid, LPVOID* result) = 0;
};

// DxcCreateInstance, exported by dxcompiler.dll.
using CreateInstanceProc = HRESULT(WINAPI*)(REFCLSID clsid, REFIID riid, LPVOID* object);

}  // namespace rlx::directx::dxc
