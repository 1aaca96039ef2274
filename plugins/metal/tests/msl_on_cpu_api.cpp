#include "msl_on_cpu_api.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <thread>

#include "msl_library.h"
#include "rlx/core/error.h"
#include "rlx/sdk/process.h"

namespace rlx::metal::test {

namespace {

namespace fs = std::filesystem;

// Every dispatch of the target uses groups of 64 threads (render.h).
constexpr int kGroup = 64;

using Entry = void (*)(void* const* buffers, unsigned gid, unsigned lid, unsigned group, void* barrier);

struct KernelInfo {
  Entry entry = nullptr;
  bool cooperative = false;  // waits at threadgroup_barrier
};

struct CpuModule final : gpu_host::Module {
  void* handle = nullptr;
  fs::path dir;
  std::map<std::string, KernelInfo> kernels;
  ~CpuModule() override {
    if (handle) dlclose(handle);
      std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

// The kernels of a module in order, with whether each one's text (up to the next) has a barrier.
std::vector<std::pair<std::string, bool>> kernels_of(const std::string& source) {
  static const std::regex kKernel(R"((^|\n)kernel void ([A-Za-z_][A-Za-z0-9_]*)\()");
  std::vector<std::pair<std::string, size_t>> starts;
  for (auto it = std::sregex_iterator(source.begin(), source.end(), kKernel); it != std::sregex_iterator(); ++it)
    starts.emplace_back((*it)[2].str(), static_cast<size_t>(it->position(0)));
  std::vector<std::pair<std::string, bool>> out;
  for (size_t i = 0; i < starts.size(); ++i) {
    const size_t end = i + 1 < starts.size() ? starts[i + 1].second : source.size();
    const std::string body = source.substr(starts[i].second, end - starts[i].second);
    out.emplace_back(starts[i].first, body.find("threadgroup_barrier") != std::string::npos);
  }
  return out;
}

// The system C++ compiler ($CXX, else c++ on PATH) as an absolute path (run_command needs one).
std::string compiler() {
  const char* cxx = std::getenv("CXX");
  std::string path = sdk::find_executable(cxx && *cxx ? cxx : "c++");
  if (path.empty()) throw Error(ErrorKind::kCompile, "metal (on cpu): no C++ compiler ($CXX, c++) on PATH");
  return path;
}

}  // namespace

std::string msl_as_cpp(const std::string& source) {
  std::string out = source + "\n// Entries for the host (msl_on_cpu_api.cpp).\n";
  for (const auto& [name, cooperative] : kernels_of(source))
    out += fmt::format(
        "extern \"C\" void rlx_entry_{0}(void* const* buffers, unsigned gid, unsigned lid, unsigned group, "
        "void* barrier) {{\n  metal::rlx_group_barrier = static_cast<std::barrier<>*>(barrier);\n"
        "  metal::rlx_call({0}, buffers, gid, lid, group);\n}}\n",
        name);
  return out;
}

const gpu_host::KernelLibrary& MslOnCpuApi::library() const { return msl_library(); }

gpu_host::DeviceBuffer MslOnCpuApi::allocate(size_t bytes) {
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) throw Error(ErrorKind::kDevice, fmt::format("metal (on cpu): out of memory for {} bytes", bytes));
  return {p, bytes};
}

void MslOnCpuApi::release(gpu_host::DeviceBuffer& buffer) noexcept {
  std::free(buffer.handle);
  buffer = {};
}

void MslOnCpuApi::upload(const gpu_host::DeviceBuffer& dst, const void* src, size_t bytes) {
  std::memcpy(dst.handle, src, bytes);
}

void MslOnCpuApi::download(const gpu_host::DeviceBuffer& src, void* dst, size_t bytes) {
  std::memcpy(dst, src.handle, bytes);
}

void MslOnCpuApi::copy(const gpu_host::DeviceBuffer& src, const gpu_host::DeviceBuffer& dst, size_t bytes) {
  std::memmove(dst.handle, src.handle, bytes);
}

std::unique_ptr<gpu_host::Module> MslOnCpuApi::build(const std::string& source) {
  static std::atomic<int> serial{0};
  auto module = std::make_unique<CpuModule>();
  module->dir = fs::temp_directory_path() / fmt::format("rlx-msl-on-cpu-{}-{}", getpid(), serial++);
  fs::create_directories(module->dir);
  const fs::path cpp = module->dir / "module.cpp", so = module->dir / "module.so";
  std::ofstream(cpp) << msl_as_cpp(source);
  // No fast math and no contraction: the renderer's semantics round every op (render.h), as a
  // Metal host compiling with MTLMathModeSafe would.
  std::string log;
  const std::string cxx = compiler();
  const int rc = sdk::run_command({cxx, "-std=c++20", "-O1", "-fPIC", "-shared", "-ffp-contract=off",
                                   "-Wno-attributes", "-I", RLX_MSL_ON_CPU_DIR, "-I", RLX_CORE_INCLUDE_DIR,
                                   "-o", so.string(), cpp.string()},
                                  &log);
  if (rc != 0)
    throw Error(ErrorKind::kCompile, fmt::format("metal (on cpu): {} failed on {}:\n{}", cxx, cpp.string(), log));
  module->handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!module->handle) throw Error(ErrorKind::kCompile, fmt::format("metal (on cpu): dlopen: {}", dlerror()));
  for (const auto& [name, cooperative] : kernels_of(source)) {
    auto entry = reinterpret_cast<Entry>(dlsym(module->handle, ("rlx_entry_" + name).c_str()));
    if (!entry) throw Error(ErrorKind::kCompile, "metal (on cpu): no entry for kernel " + name);
    module->kernels[name] = {entry, cooperative};
  }
  return module;
}

void MslOnCpuApi::launch(gpu_host::Module& module, const std::string& symbol,
                         const std::vector<const gpu_host::DeviceBuffer*>& args, int64_t work_items) {
  auto& m = static_cast<CpuModule&>(module);
  auto it = m.kernels.find(symbol);
  if (it == m.kernels.end()) throw Error(ErrorKind::kDevice, "metal (on cpu): no kernel " + symbol);
  std::vector<void*> buffers;
  for (const gpu_host::DeviceBuffer* b : args) buffers.push_back(b->handle);
  const KernelInfo k = it->second;
  const int64_t groups = (work_items + kGroup - 1) / kGroup;
  if (!k.cooperative) {
    for (int64_t g = 0; g < groups; ++g)
      for (int l = 0; l < kGroup; ++l)
        k.entry(buffers.data(), static_cast<unsigned>(g * kGroup + l), l, static_cast<unsigned>(g), nullptr);
    return;
  }
  for (int64_t g = 0; g < groups; ++g) {
    std::barrier<> barrier(kGroup);
    std::vector<std::jthread> threads;
    for (int l = 0; l < kGroup; ++l)
      threads.emplace_back([&, l] {
        k.entry(buffers.data(), static_cast<unsigned>(g * kGroup + l), l, static_cast<unsigned>(g), &barrier);
      });
  }
}

}  // namespace rlx::metal::test
