#include "codegen_module.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <chrono>
#include <map>

#include "codegen_cache.h"
#include "erf_f32.h"
#include "prebuilt_kernels.h"
#include "rlx/core/error.h"

namespace rlx::cpu {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Kernels are rendered under this name, then renamed to their function's name, so two kernels
// that differ only in name and buffers render to the same text.
constexpr const char* kPlaceholder = "rlx_kernel_body";

// Scalar work (points times reduced points) below which a kernel runs on the calling thread:
// splitting costs a few microseconds, more than small kernels take.
constexpr int64_t kParallelWork = 1 << 15;
// Scalar work per task once split.
constexpr int64_t kGrainWork = 1 << 14;

}  // namespace

const sdk::Dialect& cpu_dialect() {
  static const sdk::Dialect d = [] {
    sdk::Dialect c = sdk::c_dialect();
    c.mapping = sdk::DomainMapping::kPointRange;
    c.buffer_params = sdk::BufferParams::kPositionalTable;
    c.float_accumulator = DType::kF64;  // as the interpreter: decisions.md 7
    // erf without a libm call for f32, so its loops vectorise; the same tokens as the
    // interpreter's (erf_f32.h). f64 keeps the C library's.
    c.math["erf"] = "rlx_erf";
    // A bf16 expression's value is already rounded (render_c rounds every 16-bit result), so its
    // store keeps the top half of the float's bits: the rounding with its NaN test, done again
    // at the store, cost a fifth of a GELU loop over bf16 (1.04 -> 0.85 ns an element).
    c.store_exact[static_cast<int>(DType::kBF16)] = "(uint16_t)(rlx_f32_bits({x}) >> 16)";
    c.prelude += "\n" RLX_STRINGIFY(RLX_ERFF_DEFINITION) "\n"
                 "static inline double rlx_erf(double x) { return erf(x); }\n";
    return c;
  }();
  return d;
}

ModuleSource render_module(const lir::Program& program) {
  ModuleSource m;
  std::map<std::string, int32_t> function_of_body;
  std::vector<std::string> bodies;
  std::vector<std::vector<std::string>> users;
  for (const lir::Kernel& kernel : program.kernels) {
    const auto* loop = std::get_if<lir::LoopKernel>(&kernel);
    if (!loop) {
      m.function_of_kernel.push_back(-1);
      continue;
    }
    lir::LoopKernel k = *loop;
    k.name = kPlaceholder;
    // A reduction over no dims is a copy (as the interpreter runs it): sum would turn -0 into +0.
    if (static_cast<size_t>(k.num_parallel) == k.domain.size()) k.reduce.clear();
    std::string text = sdk::render_kernel(k, program, cpu_dialect());
    auto [it, fresh] = function_of_body.emplace(std::move(text), static_cast<int32_t>(bodies.size()));
    if (fresh) {
      bodies.push_back(it->first);
      users.emplace_back();
    }
    users[it->second].push_back(loop->name);
    m.function_of_kernel.push_back(it->second);
  }
  m.functions = static_cast<int32_t>(bodies.size());
  m.text = cpu_dialect().prelude + "\n";
  for (size_t f = 0; f < bodies.size(); ++f) {
    std::string names;
    for (const auto& u : users[f]) names += (names.empty() ? "" : ", ") + u;
    std::string body = bodies[f];
    std::string call = std::string(kPlaceholder) + "(";
    size_t at = body.find(call);
    RLX_CHECK(at != std::string::npos, "rendered kernel lacks its signature");
    body.replace(at, call.size(), fmt::format("rlx_f{}(", f));
    m.text += fmt::format("// rlx_f{} runs {}\n{}\n", f, names, body);
  }
  return m;
}

KernelModule::KernelModule(const lir::Program& program, const Toolchain& tc) {
  auto t0 = Clock::now();
  ModuleSource src = render_module(program);
  stats_.codegen_ms = ms_since(t0);

  CachedObject obj = find_or_build(src.text, tc);
  auto t1 = Clock::now();
  handle_ = ::dlopen(obj.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_ && obj.hit) {  // damaged outside rlx: build it again, once
    evict(obj.path);
    obj = find_or_build(src.text, tc);
    t1 = Clock::now();
    handle_ = ::dlopen(obj.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  if (!handle_) {
    const char* why = ::dlerror();
    throw_internal_error(fmt::format("cpu: cannot load generated kernels {}: {}", obj.path.string(),
                                     why ? why : "unknown dlopen error"));
  }
  stats_.compiler_ms = obj.compiler_ms;
  stats_.cache_hit = obj.hit;
  bind_functions(std::move(src), obj.path, t1);
}

std::shared_ptr<const KernelModule> KernelModule::prebuilt(const lir::Program& program) {
  if (!has_prebuilt()) return nullptr;
  auto t0 = Clock::now();
  ModuleSource src = render_module(program);
  std::optional<std::filesystem::path> object = find_prebuilt(content_hash(src.text));
  if (!object) return nullptr;
  std::shared_ptr<KernelModule> m(new KernelModule());
  m->stats_.codegen_ms = ms_since(t0);
  auto t1 = Clock::now();
  m->handle_ = ::dlopen(object->c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!m->handle_) {
    // Not rebuilt: the folder was checked against its manifest, so the file was replaced since.
    const char* why = ::dlerror();
    throw_user_error(
        fmt::format("cpu: cannot load the prebuilt kernels {}: {}; compile the model "
                    "again with `rlx compile`",
                    object->string(), why ? why : "unknown dlopen error"));
  }
  m->stats_.cache_hit = true;
  m->stats_.prebuilt = true;
  m->bind_functions(std::move(src), *object, t1);
  return m;
}

void KernelModule::bind_functions(ModuleSource src, const std::filesystem::path& object,
                                  Clock::time_point load_start) {
  stats_.object = object;
  stats_.functions = src.functions;
  for (int32_t f : src.function_of_kernel) stats_.loop_kernels += f >= 0;
  std::vector<KernelFn> by_function(static_cast<size_t>(src.functions));
  for (int32_t f = 0; f < src.functions; ++f) {
    std::string name = fmt::format("rlx_f{}", f);
    by_function[f] = reinterpret_cast<KernelFn>(::dlsym(handle_, name.c_str()));
    if (!by_function[f])
      throw_internal_error(fmt::format("cpu: {} lacks the kernel {}", object.string(), name));
  }
  for (int32_t f : src.function_of_kernel) fns_.push_back(f >= 0 ? by_function[f] : nullptr);
  stats_.load_ms = ms_since(load_start);
  source_ = std::move(src.text);
}

KernelModule::~KernelModule() {
  if (handle_) ::dlclose(handle_);
}

CompiledLoopRunner::CompiledLoopRunner(const lir::LoopKernel& k, const lir::Program& p,
                                       std::shared_ptr<const KernelModule> module,
                                       size_t kernel_index)
    : module_(std::move(module)),
      fn_(module_->function(kernel_index)),
      buffers_(sdk::kernel_buffers(k, p)),
      args_(buffers_.size(), nullptr) {
  RLX_CHECK(fn_ != nullptr, "a loop kernel has no generated function");
  points_ = sdk::work_items(k);
  int64_t reduced = 1;
  for (size_t d = static_cast<size_t>(k.num_parallel); d < k.domain.size(); ++d) reduced *= k.domain[d];
  work_ = points_ * std::max<int64_t>(reduced, 1);
  grain_ = std::max<int64_t>(1, kGrainWork / std::max<int64_t>(reduced, 1));
}

void CompiledLoopRunner::run(const std::vector<void*>& ptrs) const {
  if (points_ <= 0) return;
  for (size_t j = 0; j < buffers_.size(); ++j) args_[j] = static_cast<char*>(ptrs[buffers_[j]]);
  char* const* args = args_.data();
  if (work_ < kParallelWork || points_ < 2) {
    fn_(args, 0, points_);
    return;
  }
  KernelFn fn = fn_;
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, points_, grain_),
                    [fn, args](const tbb::blocked_range<int64_t>& r) { fn(args, r.begin(), r.end()); });
}

}  // namespace rlx::cpu
