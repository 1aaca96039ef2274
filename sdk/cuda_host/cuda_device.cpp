#include "cuda_device.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <vector>

#include "cuda_arch.h"
#include "cuda_matmul.h"
#include "dependent_launch.h"
#include "rlx/core/error.h"

namespace rlx::cuda {

namespace {

// Cooperative kernels (render_matmul, render_attention, render_norm) are written for blocks of
// 64 threads and say so (__launch_bounds__(64)); kernels with one thread per element take any
// block size and get kWideBlock: with 64-thread blocks an element-wise kernel over millions of
// elements was limited by how fast the device starts blocks, not by memory.
constexpr unsigned kBlock = 64;
constexpr unsigned kWideBlock = 256;

struct Kernel {
  CuFunction function = nullptr;
  unsigned block = kBlock;
  bool dependent = false;  // launched as a programmatic dependent (dependent_launch.h)
};

class CudaModule final : public gpu_host::Module {
 public:
  CudaModule(const DriverApi& cu, CuModule module) : cu_(cu), module_(module) {}
  ~CudaModule() override { cu_.cuModuleUnload(module_); }
  const DriverApi& cu_;
  CuModule module_;
  std::map<std::string, Kernel, std::less<>> functions_;
  std::set<std::string, std::less<>> awaiting_;  // kernels_that_await of its source
};

CuDevicePtr ptr(const gpu_host::DeviceBuffer& b) {
  return reinterpret_cast<CuDevicePtr>(b.handle);
}

std::string version_text(int v) {
  return fmt::format("{}.{}", v / 1000, v % 1000 / 10);
}

}  // namespace

unsigned launch_blocks(int64_t work_items, unsigned block, const std::string& target,
                       const std::string& symbol) {
  const int64_t blocks = (work_items + block - 1) / block;
  if (blocks > std::numeric_limits<int32_t>::max())
    throw_unsupported(
        fmt::format("{}: kernel {} needs {} blocks of {} threads, more than a grid holds", target,
                    symbol, blocks, block));
  return static_cast<unsigned>(blocks);
}

std::string CudaDeviceInfo::arch() const {
  return arch_of(cc_major, cc_minor);
}

std::string CudaDeviceInfo::describe() const {
  return fmt::format("{} ({}, {} GiB, driver CUDA {})", name, arch(), memory_bytes >> 30,
                     version_text(driver_version));
}

int local_rank_from_env() {
  for (const char* name : {"RLX_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"}) {
    const char* v = std::getenv(name);
    if (!v || !*v) continue;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    // A malformed value is ignored like an absent one: the launcher's own checks name it.
    if (*end == '\0' && n >= 0 && n <= std::numeric_limits<int>::max()) return static_cast<int>(n);
  }
  return 0;
}

const CudaContext* cuda_context(std::string* why) {
  struct Found {
    const CudaContext* context = nullptr;
    std::string error;
  };
  static const Found* found = [] {
    auto* f = new Found;
    std::string err;
    const DriverApi* cu = driver_api(&err);
    if (!cu) {
      f->error = err;
      return f;
    }
    if (CuResult rc = cu->cuInit(0); rc != kCudaSuccess) {
      f->error =
          rc == kCudaErrorNoDevice
              ? fmt::format("no CUDA device (cuInit: {})", cu_error_name(*cu, rc))
              : fmt::format("the CUDA driver did not start (cuInit: {})", cu_error_name(*cu, rc));
      return f;
    }
    CudaDeviceInfo info;
    cu->cuDriverGetVersion(&info.driver_version);
    if (info.driver_version < kMinDriverVersion) {
      f->error =
          fmt::format("driver older than CUDA {}: it supports CUDA {}; update the NVIDIA driver",
                      version_text(kMinDriverVersion), version_text(info.driver_version));
      return f;
    }
    NvrtcVersion nvrtc;
    if (!nvrtc_available(&err, &nvrtc)) {
      f->error = err;
      return f;
    }
    // A cubin from a newer toolkit major version than the driver's does not load.
    if (nvrtc.major > info.driver_version / 1000) {
      f->error = fmt::format(
          "driver older than NVRTC: the driver supports CUDA {}, NVRTC is {}.{}; update the "
          "driver, "
          "or set RLX_NVRTC to the libnvrtc of CUDA {}",
          version_text(info.driver_version), nvrtc.major, nvrtc.minor, info.driver_version / 1000);
      return f;
    }
    int count = 0;
    cu->cuDeviceGetCount(&count);
    if (count == 0) {
      f->error = "no CUDA device (the driver reports none)";
      return f;
    }
    if (const char* want = std::getenv("RLX_CUDA_DEVICE"); want && *want) {
      char* end = nullptr;
      long n = std::strtol(want, &end, 10);
      if (*end || n < 0 || n >= count) {
        f->error = fmt::format("RLX_CUDA_DEVICE='{}' is not a device ordinal here (0 to {})", want,
                               count - 1);
        return f;
      }
      info.ordinal = static_cast<int>(n);
    } else {
      info.ordinal = local_rank_from_env() % count;
    }
    CuDevice device = 0;
    CuContext context = nullptr;
    CuStream stream = nullptr;
    CuResult rc = cu->cuDeviceGet(&device, info.ordinal);
    if (rc == kCudaSuccess) rc = cu->cuDevicePrimaryCtxRetain(&context, device);
    if (rc == kCudaSuccess) rc = cu->cuCtxSetCurrent(context);
    if (rc == kCudaSuccess) rc = cu->cuStreamCreate(&stream, 0);
    if (rc != kCudaSuccess) {
      f->error =
          fmt::format("CUDA device {} cannot be opened: {}", info.ordinal, cu_error_name(*cu, rc));
      return f;
    }
    char name[256] = {};
    cu->cuDeviceGetName(name, sizeof name - 1, device);
    info.name = name;
    cu->cuDeviceGetAttribute(&info.cc_major, kAttrComputeCapabilityMajor, device);
    cu->cuDeviceGetAttribute(&info.cc_minor, kAttrComputeCapabilityMinor, device);
    cu->cuDeviceGetAttribute(&info.max_threads_per_block, kAttrMaxThreadsPerBlock, device);
    cu->cuDeviceTotalMem(&info.memory_bytes, device);
    f->context = new CudaContext{*cu, device, context, stream, std::move(info)};
    return f;
  }();
  if (!found->context && why) *why = found->error;
  return found->context;
}

std::shared_ptr<CudaDevice> CudaDevice::open(CudaKernelLanguage language, std::string* why) {
  const CudaContext* context = cuda_context(why);
  if (!context) return nullptr;
  return std::make_shared<CudaDevice>(*context, std::move(language));
}

void CudaDevice::check(CuResult rc, const char* call) const {
  if (rc == kCudaSuccess) return;
  throw Error(ErrorKind::kDevice, fmt::format("{}: {} failed on {}: {}", language_.target, call,
                                              info().describe(), cu_error_name(cu_, rc)));
}

void CudaDevice::make_current() const {
  check(cu_.cuCtxSetCurrent(context_.context), "cuCtxSetCurrent");
}

DeviceLimits CudaDevice::limits() const {
  DeviceLimits l;
  l.max_workgroup_size = static_cast<uint32_t>(info().max_threads_per_block);
  l.subgroup_size = 32;
  return l;
}

gpu_host::DeviceBuffer CudaDevice::allocate(size_t bytes) {
  make_current();
  CuDevicePtr p = 0;
  if (CuResult rc = cu_.cuMemAlloc(&p, bytes); rc != kCudaSuccess)
    throw Error(ErrorKind::kDevice,
                fmt::format("{}: cannot allocate {} bytes on {}: {}", language_.target, bytes,
                            info().describe(), cu_error_name(cu_, rc)));
  count(p, bytes);
  return {reinterpret_cast<void*>(p), bytes};
}

void CudaDevice::count(CuDevicePtr p, size_t bytes) {
  sizes_[p] = bytes;
  use_.bytes += bytes;
  use_.peak_bytes = std::max(use_.peak_bytes, use_.bytes);
}

void CudaDevice::release(gpu_host::DeviceBuffer& b) noexcept {
  if (b.handle && cu_.cuCtxSetCurrent(context_.context) == kCudaSuccess) {
    cu_.cuMemFree(ptr(b));
    if (auto it = sizes_.find(ptr(b)); it != sizes_.end()) {
      use_.bytes -= it->second;
      sizes_.erase(it);
    }
  }
  b.handle = nullptr;
}

std::optional<gpu_host::DeviceMemoryUse> CudaDevice::memory_use() const { return use_; }

bool CudaDevice::has_host_memory() const {
  const char* off = std::getenv("RLX_CUDA_HOST_MEMORY");
  return !(off && std::string(off) == "0");
}

void* CudaDevice::allocate_host(size_t bytes) {
  make_current();
  void* data = nullptr;
  // Out of lockable memory is not an error: the caller takes ordinary memory.
  if (cu_.cuMemHostAlloc(&data, bytes, 0) != kCudaSuccess) return nullptr;
  return data;
}

void CudaDevice::release_host(void* data) noexcept {
  // Any thread may give an output's memory back; the context must be current on it.
  if (data && cu_.cuCtxSetCurrent(context_.context) == kCudaSuccess) cu_.cuMemFreeHost(data);
}

void CudaDevice::upload(const gpu_host::DeviceBuffer& dst, const void* src, size_t bytes) {
  make_current();
  // Synchronised: the host memory may be freed as soon as this returns.
  check(cu_.cuMemcpyHtoDAsync(ptr(dst), src, bytes, context_.stream), "cuMemcpyHtoDAsync");
  check(cu_.cuStreamSynchronize(context_.stream), "cuStreamSynchronize");
}

void CudaDevice::download(const gpu_host::DeviceBuffer& src, void* dst, size_t bytes) {
  make_current();
  check(cu_.cuMemcpyDtoHAsync(dst, ptr(src), bytes, context_.stream), "cuMemcpyDtoHAsync");
  check(cu_.cuStreamSynchronize(context_.stream), "cuStreamSynchronize");
}

void CudaDevice::copy(const gpu_host::DeviceBuffer& src, const gpu_host::DeviceBuffer& dst,
                      size_t bytes) {
  make_current();
  check(cu_.cuMemcpyDtoDAsync(ptr(dst), ptr(src), bytes, context_.stream), "cuMemcpyDtoDAsync");
}

std::unique_ptr<gpu_host::Module> CudaDevice::build(const std::string& source) {
  make_current();
  NvrtcVersion v;
  nvrtc_available(nullptr, &v);
  const std::string arch = info().arch();
  // The headers are part of what was compiled: a changed one is another module.
  std::string identity = fmt::format("nvrtc {}.{}", v.major, v.minor);
  for (const NvrtcHeader& h : language_.headers) identity += "\n" + h.name + "\n" + h.text;
  auto compile = [&] {
    return nvrtc_compile(
        {source, language_.source_name, language_.target, language_.language, language_.headers},
        arch, NvrtcOutput::kCubin);
  };
  CachedModule cubin = find_or_compile(source, arch, identity, compile, language_.cache);
  CuModule module = nullptr;
  CuResult rc = cu_.cuModuleLoadData(&module, cubin.bytes.data());
  if (rc != kCudaSuccess && cubin.hit) {
    // A damaged or foreign entry: compiled again, said once.
    std::fprintf(stderr, "rlx: %s: the cached module %s did not load (%s); compiling it again\n",
                 language_.target.c_str(), cubin.path.c_str(), cu_error_name(cu_, rc).c_str());
    evict(cubin.path);
    cubin = find_or_compile(source, arch, identity, compile, language_.cache);
    rc = cu_.cuModuleLoadData(&module, cubin.bytes.data());
  }
  check(rc, "cuModuleLoadData");
  auto built = std::make_unique<CudaModule>(cu_, module);
  if (dependent_launches(cu_, info())) built->awaiting_ = kernels_that_await(source);
  return built;
}

void CudaDevice::launch(gpu_host::Module& m, const std::string& symbol,
                        const std::vector<const gpu_host::DeviceBuffer*>& args,
                        int64_t work_items) {
  make_current();
  auto& module = static_cast<CudaModule&>(m);
  auto it = module.functions_.find(symbol);
  if (it == module.functions_.end()) {
    Kernel k;
    check(cu_.cuModuleGetFunction(&k.function, module.module_, symbol.c_str()),
          "cuModuleGetFunction");
    int most = 0;
    check(cu_.cuFuncGetAttribute(&most, kFuncAttrMaxThreadsPerBlock, k.function),
          "cuFuncGetAttribute");
    k.block = most > static_cast<int>(kBlock) ? std::min<unsigned>(kWideBlock, most) : kBlock;
    k.dependent = module.awaiting_.count(symbol) > 0;
    it = module.functions_.emplace(symbol, k).first;
  }
  std::vector<CuDevicePtr> values(args.size());
  std::vector<void*> params(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    values[i] = ptr(*args[i]);
    params[i] = &values[i];
  }
  const Kernel& k = it->second;
  const unsigned blocks = launch_blocks(work_items, k.block, language_.target, symbol);
  if (k.dependent) {
    CuLaunchAttribute overlap;
    overlap.id = kLaunchAttrProgrammaticStreamSerialization;
    overlap.value.allowed = 1;
    CuLaunchConfig config;
    config.grid_x = blocks;
    config.block_x = k.block;
    config.stream = context_.stream;
    config.attrs = &overlap;
    config.num_attrs = 1;
    check(cu_.cuLaunchKernelEx(&config, k.function, params.data(), nullptr), "cuLaunchKernelEx");
    return;
  }
  check(cu_.cuLaunchKernel(k.function, blocks, 1, 1, k.block, 1, 1, 0, context_.stream,
                           params.data(), nullptr),
        "cuLaunchKernel");
}

void CudaDevice::finish() {
  make_current();
  check(cu_.cuStreamSynchronize(context_.stream), "cuStreamSynchronize");
}

}  // namespace rlx::cuda

namespace rlx::cuda {

namespace {

// cuBLASLt's scratch memory for split-k and similar algorithms: what its heuristics may ask for on
// Hopper, allocated once per device.
constexpr size_t kCublasLtWorkspace = size_t{32} << 20;

class CudaGraph final : public gpu_host::RecordedWork {
 public:
  CudaGraph(const DriverApi& cu, CuGraph graph) : cu_(cu), graph_(graph) {}
  ~CudaGraph() override {
    if (exec_) cu_.cuGraphExecDestroy(exec_);
    if (graph_) cu_.cuGraphDestroy(graph_);
  }
  CuGraphExec exec() const { return exec_; }
  void set_exec(CuGraphExec exec) { exec_ = exec; }

 private:
  const DriverApi& cu_;
  CuGraph graph_;
  CuGraphExec exec_ = nullptr;
};

class CudaStamp final : public gpu_host::DeviceStamp {
 public:
  CudaStamp(const DriverApi& cu, CuEvent event, CuStream stream)
      : cu_(cu), event_(event), stream_(stream) {}
  ~CudaStamp() override { cu_.cuEventDestroy(event_); }
  void record() override { expect(cu_.cuEventRecord(event_, stream_), "cuEventRecord"); }
  double ms_since(const gpu_host::DeviceStamp& earlier) const override {
    expect(cu_.cuEventSynchronize(event_), "cuEventSynchronize");
    float ms = 0;
    expect(cu_.cuEventElapsedTime(&ms, static_cast<const CudaStamp&>(earlier).event_, event_),
           "cuEventElapsedTime");
    return ms;
  }

 private:
  const DriverApi& cu_;
  CuEvent event_;
  CuStream stream_;

  void expect(CuResult rc, const char* call) const {
    if (rc != kCudaSuccess)
      throw Error(ErrorKind::kDevice, fmt::format("cuda: {} failed: {}", call, cu_error_name(cu_, rc)));
  }
};

}  // namespace

std::unique_ptr<gpu_host::DeviceStamp> CudaDevice::make_stamp() {
  make_current();
  CuEvent event = nullptr;
  check(cu_.cuEventCreate(&event, 0), "cuEventCreate");
  return std::make_unique<CudaStamp>(cu_, event, context_.stream);
}

void CudaDevice::zero(const gpu_host::DeviceBuffer& buffer, size_t bytes) {
  make_current();
  check(cu_.cuMemsetD8Async(ptr(buffer), 0, bytes, context_.stream), "cuMemsetD8Async");
}

std::unique_ptr<gpu_host::VendorCall> CudaDevice::prepare_call(const lir::CallKernel& call,
                                                               const lir::Program& program) {
  if (!language_.plan_call) return gpu_host::DeviceApi::prepare_call(call, program);
  make_current();
  return language_.plan_call(*this, call, program);
}

std::unique_ptr<gpu_host::VendorMatmul> CudaDevice::prepare_matmul(
    const sdk::MatmulShape& shape, const gpu_host::VendorEpilogue& epilogue) {
  make_current();
  std::string why;
  const CublasLtApi* lt = cublaslt_api(&why);
  if (!lt)
    throw Error(ErrorKind::kCompile,
                fmt::format("{}: {} needs cuBLASLt: {}", language_.target, shape.name, why));
  if (!lt_handle_) {
    if (CublasStatus rc = lt->create(&lt_handle_); rc != kCublasSuccess)
      throw Error(ErrorKind::kDevice,
                  fmt::format("{}: cublasLtCreate failed: {}", language_.target,
                              cublas_status_name(*lt, rc)));
    check(cu_.cuMemAlloc(&lt_workspace_, kCublasLtWorkspace), "cuMemAlloc (cuBLASLt workspace)");
    count(lt_workspace_, kCublasLtWorkspace);
  }
  // Products of one shape, dtypes, strides and additions pick the same algorithm: timed once.
  const std::string key = fmt::format(
      "{} {} {} {} {} {} {} {} {} {} {} {} {} {}{}", shape.batch, shape.m, shape.n, shape.k,
      dtype_name(shape.a_dtype), dtype_name(shape.b_dtype), dtype_name(shape.c_dtype),
      shape.a_batch, shape.a_m, shape.a_k, shape.b_batch, shape.b_k, shape.b_n,
      epilogue.bias ? "bias" : "", epilogue.residual ? " residual" : "");
  MatmulTuner tuner = [&](int count, const MatmulBytes& bytes,
                          const std::function<void(int, const MatmulOperands&)>& run) {
    if (auto it = tuned_.find(key); it != tuned_.end() && it->second < count) return it->second;
    const int best = time_candidates(count, bytes, run);
    tuned_[key] = best;
    return best;
  };
  return plan_cublaslt(*lt, lt_handle_, context_.stream, lt_workspace_, kCublasLtWorkspace, shape,
                       epilogue, cublaslt_tunes(shape) ? &tuner : nullptr);
}

int CudaDevice::time_candidates(int count, const MatmulBytes& bytes,
                                const std::function<void(int, const MatmulOperands&)>& run) {
  // Scratch operands (zeros: the data does not change a product's time), freed before the
  // program runs and so not counted in memory_use(), and two events.
  std::vector<CuDevicePtr> held;
  auto scratch = [&](size_t n) -> CuDevicePtr {
    if (n == 0) return 0;
    CuDevicePtr p = 0;
    check(cu_.cuMemAlloc(&p, n), "cuMemAlloc (timing cuBLASLt's algorithms)");
    held.push_back(p);
    check(cu_.cuMemsetD8Async(p, 0, n, context_.stream), "cuMemsetD8Async");
    return p;
  };
  std::unique_ptr<gpu_host::DeviceStamp> start, stop;
  int best = 0;
  try {
    MatmulOperands o{scratch(bytes.a), scratch(bytes.b), scratch(bytes.c), scratch(bytes.bias),
                     scratch(bytes.residual)};
    start = make_stamp();
    stop = make_stamp();
    double best_ms = 0;
    for (int i = 0; i < count; ++i) {
      try {
        run(i, o);  // warm: the first launch of a kernel loads it
        start->record();
        for (int r = 0; r < kTuneRuns; ++r) run(i, o);
        stop->record();
        const double ms = stop->ms_since(*start);
        if (i == 0 || ms < best_ms) best = i, best_ms = ms;
      } catch (const Error&) {
        finish();  // a candidate that cannot run here is not a choice
      }
    }
  } catch (...) {
    for (CuDevicePtr p : held) cu_.cuMemFree(p);
    throw;
  }
  finish();
  for (CuDevicePtr p : held) cu_.cuMemFree(p);
  return best;
}

bool CudaDevice::can_record() const {
  const char* graphs = std::getenv("RLX_CUDA_GRAPHS");
  return !(graphs && std::string_view(graphs) == "0");
}

void CudaDevice::begin_recording() {
  make_current();
  check(cu_.cuStreamBeginCapture(context_.stream, kCaptureModeThreadLocal), "cuStreamBeginCapture");
}

std::unique_ptr<gpu_host::RecordedWork> CudaDevice::end_recording() {
  make_current();
  CuGraph graph = nullptr;
  check(cu_.cuStreamEndCapture(context_.stream, &graph), "cuStreamEndCapture");
  auto work = std::make_unique<CudaGraph>(cu_, graph);  // frees the graph if instantiation fails
  CuGraphExec exec = nullptr;
  check(cu_.cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiateWithFlags");
  work->set_exec(exec);
  return work;
}

void CudaDevice::replay(gpu_host::RecordedWork& work) {
  make_current();
  check(cu_.cuGraphLaunch(static_cast<CudaGraph&>(work).exec(), context_.stream), "cuGraphLaunch");
}

}  // namespace rlx::cuda
