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
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <regex>
#include <thread>

#include "msl_library.h"
#include "msl_on_cpu_sync.h"
#include "rlx/core/error.h"
#include "rlx/sdk/process.h"

namespace rlx::metal::test {

namespace {

namespace fs = std::filesystem;

// Every dispatch of the target uses groups of 64 threads (render.h).
constexpr int kGroup = kStandInGroup;

using Entry = void (*)(void* const* buffers, unsigned gid, unsigned lid, unsigned group,
                       void* sync);

struct KernelInfo {
  Entry entry = nullptr;
  bool cooperative = false;  // waits at threadgroup_barrier or in a SIMD-group reduction
};

struct CpuModule final : gpu_host::Module {
  void* handle = nullptr;
  std::map<std::string, KernelInfo> kernels;
  ~CpuModule() override {
    if (handle) dlclose(handle);
  }
};

// The kernels of a module in order, with whether each one's text (up to the next) has a barrier
// or a SIMD-group reduction: those run a group's 64 threads together.
std::vector<std::pair<std::string, bool>> kernels_of(const std::string& source) {
  static const std::regex kKernel(R"((^|\n)kernel void ([A-Za-z_][A-Za-z0-9_]*)\()");
  std::vector<std::pair<std::string, size_t>> starts;
  for (auto it = std::sregex_iterator(source.begin(), source.end(), kKernel);
       it != std::sregex_iterator(); ++it)
    starts.emplace_back((*it)[2].str(), static_cast<size_t>(it->position(0)));
  std::vector<std::pair<std::string, bool>> out;
  for (size_t i = 0; i < starts.size(); ++i) {
    const size_t end = i + 1 < starts.size() ? starts[i + 1].second : source.size();
    const std::string body = source.substr(starts[i].second, end - starts[i].second);
    bool waits = false;
    for (const char* call :
         {"threadgroup_barrier(", "simd_sum(", "simd_max(", "simd_min(", "simd_product("})
      waits = waits || body.find(call) != std::string::npos;
    out.emplace_back(starts[i].first, waits);
  }
  return out;
}

// The system C++ compiler ($CXX, else c++ on PATH) as an absolute path (run_command needs one).
std::string compiler() {
  const char* cxx = std::getenv("CXX");
  std::string path = sdk::find_executable(cxx && *cxx ? cxx : "c++");
  if (path.empty())
    throw Error(ErrorKind::kCompile, "metal (on cpu): no C++ compiler ($CXX, c++) on PATH");
  return path;
}

// FNV-1a, as hex: names cached files by their content.
std::string hash_of(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return fmt::format("{:016x}", h);
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Compiling a module took about 0.9 s, two thirds of it parsing msl_on_cpu.h and the standard
// headers, and the suites build hundreds of modules: the header is precompiled once and modules
// are kept by the hash of their text, in $RLX_MSL_ON_CPU_CACHE, else <temp>/rlx-msl-on-cpu-<uid>.
// Files land under temporary names and are renamed into place, so test processes running at once
// share the folder. The hashes cover the compiler, its flags and the stand-in's headers.
class ModuleCache {
 public:
  ModuleCache() : cxx_(compiler()) {
    const char* env = std::getenv("RLX_MSL_ON_CPU_CACHE");
    dir_ = env && *env ? fs::path(env)
                       : fs::temp_directory_path() / fmt::format("rlx-msl-on-cpu-{}", getuid());
    // No fast math and no contraction: the renderer's semantics round every op (render.h), as a
    // Metal host compiling with MTLMathModeSafe would.
    flags_ = {"-std=c++20", "-O1", "-fPIC", "-ffp-contract=off", "-Wno-attributes"};
    std::string id = cxx_;
    for (const std::string& f : flags_) id += " " + f;
    for (const char* h : {"/msl_on_cpu.h", "/msl_on_cpu_sync.h", "/metal_stdlib"})
      id += read_text(std::string(RLX_MSL_ON_CPU_DIR) + h);
    id += read_text(std::string(RLX_CORE_INCLUDE_DIR) + "/rlx/core/half.h");
    toolchain_ = hash_of(id);
    pch_dir_ = dir_ / ("pch-" + toolchain_);
  }

  // The shared library of `cpp`, compiled unless the cache has it.
  fs::path library(const std::string& cpp) {
    std::lock_guard lock(mutex_);
    const std::string key = hash_of(toolchain_ + cpp);
    const fs::path so = dir_ / (key + ".so");
    if (fs::exists(so)) return so;
    precompile_header();
    const fs::path src = dir_ / (key + ".cpp"), tmp = temporary(so);
    write(src, cpp);
    run({"-shared", "-Winvalid-pch", "-I", pch_dir_.string(), "-o", tmp.string(), src.string()},
        src);
    fs::rename(tmp, so);
    return so;
  }

 private:
  // <metal_stdlib> and its .gch in a folder searched first, so every module's first line, the
  // #include of <metal_stdlib>, reads the precompiled header.
  void precompile_header() {
    const fs::path gch = pch_dir_ / "metal_stdlib.gch";
    if (fs::exists(gch)) return;
    fs::create_directories(pch_dir_);
    const fs::path header = pch_dir_ / "metal_stdlib";
    write(header, read_text(std::string(RLX_MSL_ON_CPU_DIR) + "/metal_stdlib"));
    const fs::path tmp = temporary(gch);
    run({"-x", "c++-header", "-o", tmp.string(), header.string()}, header);
    fs::rename(tmp, gch);
  }

  fs::path temporary(const fs::path& path) {
    return fs::path(path).concat(fmt::format(".{}-{}.tmp", getpid(), serial_++));
  }

  void write(const fs::path& path, const std::string& text) {
    fs::create_directories(dir_);
    const fs::path tmp = temporary(path);
    std::ofstream(tmp, std::ios::binary) << text;
    fs::rename(tmp, path);
  }

  // The compiler with the flags, `args`, then the stand-in's include folders (after any of
  // `args`, so the precompiled header's folder is searched first).
  void run(const std::vector<std::string>& args, const fs::path& source) {
    std::vector<std::string> argv = {cxx_};
    argv.insert(argv.end(), flags_.begin(), flags_.end());
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"-I", RLX_MSL_ON_CPU_DIR, "-I", RLX_CORE_INCLUDE_DIR});
    std::string log;
    if (sdk::run_command(argv, &log) != 0)
      throw Error(ErrorKind::kCompile,
                  fmt::format("metal (on cpu): {} failed on {}:\n{}", cxx_, source.string(), log));
  }

  std::mutex mutex_;
  std::string cxx_, toolchain_;
  std::vector<std::string> flags_;
  fs::path dir_, pch_dir_;
  int serial_ = 0;
};

ModuleCache& module_cache() {
  static ModuleCache cache;
  return cache;
}

// The 64 threads of a group for the cooperative kernels, made once: creating them for every group
// cost more than the kernels (most of a model's run was spent in the kernel's clone and exit).
// Lane 0 is the caller; the others wait for each group at `start_` and report at `done_`.
class GroupThreads {
 public:
  GroupThreads() {
    for (int l = 1; l < kGroup; ++l) workers_.emplace_back([this, l] { work(l); });
  }
  ~GroupThreads() {
    stop_ = true;  // seen by the workers after start_: the barrier orders it
    start_.arrive_and_wait();
  }
  void run(const std::function<void(int lane)>& lane) {
    lane_ = &lane;
    start_.arrive_and_wait();
    lane(0);
    done_.arrive_and_wait();
  }

 private:
  void work(int l) {
    for (;;) {
      start_.arrive_and_wait();
      if (stop_) return;
      (*lane_)(l);
      done_.arrive_and_wait();
    }
  }
  std::barrier<> start_{kGroup}, done_{kGroup};
  const std::function<void(int)>* lane_ = nullptr;
  bool stop_ = false;
  std::vector<std::jthread> workers_;  // last: joined before the barriers go
};

}  // namespace

std::string msl_as_cpp(const std::string& source) {
  std::string out = source + "\n// Entries for the host (msl_on_cpu_api.cpp).\n";
  for (const auto& [name, cooperative] : kernels_of(source))
    out += fmt::format(
        "extern \"C\" void rlx_entry_{0}(void* const* buffers, unsigned gid, unsigned lid, "
        "unsigned group, void* sync) {{\n"
        "  auto* s = static_cast<rlx::metal::test::GroupSync*>(sync);\n"
        "  metal::rlx_group_barrier = s ? &s->barrier : nullptr;\n"
        "  metal::rlx_simd_sync = s ? &s->simd[lid / rlx::metal::test::kStandInSimdWidth] : "
        "nullptr;\n"
        "  metal::rlx_simd_lane = lid % rlx::metal::test::kStandInSimdWidth;\n"
        "  metal::rlx_call({0}, buffers, gid, lid, group);\n}}\n",
        name);
  return out;
}

const gpu_host::KernelLibrary& MslOnCpuApi::library() const {
  return msl_library();
}

gpu_host::DeviceBuffer MslOnCpuApi::allocate(size_t bytes) {
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p)
    throw Error(ErrorKind::kDevice,
                fmt::format("metal (on cpu): out of memory for {} bytes", bytes));
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

void MslOnCpuApi::copy(const gpu_host::DeviceBuffer& src, const gpu_host::DeviceBuffer& dst,
                       size_t bytes) {
  std::memmove(dst.handle, src.handle, bytes);
}

std::unique_ptr<gpu_host::Module> MslOnCpuApi::build(const std::string& source) {
  auto module = std::make_unique<CpuModule>();
  const fs::path so = module_cache().library(msl_as_cpp(source));
  module->handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!module->handle)
    throw Error(ErrorKind::kCompile, fmt::format("metal (on cpu): dlopen: {}", dlerror()));
  for (const auto& [name, cooperative] : kernels_of(source)) {
    auto entry = reinterpret_cast<Entry>(dlsym(module->handle, ("rlx_entry_" + name).c_str()));
    if (!entry) throw Error(ErrorKind::kCompile, "metal (on cpu): no entry for kernel " + name);
    module->kernels[name] = {entry, cooperative};
  }
  return module;
}

void MslOnCpuApi::launch(gpu_host::Module& module, const std::string& symbol,
                         const std::vector<const gpu_host::DeviceBuffer*>& args,
                         int64_t work_items) {
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
        k.entry(buffers.data(), static_cast<unsigned>(g * kGroup + l), l, static_cast<unsigned>(g),
                nullptr);
    return;
  }
  // One group at a time: the kernels' threadgroup arrays are the module's statics.
  static std::mutex one_group;
  std::lock_guard lock(one_group);
  static GroupThreads* threads = new GroupThreads;  // never joined at exit: workers just wait
  for (int64_t g = 0; g < groups; ++g) {
    GroupSync sync;  // fresh barriers for each group
    threads->run([&](int l) {
      k.entry(buffers.data(), static_cast<unsigned>(g * kGroup + l), l, static_cast<unsigned>(g),
              &sync);
    });
  }
}

}  // namespace rlx::metal::test
