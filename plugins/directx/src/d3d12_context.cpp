#include "d3d12_context.h"

#include <d3d12sdklayers.h>  // ID3D12Debug
#include <dxgi1_6.h>
#include <fmt/format.h>

#include <cstdlib>

#include "rlx/core/error.h"

namespace rlx::directx {

namespace {

// D3D_SHADER_MODEL_6_2 (0x62): the kernels' target (cs_6_2). Spelled as its value because older
// d3d12.h headers (MinGW-w64's among them) stop at 6_0.
constexpr D3D_SHADER_MODEL kShaderModel62 = static_cast<D3D_SHADER_MODEL>(0x62);

std::string level_name(D3D_FEATURE_LEVEL level) {
  return fmt::format("{}_{}", (static_cast<unsigned>(level) >> 12) & 0xF, (static_cast<unsigned>(level) >> 8) & 0xF);
}

std::string model_name(D3D_SHADER_MODEL model) {
  return fmt::format("{}.{}", (static_cast<unsigned>(model) >> 4) & 0xF, static_cast<unsigned>(model) & 0xF);
}

std::string narrow(const wchar_t* text) {
  std::string out;
  for (; *text; ++text) out += *text < 0x80 ? static_cast<char>(*text) : '?';
  return out;
}

D3D12_HEAP_PROPERTIES heap(D3D12_HEAP_TYPE type) {
  D3D12_HEAP_PROPERTIES p{};
  p.Type = type;
  return p;
}

}  // namespace

D3D12_RESOURCE_DESC buffer_desc(uint64_t bytes, D3D12_RESOURCE_FLAGS flags) {
  D3D12_RESOURCE_DESC d{};
  d.Dimension = D3D12_RESOURCE_DIMENSION_BUFFER;
  d.Width = bytes;
  d.Height = 1;
  d.DepthOrArraySize = 1;
  d.MipLevels = 1;
  d.Format = DXGI_FORMAT_UNKNOWN;
  d.SampleDesc.Count = 1;
  d.Layout = D3D12_TEXTURE_LAYOUT_ROW_MAJOR;
  d.Flags = flags;
  return d;
}

D3D12Context* D3D12Context::get(std::string* why) {
  struct Found {
    D3D12Context* context = nullptr;
    std::string error;
  };
  static const Found* found = [] {
    auto* f = new Found;
    auto* c = new D3D12Context;  // never destroyed, like the Vulkan context: drivers outlive exit
    if (c->init(&f->error)) f->context = c;  // a half-made context is leaked on purpose
    return f;
  }();
  if (!found->context && why) *why = found->error;
  return found->context;
}

bool D3D12Context::init(std::string* why) {
  // RLX_D3D12_DEBUG=1: the D3D12 debug layer (Graphics Tools) validates every call and reports
  // to the debugger's output; needed before the device is made.
  if (const char* debug = std::getenv("RLX_D3D12_DEBUG"); debug && *debug && *debug != '0') {
    ComPtr<ID3D12Debug> layer;
    if (SUCCEEDED(D3D12GetDebugInterface(IID_PPV_ARGS(&layer)))) layer->EnableDebugLayer();
  }
  ComPtr<IDXGIFactory1> factory;
  ComPtr<IDXGIAdapter1> adapter;
  if (FAILED(CreateDXGIFactory1(IID_PPV_ARGS(&factory))) || FAILED(factory->EnumAdapters1(0, &adapter))) {
    *why = "DXGI found no display adapter";
    return false;
  }
  DXGI_ADAPTER_DESC1 desc{};
  adapter->GetDesc1(&desc);
  info_.name = narrow(desc.Description);
  if (desc.Flags & DXGI_ADAPTER_FLAG_SOFTWARE) info_.name += " (software)";
  HRESULT hr = D3D12CreateDevice(adapter.Get(), D3D_FEATURE_LEVEL_11_0, IID_PPV_ARGS(&device_));
  if (FAILED(hr)) {
    *why = fmt::format("D3D12CreateDevice failed on {} (HRESULT 0x{:08X}): it has no Direct3D 12 driver at "
                       "feature level 11_0 or above",
                       info_.name, static_cast<uint32_t>(hr));
    return false;
  }
  const D3D_FEATURE_LEVEL levels[] = {D3D_FEATURE_LEVEL_11_0, D3D_FEATURE_LEVEL_11_1, D3D_FEATURE_LEVEL_12_0,
                                      D3D_FEATURE_LEVEL_12_1};
  D3D12_FEATURE_DATA_FEATURE_LEVELS fl{};
  fl.NumFeatureLevels = 4;
  fl.pFeatureLevelsRequested = levels;
  fl.MaxSupportedFeatureLevel = D3D_FEATURE_LEVEL_11_0;
  device_->CheckFeatureSupport(D3D12_FEATURE_FEATURE_LEVELS, &fl, sizeof(fl));
  info_.feature_level = level_name(fl.MaxSupportedFeatureLevel);

  // Shader model: ask for 6.2; the answer is the highest the driver has up to that. A runtime
  // that does not know 6.2 fails the query (E_INVALIDARG).
  D3D12_FEATURE_DATA_SHADER_MODEL sm{kShaderModel62};
  if (FAILED(device_->CheckFeatureSupport(D3D12_FEATURE_SHADER_MODEL, &sm, sizeof(sm)))) {
    *why = fmt::format("the Direct3D 12 runtime on {} predates shader model 6.2, which the directx kernels "
                       "need (Windows 10 version 1803 or later)",
                       info_.name);
    return false;
  }
  info_.shader_model = model_name(sm.HighestShaderModel);
  if (sm.HighestShaderModel < kShaderModel62) {
    *why = fmt::format("{} supports shader model {} only; the directx kernels need 6.2 (cs_6_2): update the "
                       "GPU driver",
                       info_.name, info_.shader_model);
    return false;
  }
  // The dtype capabilities: what is missing becomes a refusal (d3d12_legality.h), never a
  // narrowed dtype.
  D3D12_FEATURE_DATA_D3D12_OPTIONS o{};
  if (SUCCEEDED(device_->CheckFeatureSupport(D3D12_FEATURE_D3D12_OPTIONS, &o, sizeof(o))))
    info_.fp64 = o.DoublePrecisionFloatShaderOps;
  D3D12_FEATURE_DATA_D3D12_OPTIONS1 o1{};
  if (SUCCEEDED(device_->CheckFeatureSupport(D3D12_FEATURE_D3D12_OPTIONS1, &o1, sizeof(o1))))
    info_.int64 = o1.Int64ShaderOps;
  D3D12_FEATURE_DATA_D3D12_OPTIONS4 o4{};
  if (SUCCEEDED(device_->CheckFeatureSupport(D3D12_FEATURE_D3D12_OPTIONS4, &o4, sizeof(o4))))
    info_.native16 = o4.Native16BitShaderOpsSupported;

  try {
    D3D12_COMMAND_QUEUE_DESC q{};
    q.Type = D3D12_COMMAND_LIST_TYPE_DIRECT;
    check(device_->CreateCommandQueue(&q, IID_PPV_ARGS(&queue_)), "CreateCommandQueue");
    check(device_->CreateCommandAllocator(D3D12_COMMAND_LIST_TYPE_DIRECT, IID_PPV_ARGS(&allocator_)),
          "CreateCommandAllocator");
    check(device_->CreateCommandList(0, D3D12_COMMAND_LIST_TYPE_DIRECT, allocator_.Get(), nullptr,
                                     IID_PPV_ARGS(&list_)),
          "CreateCommandList");
    check(list_->Close(), "ID3D12GraphicsCommandList::Close");  // created open; recording() reopens it
    check(device_->CreateFence(0, D3D12_FENCE_FLAG_NONE, IID_PPV_ARGS(&fence_)), "CreateFence");
    fence_event_ = CreateEventW(nullptr, FALSE, FALSE, nullptr);
    if (!fence_event_) throw Error(ErrorKind::kUser, fmt::format("CreateEvent failed (Windows error {})", GetLastError()));
  } catch (const std::exception& e) {
    *why = e.what();
    return false;
  }
  return true;
}

void D3D12Context::check(HRESULT hr, const char* call) const {
  if (SUCCEEDED(hr)) return;
  std::string removed;
  if (hr == DXGI_ERROR_DEVICE_REMOVED && device_)
    removed = fmt::format(" (device removed: HRESULT 0x{:08X})", static_cast<uint32_t>(device_->GetDeviceRemovedReason()));
  throw Error(ErrorKind::kUser, fmt::format("Direct3D 12 {} failed on {}: HRESULT 0x{:08X}{}", call,
                                            info_.describe(), static_cast<uint32_t>(hr), removed));
}

ID3D12GraphicsCommandList* D3D12Context::recording() {
  if (!recording_) {
    check(allocator_->Reset(), "ID3D12CommandAllocator::Reset");
    check(list_->Reset(allocator_.Get(), nullptr), "ID3D12GraphicsCommandList::Reset");
    recording_ = true;
  }
  return list_.Get();
}

void D3D12Context::transition(D3D12Buffer& buffer, D3D12_RESOURCE_STATES to) {
  if (buffer.state == to) return;
  D3D12_RESOURCE_BARRIER b{};
  b.Type = D3D12_RESOURCE_BARRIER_TYPE_TRANSITION;
  b.Transition.pResource = buffer.resource.Get();
  b.Transition.Subresource = D3D12_RESOURCE_BARRIER_ALL_SUBRESOURCES;
  b.Transition.StateBefore = buffer.state;
  b.Transition.StateAfter = to;
  recording()->ResourceBarrier(1, &b);
  buffer.state = to;
}

void D3D12Context::copy_destination(D3D12Buffer& buffer) {
  if (buffer.state == D3D12_RESOURCE_STATE_COPY_DEST) transition(buffer, D3D12_RESOURCE_STATE_COMMON);
  transition(buffer, D3D12_RESOURCE_STATE_COPY_DEST);
}

void D3D12Context::uav_barrier() {
  D3D12_RESOURCE_BARRIER b{};
  b.Type = D3D12_RESOURCE_BARRIER_TYPE_UAV;
  b.UAV.pResource = nullptr;  // every UAV access
  recording()->ResourceBarrier(1, &b);
}

ID3D12Resource* D3D12Context::staging(D3D12_HEAP_TYPE type, uint64_t bytes) {
  // Upload heaps start (and stay) in GENERIC_READ, readback heaps in COPY_DEST.
  const D3D12_RESOURCE_STATES state =
      type == D3D12_HEAP_TYPE_UPLOAD ? D3D12_RESOURCE_STATE_GENERIC_READ : D3D12_RESOURCE_STATE_COPY_DEST;
  D3D12_HEAP_PROPERTIES props = heap(type);
  D3D12_RESOURCE_DESC desc = buffer_desc(bytes, D3D12_RESOURCE_FLAG_NONE);
  ComPtr<ID3D12Resource> r;
  check(device_->CreateCommittedResource(&props, D3D12_HEAP_FLAG_NONE, &desc, state, nullptr, IID_PPV_ARGS(&r)),
        "CreateCommittedResource (staging)");
  staging_.push_back(r);
  return r.Get();
}

ID3D12RootSignature* D3D12Context::root_signature(size_t uavs) {
  auto it = root_signatures_.find(uavs);
  if (it != root_signatures_.end()) return it->second.Get();
  std::vector<D3D12_ROOT_PARAMETER> params(uavs);
  for (size_t i = 0; i < uavs; ++i) {
    params[i].ParameterType = D3D12_ROOT_PARAMETER_TYPE_UAV;
    params[i].Descriptor.ShaderRegister = static_cast<UINT>(i);  // register(u<i>)
    params[i].Descriptor.RegisterSpace = 0;
    params[i].ShaderVisibility = D3D12_SHADER_VISIBILITY_ALL;
  }
  D3D12_ROOT_SIGNATURE_DESC desc{};
  desc.NumParameters = static_cast<UINT>(uavs);
  desc.pParameters = params.data();
  desc.Flags = D3D12_ROOT_SIGNATURE_FLAG_NONE;
  ComPtr<ID3DBlob> blob, errors;
  HRESULT hr = D3D12SerializeRootSignature(&desc, D3D_ROOT_SIGNATURE_VERSION_1, &blob, &errors);
  if (FAILED(hr)) {
    std::string log = errors ? std::string(static_cast<const char*>(errors->GetBufferPointer()), errors->GetBufferSize()) : "";
    throw Error(ErrorKind::kInternal, fmt::format("D3D12SerializeRootSignature failed for {} UAVs (HRESULT "
                                                  "0x{:08X}): {}",
                                                  uavs, static_cast<uint32_t>(hr), log));
  }
  ComPtr<ID3D12RootSignature> rs;
  check(device_->CreateRootSignature(0, blob->GetBufferPointer(), blob->GetBufferSize(), IID_PPV_ARGS(&rs)),
        "CreateRootSignature");
  root_signatures_[uavs] = rs;
  return rs.Get();
}

void D3D12Context::flush() {
  if (!recording_) return;
  recording_ = false;
  check(list_->Close(), "ID3D12GraphicsCommandList::Close");
  ID3D12CommandList* lists[] = {list_.Get()};
  queue_->ExecuteCommandLists(1, lists);
  check(queue_->Signal(fence_.Get(), ++fence_value_), "ID3D12CommandQueue::Signal");
  if (fence_->GetCompletedValue() < fence_value_) {
    check(fence_->SetEventOnCompletion(fence_value_, fence_event_), "ID3D12Fence::SetEventOnCompletion");
    WaitForSingleObject(fence_event_, INFINITE);
  }
  // A device lost while running shows here, not in ExecuteCommandLists.
  check(device_->GetDeviceRemovedReason(), "ExecuteCommandLists");
  staging_.clear();
}

}  // namespace rlx::directx
