// Loads one plugin library: the C ABI handshake first (no C++ symbol is touched before it
// passes), then the factory, then a check that the object is the plugin the manifest describes.
#include <dlfcn.h>
#include <elf.h>
#include <fmt/format.h>
#include <link.h>

#include <boost/dll/shared_library.hpp>
#include <cstring>

#include "internal.h"
#include "rlx/sdk/abi.h"
#include "rlx/sdk/boundary.h"

namespace rlx::registry::detail {
namespace {

LoadResult failed(PluginStatus status, std::string detail) {
  LoadResult r;
  r.status = status;
  r.detail = std::move(detail);
  return r;
}

std::string abi_string(uint32_t major, uint32_t minor) {
  return fmt::format("{}.{}", major, minor);
}

// Why a plugin reporting `abi` cannot be used by this rlx, or nullopt when it can.
std::optional<std::string> abi_mismatch(const RlxPluginAbi& abi, const Manifest& manifest) {
  const std::string host = abi_string(RLX_ABI_MAJOR, RLX_ABI_MINOR);
  const std::string plugin = abi_string(abi.major, abi.minor);
  if (abi.major != RLX_ABI_MAJOR)
    return fmt::format("built for ABI {}, this rlx has ABI {}: rebuild the plugin against this SDK",
                       plugin, host);
  // Minor versions only add to the ABI, so a plugin may use anything up to the host's minor.
  if (abi.minor > RLX_ABI_MINOR)
    return fmt::format(
        "built for ABI {}, this rlx has ABI {}: upgrade rlx, or rebuild the plugin against this "
        "SDK",
        plugin, host);
  // C++ standard types cross the boundary, so compiler family and standard library must match.
  const char* toolchain = abi.toolchain ? abi.toolchain : "(none)";
  if (std::strcmp(toolchain, RLX_TOOLCHAIN_TAG) != 0)
    return fmt::format(
        "built with toolchain {}, this rlx was built with {}: rebuild the plugin with the same "
        "compiler family and C++ standard library",
        toolchain, RLX_TOOLCHAIN_TAG);
  const char* kind = abi.kind ? abi.kind : "(none)";
  if (manifest.kind != kind)
    return fmt::format("the library says kind \"{}\" but its manifest says kind \"{}\"", kind,
                       manifest.kind);
  return std::nullopt;
}

// Whether an exported symbol is code. `int rlx_plugin_abi = 42;` exports data under the
// name, and calling it would jump into that data; the ELF symbol type tells them apart.
bool is_function(void* address) {
  Dl_info info;
  void* entry = nullptr;
  if (!dladdr1(address, &info, &entry, RTLD_DL_SYMENT) || !entry)
    return true;  // unknown: let the call decide (the probe catches a crash)
  // The type is the low nibble of st_info in 32- and 64-bit ELF alike.
  const int type = ELF64_ST_TYPE(static_cast<const ElfW(Sym)*>(entry)->st_info);
  return type == STT_FUNC || type == STT_GNU_IFUNC;
}

std::string not_a_function(std::string_view symbol) {
  return fmt::format(
      "{} is not a function (the library exports data under that name): the library is not an "
      "rlx plugin built with the SDK's RLX_DEFINE_*_PLUGIN",
      symbol);
}

}  // namespace

std::string_view stage_words(LoadStage stage) {
  switch (stage) {
    case LoadStage::kLoading:
      return "while loading the library";
    case LoadStage::kHandshake:
      return "during the ABI handshake (" RLX_ABI_SYMBOL ")";
    case LoadStage::kFactory:
      return "in its factory (" RLX_FACTORY_SYMBOL ")";
    case LoadStage::kIdentity:
      return "while asked its name and version";
    case LoadStage::kCanExecute:
      return "in can_execute()";
    case LoadStage::kLegality:
      return "while its legality table was built (claim_native, accepts_primitive)";
    case LoadStage::kExit:
      return "while the process exited (static destructors, atexit handlers)";
  }
  return "while loading";
}

LoadResult load_plugin(const Manifest& manifest, const std::filesystem::path& library_path,
                       const StageFn& on_stage) {
  auto stage = [&](LoadStage s) {
    if (on_stage) on_stage(s);
  };
  namespace dll = boost::dll;
  // Declared before `objects` so the boundary objects are destroyed while their code is mapped.
  LibraryHandle lib = std::make_shared<dll::shared_library>();
  try {
    // RTLD_NOW rather than lazy binding: an unresolved symbol (a plugin built against another
    // librlx_core) must make the plugin "broken" here, not abort the process at its first call.
    // RTLD_LOCAL keeps plugins' symbols from interposing on each other.
    dll::fs::error_code ec;
    dlerror();
    stage(LoadStage::kLoading);
    lib->load(library_path, dll::load_mode::rtld_now | dll::load_mode::rtld_local, ec);
    if (ec || !lib->is_loaded()) {
      const char* err = dlerror();
      return failed(PluginStatus::kBroken,
                    fmt::format("cannot load {}: {}", library_path.filename().string(),
                                err ? std::string(err) : ec.message()));
    }
    // Pin the library for the life of the process. Plugin code may still run on thread-pool
    // workers (oneTBB) when the last handle goes away at exit; unmapping it then crashes a run
    // that had succeeded. Reopening with RTLD_NOLOAD | RTLD_NODELETE marks the loaded copy.
    if (void* pin = dlopen(library_path.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE | RTLD_LOCAL))
      dlclose(pin);
    if (!lib->has(RLX_ABI_SYMBOL))
      return failed(PluginStatus::kBroken,
                    "missing entry symbol " RLX_ABI_SYMBOL
                    ": the library is not an rlx plugin (plugins define it with "
                    "RLX_DEFINE_TARGET_PLUGIN or RLX_DEFINE_IMPORTER_PLUGIN)");
    auto& abi_fn = lib->get<const RlxPluginAbi*()>(RLX_ABI_SYMBOL);
    if (!is_function(reinterpret_cast<void*>(&abi_fn)))
      return failed(PluginStatus::kBroken, not_a_function(RLX_ABI_SYMBOL));
    stage(LoadStage::kHandshake);
    const RlxPluginAbi* abi = abi_fn();
    if (!abi) return failed(PluginStatus::kBroken, RLX_ABI_SYMBOL "() returned null");
    if (auto why = abi_mismatch(*abi, manifest)) {
      LoadResult r = failed(PluginStatus::kIncompatible, *why);
      r.abi = abi_string(abi->major, abi->minor);
      return r;
    }
    const std::string abi_text = abi_string(abi->major, abi->minor);

    if (!lib->has(RLX_FACTORY_SYMBOL))
      return failed(PluginStatus::kBroken, "missing factory symbol " RLX_FACTORY_SYMBOL);
    auto& factory = lib->get<sdk::PluginFactory>(RLX_FACTORY_SYMBOL);
    if (!is_function(reinterpret_cast<void*>(&factory)))
      return failed(PluginStatus::kBroken, not_a_function(RLX_FACTORY_SYMBOL));
    sdk::PluginObjects objects;
    stage(LoadStage::kFactory);
    factory(&objects);
    if (!objects.error.empty())
      return failed(PluginStatus::kBroken, "the plugin failed to start: " + objects.error);

    std::string name, version;
    LoadResult r;
    stage(LoadStage::kIdentity);
    if (manifest.kind == "target") {
      if (!objects.target)
        return failed(PluginStatus::kBroken, "the plugin factory returned no target object");
      name = objects.target->name();
      version = objects.target->version();
    } else {
      if (!objects.importer)
        return failed(PluginStatus::kBroken, "the plugin factory returned no importer object");
      name = objects.importer->name();
      version = objects.importer->version();
    }
    if (name != manifest.name)
      return failed(PluginStatus::kBroken,
                    fmt::format("the manifest names the plugin \"{}\" but the library's plugin is "
                                "named \"{}\": fix the manifest's [plugin] name",
                                manifest.name, name));
    if (objects.target) r.target = make_target_adapter(lib, std::move(objects.target));
    if (objects.importer)
      r.importer = make_importer_adapter(lib, std::move(objects.importer), abi->minor);
    r.status = PluginStatus::kAvailable;
    r.abi = abi_text;
    r.version = version;
    r.library = lib;
    return r;
  } catch (const std::exception& e) {
    return failed(PluginStatus::kBroken, fmt::format("failed while loading: {}", e.what()));
  }
}

}  // namespace rlx::registry::detail
