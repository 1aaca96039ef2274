#include "d3d12_device.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "d3d12_context.h"
#include "dxc_compiler.h"
#include "rlx/core/error.h"
#include "rlx/sdk/render.h"  // shader_sections(): a module's kernels, each with the prelude

namespace rlx::directx {

namespace {

// D3D12_CS_DISPATCH_MAX_THREAD_GROUPS_PER_DIMENSION; the HLSL dialect's 2D grid assumes rows of
// at most this many groups of 64.
constexpr uint64_t kMaxGroups = 65535;

D3D12Buffer* buffer_of(const gpu_host::DeviceBuffer& b) { return static_cast<D3D12Buffer*>(b.handle); }

struct ShaderKernel {
  std::vector<uint8_t> dxil;
  ComPtr<ID3D12PipelineState> pipeline;
  ID3D12RootSignature* root = nullptr;  // owned by the context
  size_t bindings = 0;
};

class ShaderModule final : public gpu_host::Module {
 public:
  explicit ShaderModule(D3D12Context& c) : c_(c) {}
  ~ShaderModule() override {
    std::lock_guard lock(c_.mutex());
    try {
      c_.flush();  // recorded launches may still use these pipelines
    } catch (...) {
    }
  }
  std::map<std::string, ShaderKernel, std::less<>> kernels;

 private:
  D3D12Context& c_;
};

}  // namespace

const D3D12Info* D3D12Device::probe(std::string* why) {
  D3D12Context* c = D3D12Context::get(why);
  if (!c) return nullptr;
  std::string dxc_why;
  if (!dxc_available(&dxc_why)) {
    if (why) *why = fmt::format("{} has a Direct3D 12 device, but {}", c->info().describe(), dxc_why);
    return nullptr;
  }
  return &c->info();
}

std::shared_ptr<D3D12Device> D3D12Device::create(const std::string& target_name,
                                                 const gpu_host::KernelLibrary& library, std::string* why) {
  if (!probe(why)) return nullptr;
  return std::make_shared<D3D12Device>(*D3D12Context::get(nullptr), target_name, library);
}

gpu_host::DeviceBuffer D3D12Device::allocate(size_t bytes) {
  auto b = std::make_unique<D3D12Buffer>();
  b->size = (bytes + 15) / 16 * 16;
  D3D12_HEAP_PROPERTIES heap{};
  heap.Type = D3D12_HEAP_TYPE_DEFAULT;
  D3D12_RESOURCE_DESC desc = buffer_desc(b->size, D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS);
  std::lock_guard lock(context_.mutex());
  HRESULT hr = context_.device()->CreateCommittedResource(&heap, D3D12_HEAP_FLAG_NONE, &desc,
                                                          D3D12_RESOURCE_STATE_COMMON, nullptr,
                                                          IID_PPV_ARGS(&b->resource));
  if (FAILED(hr))
    throw Error(ErrorKind::kUser, fmt::format("{}: cannot allocate {} bytes on {} (HRESULT 0x{:08X})", name_, bytes,
                                              context_.info().describe(), static_cast<uint32_t>(hr)));
  return {b.release(), bytes};
}

void D3D12Device::release(gpu_host::DeviceBuffer& b) noexcept {
  D3D12Buffer* buffer = buffer_of(b);
  if (!buffer) return;
  std::lock_guard lock(context_.mutex());
  try {
    context_.flush();  // recorded commands may still use the buffer
  } catch (...) {
  }
  delete buffer;
  b.handle = nullptr;
}

void D3D12Device::upload(const gpu_host::DeviceBuffer& dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  std::lock_guard lock(context_.mutex());
  ID3D12Resource* staging = context_.staging(D3D12_HEAP_TYPE_UPLOAD, bytes);
  void* mapped = nullptr;
  context_.check(staging->Map(0, nullptr, &mapped), "ID3D12Resource::Map (upload)");
  std::memcpy(mapped, src, bytes);
  staging->Unmap(0, nullptr);
  D3D12Buffer& d = *buffer_of(dst);
  context_.copy_destination(d);
  context_.recording()->CopyBufferRegion(d.resource.Get(), 0, staging, 0, bytes);
}

void D3D12Device::download(const gpu_host::DeviceBuffer& src, void* dst, size_t bytes) {
  if (bytes == 0) return;
  std::lock_guard lock(context_.mutex());
  ID3D12Resource* staging = context_.staging(D3D12_HEAP_TYPE_READBACK, bytes);
  D3D12Buffer& s = *buffer_of(src);
  context_.transition(s, D3D12_RESOURCE_STATE_COPY_SOURCE);
  context_.recording()->CopyBufferRegion(staging, 0, s.resource.Get(), 0, bytes);
  ComPtr<ID3D12Resource> keep(staging);  // flush() drops the context's reference
  context_.flush();
  D3D12_RANGE read{0, bytes};
  void* mapped = nullptr;
  context_.check(keep->Map(0, &read, &mapped), "ID3D12Resource::Map (readback)");
  std::memcpy(dst, mapped, bytes);
  D3D12_RANGE written{0, 0};
  keep->Unmap(0, &written);
}

void D3D12Device::copy(const gpu_host::DeviceBuffer& src, const gpu_host::DeviceBuffer& dst, size_t bytes) {
  if (bytes == 0) return;
  std::lock_guard lock(context_.mutex());
  D3D12Buffer& s = *buffer_of(src);
  D3D12Buffer& d = *buffer_of(dst);
  context_.transition(s, D3D12_RESOURCE_STATE_COPY_SOURCE);
  context_.copy_destination(d);
  context_.recording()->CopyBufferRegion(d.resource.Get(), 0, s.resource.Get(), 0, bytes);
}

std::unique_ptr<gpu_host::Module> D3D12Device::build(const std::string& source) {
  auto module = std::make_unique<ShaderModule>(context_);
  for (auto& [symbol, text] : sdk::shader_sections(source)) {
    ShaderKernel k;
    k.dxil = compile_dxil(text, fmt::format("{} kernel {}", name_, symbol));
    module->kernels.emplace(symbol, std::move(k));
  }
  return module;
}

void D3D12Device::launch(gpu_host::Module& m, const std::string& symbol,
                         const std::vector<const gpu_host::DeviceBuffer*>& args, int64_t work_items) {
  auto& module = static_cast<ShaderModule&>(m);
  auto it = module.kernels.find(symbol);
  if (it == module.kernels.end()) throw_internal_error(fmt::format("{}: the module has no kernel {}", name_, symbol));
  ShaderKernel& k = it->second;
  const D3D12Info& info = context_.info();
  std::lock_guard lock(context_.mutex());
  if (!k.pipeline) {
    if (args.size() > kMaxRootUavs)
      throw Error(ErrorKind::kUser, fmt::format("{}: kernel {} binds {} buffers, more than the {} UAV root "
                                                "descriptors a Direct3D 12 root signature holds",
                                                name_, symbol, args.size(), kMaxRootUavs));
    k.root = context_.root_signature(args.size());
    D3D12_COMPUTE_PIPELINE_STATE_DESC desc{};
    desc.pRootSignature = k.root;
    desc.CS.pShaderBytecode = k.dxil.data();
    desc.CS.BytecodeLength = k.dxil.size();
    HRESULT hr = context_.device()->CreateComputePipelineState(&desc, IID_PPV_ARGS(&k.pipeline));
    if (FAILED(hr))
      throw Error(ErrorKind::kCompile, fmt::format("{}: {} could not create the pipeline of kernel {} (HRESULT "
                                                   "0x{:08X})",
                                                   name_, info.describe(), symbol, static_cast<uint32_t>(hr)));
    k.bindings = args.size();
  }
  if (args.size() != k.bindings)
    throw_internal_error(fmt::format("{}: kernel {} launched with {} buffers, built for {}", name_, symbol,
                                     args.size(), k.bindings));
  uint64_t groups = (static_cast<uint64_t>(work_items) + 63) / 64;
  uint64_t gx = std::min(groups, kMaxGroups);
  uint64_t gy = (groups + gx - 1) / gx;
  if (gy > kMaxGroups)
    throw Error(ErrorKind::kUser, fmt::format("{}: kernel {} needs {} work-items, more than {} can dispatch",
                                              name_, symbol, work_items, info.name));
  for (const gpu_host::DeviceBuffer* a : args) context_.transition(*buffer_of(*a), D3D12_RESOURCE_STATE_UNORDERED_ACCESS);
  ID3D12GraphicsCommandList* list = context_.recording();
  list->SetComputeRootSignature(k.root);
  list->SetPipelineState(k.pipeline.Get());
  for (size_t i = 0; i < args.size(); ++i)
    list->SetComputeRootUnorderedAccessView(static_cast<UINT>(i), buffer_of(*args[i])->resource->GetGPUVirtualAddress());
  list->Dispatch(static_cast<UINT>(gx), static_cast<UINT>(gy), 1);
  context_.uav_barrier();
}

void D3D12Device::finish() {
  std::lock_guard lock(context_.mutex());
  context_.flush();
}

}  // namespace rlx::directx
