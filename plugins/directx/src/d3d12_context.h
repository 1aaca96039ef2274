// The process's Direct3D 12 device (the default adapter, DXGI adapter 0), its capabilities, and
// the command recording state every directx adapter shares: one direct queue, one command list
// recorded until the host needs a result, a fence to wait on it. Windows only.
//
// Buffers keep the resource state the recorded commands leave them in (D3D12Buffer::state), and
// transition() records a barrier when the next use needs another; every dispatch ends with a UAV
// barrier, so each later command sees what earlier ones wrote (as the Vulkan adapter does).
#pragma once
#include <d3d12.h>
#include <wrl/client.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "d3d12_info.h"

namespace rlx::directx {

using Microsoft::WRL::ComPtr;

// One storage buffer: a committed resource in a default heap that allows unordered access.
struct D3D12Buffer {
  ComPtr<ID3D12Resource> resource;
  D3D12_RESOURCE_STATES state = D3D12_RESOURCE_STATE_COMMON;
  uint64_t size = 0;
};

// Root signatures hold UAV root descriptors (2 DWORDs each) within D3D12's 64-DWORD limit.
inline constexpr size_t kMaxRootUavs = 32;

class D3D12Context {
 public:
  // The process's context (created on first use, never destroyed), or nullptr with `why` saying
  // what is missing: no D3D12 device, shader model below 6.2.
  static D3D12Context* get(std::string* why);

  const D3D12Info& info() const { return info_; }
  ID3D12Device* device() const { return device_.Get(); }
  std::mutex& mutex() { return mutex_; }

  // Throws rlx::Error (kUser) naming the call, the HRESULT and the device (and why it was removed).
  void check(HRESULT hr, const char* call) const;

  // The command list, open for recording.
  ID3D12GraphicsCommandList* recording();
  void transition(D3D12Buffer& buffer, D3D12_RESOURCE_STATES to);
  // Readies `buffer` as the destination of a copy. Copies into a buffer already in COPY_DEST are
  // not ordered with the earlier ones (legacy barriers order only state changes), so such a
  // buffer passes through COMMON first: the later copy lands last.
  void copy_destination(D3D12Buffer& buffer);
  void uav_barrier();
  // A buffer in an upload or readback heap (mappable), kept alive until the next flush.
  ID3D12Resource* staging(D3D12_HEAP_TYPE heap, uint64_t bytes);
  // The root signature binding `uavs` UAV root descriptors to u0..u<uavs-1>, made once per count.
  ID3D12RootSignature* root_signature(size_t uavs);
  // Executes what was recorded and waits for it.
  void flush();

 private:
  D3D12Context() = default;
  bool init(std::string* why);

  D3D12Info info_;
  ComPtr<ID3D12Device> device_;
  ComPtr<ID3D12CommandQueue> queue_;
  ComPtr<ID3D12CommandAllocator> allocator_;
  ComPtr<ID3D12GraphicsCommandList> list_;
  ComPtr<ID3D12Fence> fence_;
  HANDLE fence_event_ = nullptr;
  uint64_t fence_value_ = 0;
  bool recording_ = false;
  std::vector<ComPtr<ID3D12Resource>> staging_;
  std::map<size_t, ComPtr<ID3D12RootSignature>> root_signatures_;
  std::mutex mutex_;
};

// The description of a plain buffer resource of `bytes` bytes (row-major, no format).
D3D12_RESOURCE_DESC buffer_desc(uint64_t bytes, D3D12_RESOURCE_FLAGS flags);

}  // namespace rlx::directx
