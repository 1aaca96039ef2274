// A Windows program that runs one kernel through the directx target's D3D12 adapter: it doubles
// 1000 floats on the default adapter and compares with 2*x computed here. Prints "SKIPPED: why"
// (and succeeds) without a D3D12 device with shader model 6.2 or without dxcompiler.dll.
// On Linux it is only cross-linked with MinGW-w64 (mingw_compile_check.cmake): proof that every
// Windows import the D3D12 host uses resolves. Never run here.
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "d3d12_context.h"
#include "d3d12_device.h"

namespace {

// The adapter asks its library nothing when it builds and launches a kernel.
class NoLibrary final : public rlx::gpu_host::KernelLibrary {
 public:
  const rlx::sdk::Dialect& dialect() const override { throw std::logic_error("no dialect in the smoke test"); }
  bool has_call(const std::string&) const override { return false; }
  rlx::gpu_host::NativeKernel call_kernel(const rlx::lir::CallKernel&, const rlx::lir::Program&, int32_t,
                                          int32_t, const rlx::gpu_host::ComputedUpdates*) const override {
    throw std::logic_error("no library calls in the smoke test");
  }
};

constexpr const char* kDouble = R"(//@rlx-kernel twice
RWStructuredBuffer<float> src : register(u0);
RWStructuredBuffer<float> dst : register(u1);
[numthreads(64, 1, 1)]
void main(uint3 id : SV_DispatchThreadID) {
  const uint i = id.y * 65535u * 64u + id.x;
  if (i < 1000u) dst[i] = 2.0f * src[i];
}
)";

}  // namespace

int main() {
  std::string why;
  if (!rlx::directx::D3D12Device::probe(&why)) {
    std::printf("SKIPPED: %s\n", why.c_str());
    return 0;
  }
  try {
    NoLibrary library;
    rlx::directx::D3D12Device device(*rlx::directx::D3D12Context::get(nullptr), "directx", library);
    std::vector<float> in(1000), out(1000, -1.0f);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i) * 0.5f - 100.0f;
    const size_t bytes = in.size() * sizeof(float);
    auto a = device.allocate(bytes), b = device.allocate(bytes);
    device.upload(a, in.data(), bytes);
    auto module = device.build(kDouble);
    device.launch(*module, "twice", {&a, &b}, static_cast<int64_t>(in.size()));
    device.download(b, out.data(), bytes);
    device.release(a);
    device.release(b);
    for (size_t i = 0; i < in.size(); ++i)
      if (out[i] != 2.0f * in[i]) {
        std::printf("FAILED: element %zu is %g, expected %g\n", i, out[i], 2.0f * in[i]);
        return 1;
      }
    std::printf("ok: 1000 floats doubled on %s\n", rlx::directx::D3D12Context::get(nullptr)->info().describe().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::printf("FAILED: %s\n", e.what());
    return 1;
  }
}
