#include "prebuilt_kernels.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>

#include "codegen_toolchain.h"
#include "gemm_epilogue_fusion.h"
#include "rlx/core/error.h"
#include "rlx/core/json.h"

namespace rlx::cpu {

namespace {

namespace fs = std::filesystem;

#if defined(__x86_64__)
constexpr const char* kArch = "x86_64";
#elif defined(__aarch64__)
constexpr const char* kArch = "aarch64";
#else
constexpr const char* kArch = "unknown";
#endif

std::mutex& registry_lock() {
  static std::mutex mu;
  return mu;
}
std::map<std::string, fs::path>& registered() {
  static std::map<std::string, fs::path> objects;  // source hash -> shared object
  return objects;
}

void collect(const lir::Program& program, std::vector<lir::Program>& out) {
  lir::Program p = program;
  fuse_gemm_epilogues(p);  // as CpuExecutable does before it builds its module
  out.push_back(p);
  for (const lir::Kernel& k : p.kernels)
    if (const auto* c = std::get_if<lir::CallKernel>(&k))
      for (const auto& region : c->regions) collect(*region, out);
}

// The build report emit wrote (codegen_emit.h); a folder without one holds no cpu kernels.
json::Value read_build_report(const fs::path& dir) {
  const fs::path path = dir / "cpu_build.json";
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_user_error(fmt::format("{} is missing", path.string()));
  std::string text((std::istreambuf_iterator<char>(in)), {});
  try {
    return json::parse(text);
  } catch (const std::exception& e) {
    throw_user_error(fmt::format("{} is damaged: {}", path.string(), e.what()));
  }
}

std::string string_member(const json::Value& doc, const char* key) {
  const json::Value* v = doc.find(key);
  return v && v->as_string() ? *v->as_string() : "";
}

std::string requirements_json(const fs::path& dir) {
  json::Value report = read_build_report(dir);
  if (string_member(report, "kernels") != "compiled") return "{}";  // no native code of its own
  return fmt::format("{{\"arch\": {}, \"isa\": {}}}", json::json_quote(kArch),
                     json::json_quote(string_member(report, "isa")));
}

// "" when this machine meets the requirements, else why not.
std::string unmet(const std::string& requirements) {
  json::Value doc = json::parse(requirements);
  const json::Object* members = doc.as_object();
  if (!members) return "the requirements are not a JSON object";
  for (const json::Member& m : *members) {
    const std::string* value = m.second.as_string();
    if (!value) return fmt::format("the requirement '{}' is not a string", m.first);
    if (m.first == "arch") {
      if (*value != kArch)
        return fmt::format("its kernels were built for {} and this machine is {}", *value, kArch);
    } else if (m.first == "isa") {
      const std::string host = host_isa();
      if (isa_rank(*value) < 0)
        return fmt::format(
            "its kernels were built for the ISA level '{}', which this cpu "
            "plugin does not know",
            *value);
      if (isa_rank(*value) > isa_rank(host))
        return fmt::format("its kernels were built for {} and this CPU runs {} at most", *value,
                           host);
    } else {
      return fmt::format("it requires '{}', which this cpu plugin does not know", m.first);
    }
  }
  return "";
}

void register_folder(const fs::path& dir) {
  json::Value report = read_build_report(dir);
  if (string_member(report, "kernels") != "compiled") return;
  const json::Value* modules = report.find("modules");
  if (!modules || !modules->as_array())
    throw_user_error(fmt::format("{} lists no kernel modules", (dir / "cpu_build.json").string()));
  std::map<std::string, fs::path> found;
  for (const json::Value& m : *modules->as_array()) {
    const std::string object = string_member(m, "object");
    const std::string hash = string_member(m, "source_hash");
    if (object.empty() || hash.empty())
      throw_user_error(fmt::format("{} names a module without its object or source hash",
                                   (dir / "cpu_build.json").string()));
    fs::path path = fs::absolute(dir / object).lexically_normal();
    std::error_code ec;
    if (!fs::is_regular_file(path, ec))
      throw_user_error(fmt::format("the kernel object {} is missing", path.string()));
    found[hash] = path;
  }
  std::lock_guard hold(registry_lock());
  for (auto& [hash, path] : found) registered()[hash] = path;
}

// Each function keeps its answer in a thread-local string, as RlxDeployableV1 promises.
template <typename F>
const char* answer(std::string& slot, F&& f) noexcept {
  try {
    slot = f();
  } catch (const std::exception& e) {
    slot = e.what();
    if (slot.empty()) slot = "unknown error";
  } catch (...) {
    slot = "unknown error";
  }
  return slot.c_str();
}

const char* requirements_fn(const char* dir) {
  thread_local std::string slot;
  return answer(slot, [&] { return requirements_json(dir); });
}

const char* check_fn(const char* requirements) {
  thread_local std::string slot;
  const char* why = answer(slot, [&] { return unmet(requirements); });
  return *why ? why : nullptr;
}

const char* use_prebuilt_fn(const char* dir) {
  thread_local std::string slot;
  const char* why = answer(slot, [&] {
    register_folder(dir);
    return std::string();
  });
  return *why ? why : nullptr;
}

}  // namespace

std::vector<lir::Program> module_programs(const lir::Program& program) {
  std::vector<lir::Program> out;
  collect(program, out);
  return out;
}

bool has_prebuilt() {
  std::lock_guard hold(registry_lock());
  return !registered().empty();
}

std::optional<fs::path> find_prebuilt(const std::string& source_hash) {
  std::lock_guard hold(registry_lock());
  auto it = registered().find(source_hash);
  if (it == registered().end()) return std::nullopt;
  return it->second;
}

bool interpretation_requested() {
  const char* mode = std::getenv("RLX_CPU_KERNELS");
  return mode && std::string(mode) == "interpret";
}

const sdk::RlxDeployableV1* deployable_extension() {
  static const sdk::RlxDeployableV1 table = {&requirements_fn, &check_fn, &use_prebuilt_fn};
  return &table;
}

}  // namespace rlx::cpu
