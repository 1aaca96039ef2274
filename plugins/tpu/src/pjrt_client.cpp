// PJRT: opening the plugin, the version handshake, and each call the tpu target makes.
#include "pjrt_client.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <mutex>

#include "libtpu_environment.h"

namespace rlx::tpu {

namespace {

// A serialized xla.CompileOptionsProto asking for one replica and one partition on the default
// device: field 3 (executable_build_options) holding device_ordinal (1) = -1, num_replicas (4) =
// 1 and num_partitions (5) = 1. Written out by hand because it is all the options we set.
constexpr unsigned char kCompileOptions[] = {0x1a, 0x0f, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                             0xff, 0xff, 0xff, 0x01, 0x20, 0x01, 0x28, 0x01};

struct OpenedPlugin {
  const pjrt::Api* api = nullptr;
  std::string path;
  std::string why;  // set when api is null
};

std::string error_text(const pjrt::Api* api, pjrt::Error* error) {
  pjrt::ErrorMessageArgs m{};
  m.struct_size = RLX_PJRT_STRUCT_SIZE(pjrt::ErrorMessageArgs, message_size);
  m.error = error;
  api->error_message(&m);
  std::string text(m.message ? m.message : "", m.message_size);
  pjrt::ErrorDestroyArgs d{};
  d.struct_size = RLX_PJRT_STRUCT_SIZE(pjrt::ErrorDestroyArgs, error);
  d.error = error;
  api->error_destroy(&d);
  return text;
}

// dlopen + GetPjrtApi + the version checks + PJRT_Plugin_Initialize, once per library path for
// the process (a plugin may be initialized only once).
OpenedPlugin open_plugin(const std::string& path) {
  static std::mutex mutex;
  static std::vector<OpenedPlugin> opened;
  std::lock_guard lock(mutex);
  for (const OpenedPlugin& p : opened)
    if (p.path == path) return p;
  OpenedPlugin p;
  p.path = path;
  auto fail = [&](std::string why) {
    p.why = std::move(why);
    opened.push_back(p);
    return p;
  };
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    return fail(fmt::format("cannot open the PJRT plugin {}: {}", path, e ? e : "unknown error"));
  }
  auto get = reinterpret_cast<pjrt::GetPjrtApiFn*>(dlsym(lib, "GetPjrtApi"));
  if (!get) return fail(fmt::format("{} is not a PJRT plugin: it exports no GetPjrtApi", path));
  const pjrt::Api* api = get();
  if (!api) return fail(fmt::format("{}: GetPjrtApi returned no API", path));
  const int major = api->version.major_version, minor = api->version.minor_version;
  if (major != pjrt::kMajor || minor < pjrt::kMinMinor)
    return fail(
        fmt::format("{} implements PJRT C API {}.{}; rlx's tpu target speaks {}.{} or a later {}.x",
                    path, major, minor, pjrt::kMajor, pjrt::kMinMinor, pjrt::kMajor));
  const size_t needed = RLX_PJRT_STRUCT_SIZE(pjrt::Api, buffer_to_host_buffer);
  if (api->struct_size < needed)
    return fail(
        fmt::format("{}: its PJRT_Api table has {} bytes, fewer than the {} this client "
                    "calls into",
                    path, api->struct_size, needed));
  pjrt::PluginInitializeArgs init{};
  init.struct_size = RLX_PJRT_STRUCT_SIZE(pjrt::PluginInitializeArgs, priv);
  if (pjrt::Error* e = api->plugin_initialize(&init))
    return fail(fmt::format("{}: PJRT_Plugin_Initialize failed: {}", path, error_text(api, e)));
  p.api = api;
  opened.push_back(p);
  return p;
}

}  // namespace

std::vector<std::string> plugin_search_order() {
  std::vector<std::string> order;
  if (const char* p = std::getenv("RLX_PJRT_PLUGIN"); p && *p) return {p};
  if (const char* p = std::getenv("TPU_LIBRARY_PATH"); p && *p) order.push_back(p);
  order.push_back("libtpu.so");  // the dynamic loader's path: LD_LIBRARY_PATH, /usr/lib, ...
  return order;
}

bool PjrtClient::plugin_found(std::string* path, std::string* why) {
  std::vector<std::string> tried;
  for (const std::string& candidate : plugin_search_order()) {
    // A name without a slash is looked up by the loader's path.
    void* lib = dlopen(candidate.c_str(), RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
    if (!lib) lib = dlopen(candidate.c_str(), RTLD_LAZY | RTLD_LOCAL);
    if (lib) {
      *path = candidate;
      return true;
    }
    const char* e = dlerror();
    tried.push_back(fmt::format("{} ({})", candidate, e ? e : "not found"));
  }
  *why = fmt::format(
      "no PJRT plugin found (tried {}); set RLX_PJRT_PLUGIN to a PJRT plugin library (libtpu.so, "
      "XLA's pjrt_c_api_cpu_plugin.so or JAX's xla_cuda_plugin.so)",
      fmt::join(tried, ", "));
  return false;
}

std::shared_ptr<PjrtClient> PjrtClient::shared(std::string* why) {
  static std::mutex mutex;
  static std::weak_ptr<PjrtClient> alive;
  static std::string alive_path;
  std::lock_guard lock(mutex);
  std::string path;
  if (!plugin_found(&path, why)) return nullptr;
  if (auto c = alive.lock(); c && alive_path == path) return c;
  static std::string libtpu_note;  // set once: the variable it reports stays set afterwards
  if (libtpu_note.empty()) libtpu_note = prepare_libtpu_environment(path);
  const std::string noted = libtpu_note.empty() ? "" : fmt::format(" ({})", libtpu_note);
  OpenedPlugin p = open_plugin(path);
  if (!p.api) {
    *why = p.why + noted;
    return nullptr;
  }
  std::shared_ptr<PjrtClient> c;
  try {
    c.reset(new PjrtClient(p.api, path));
  } catch (const Error& e) {
    *why = e.what() + noted;
    return nullptr;
  }
  if (c->devices_.empty()) {
    *why = fmt::format("the PJRT plugin {} ({}) reports no device", path, c->platform_);
    return nullptr;
  }
  alive = c;
  alive_path = path;
  return c;
}

PjrtClient::PjrtClient(const pjrt::Api* api, std::string plugin_path)
    : api_(api), plugin_path_(std::move(plugin_path)) {
  pjrt::ClientCreateArgs create{};
  create.struct_size = RLX_PJRT_STRUCT_SIZE(pjrt::ClientCreateArgs, kv_try_get_user_arg);
  check(api_->client_create(&create), "creating a client", ErrorKind::kUnsupported);
  client_ = create.client;
  pjrt::ClientPlatformNameArgs name{};
  name.struct_size = RLX_PJRT_STRUCT_SIZE(pjrt::ClientPlatformNameArgs, platform_name_size);
  name.client = client_;
  check(api_->client_platform_name(&name), "asking the platform name");
  platform_.assign(name.platform_name, name.platform_name_size);
  pjrt::ClientAddressableDevicesArgs devs{};
  devs.struct_size =
      RLX_PJRT_STRUCT_SIZE(pjrt::ClientAddressableDevicesArgs, num_addressable_devices);
  devs.client = client_;
  check(api_->client_addressable_devices(&devs), "listing the devices");
  devices_.assign(devs.addressable_devices,
                  devs.addressable_devices + devs.num_addressable_devices);
}

PjrtClient::~PjrtClient() {
  if (!client_) return;
  pjrt::ClientDestroyArgs d{};
  d.struct_size = RLX_PJRT_STRUCT_SIZE(pjrt::ClientDestroyArgs, client);
  d.client = client_;
  if (pjrt::Error* e = api_->client_destroy(&d)) error_text(api_, e);  // nothing to tell anyone
}

std::string PjrtClient::api_version() const {
  return fmt::format("{}.{}", api_->version.major_version, api_->version.minor_version);
}

std::string PjrtClient::stablehlo_versions() const {
  pjrt::PluginAttributesArgs a{};
  a.struct_size = RLX_PJRT_STRUCT_SIZE(pjrt::PluginAttributesArgs, num_attributes);
  if (pjrt::Error* e = api_->plugin_attributes(&a)) {
    error_text(api_, e);
    return "";
  }
  auto version = [&](std::string_view key) -> std::string {
    for (size_t i = 0; i < a.num_attributes; ++i) {
      const pjrt::NamedValue& v = a.attributes[i];
      if (std::string_view(v.name, v.name_size) == key && v.type == pjrt::kInt64List)
        return fmt::format("{}",
                           fmt::join(v.int64_array_value, v.int64_array_value + v.value_size, "."));
    }
    return "";
  };
  std::string lo = version("stablehlo_minimum_version"), hi = version("stablehlo_current_version");
  if (lo.empty() || hi.empty()) return "";
  return lo + " to " + hi;
}

void PjrtClient::check(pjrt::Error* error, const char* what, ErrorKind kind) const {
  if (!error) return;
  std::string text = error_text(api_, error);
  throw Error(kind, fmt::format("tpu: {} failed in the PJRT plugin {}{}: {}", what, plugin_path_,
                                platform_.empty() ? "" : " (" + platform_ + ")", text));
}

void PjrtClient::await(pjrt::Event* event, const char* what) const {
  if (!event) return;
  pjrt::EventAwaitArgs a{};
  a.struct_size = RLX_PJRT_STRUCT_SIZE(pjrt::EventAwaitArgs, event);
  a.event = event;
  pjrt::Error* failed = api_->event_await(&a);
  pjrt::EventDestroyArgs d{};
  d.struct_size = RLX_PJRT_STRUCT_SIZE(pjrt::EventDestroyArgs, event);
  d.event = event;
  pjrt::Error* destroy_failed = api_->event_destroy(&d);
  check(failed, what);
  check(destroy_failed, what);
}

std::unique_ptr<PjrtExecutable> PjrtClient::compile(const std::string& mlir,
                                                    size_t num_outputs) const {
  static constexpr char kFormat[] = "mlir";
  pjrt::Program program{};
  program.struct_size = RLX_PJRT_STRUCT_SIZE(pjrt::Program, format_size);
  program.code = const_cast<char*>(mlir.data());  // read only, per the API
  program.code_size = mlir.size();
  program.format = kFormat;
  program.format_size = sizeof(kFormat) - 1;
  pjrt::ClientCompileArgs args{};
  args.struct_size = RLX_PJRT_STRUCT_SIZE(pjrt::ClientCompileArgs, executable);
  args.client = client_;
  args.program = &program;
  args.compile_options = reinterpret_cast<const char*>(kCompileOptions);
  args.compile_options_size = sizeof(kCompileOptions);
  check(api_->client_compile(&args), "compiling the StableHLO module", ErrorKind::kCompile);
  return std::make_unique<PjrtExecutable>(shared_from_this(), args.executable, num_outputs);
}

PjrtBuffer PjrtClient::upload(const void* data, DType dtype,
                              const std::vector<int64_t>& dims) const {
  pjrt::ClientBufferFromHostBufferArgs args{};
  args.struct_size = RLX_PJRT_STRUCT_SIZE(pjrt::ClientBufferFromHostBufferArgs, buffer);
  args.client = client_;
  args.data = data;
  args.type = pjrt_type(dtype);
  args.dims = dims.data();
  args.num_dims = dims.size();
  args.host_buffer_semantics = pjrt::kImmutableUntilTransferCompletes;
  args.device = devices_.at(0);
  check(api_->client_buffer_from_host_buffer(&args), "copying a tensor to the device");
  PjrtBuffer buffer(shared_from_this(), args.buffer);
  await(args.done_with_host_buffer, "copying a tensor to the device");
  return buffer;
}

PjrtBuffer& PjrtBuffer::operator=(PjrtBuffer&& o) noexcept {
  std::swap(client_, o.client_);
  std::swap(buffer_, o.buffer_);
  return *this;
}

PjrtBuffer::~PjrtBuffer() {
  if (!buffer_) return;
  pjrt::BufferDestroyArgs d{};
  d.struct_size = RLX_PJRT_STRUCT_SIZE(pjrt::BufferDestroyArgs, buffer);
  d.buffer = buffer_;
  if (pjrt::Error* e = client_->api().buffer_destroy(&d)) error_text(&client_->api(), e);
}

void PjrtBuffer::download(void* dst, size_t bytes) const {
  pjrt::BufferToHostBufferArgs args{};
  args.struct_size = RLX_PJRT_STRUCT_SIZE(pjrt::BufferToHostBufferArgs, event);
  args.src = buffer_;
  args.dst = dst;
  args.dst_size = bytes;
  client_->check(client_->api().buffer_to_host_buffer(&args), "reading a result back");
  client_->await(args.event, "reading a result back");
}

PjrtExecutable::~PjrtExecutable() {
  pjrt::LoadedExecutableDestroyArgs d{};
  d.struct_size = RLX_PJRT_STRUCT_SIZE(pjrt::LoadedExecutableDestroyArgs, executable);
  d.executable = exe_;
  if (pjrt::Error* e = client_->api().loaded_executable_destroy(&d)) error_text(&client_->api(), e);
}

std::vector<PjrtBuffer> PjrtExecutable::execute(const std::vector<pjrt::Buffer*>& args) const {
  pjrt::ExecuteOptions options{};
  options.struct_size = RLX_PJRT_STRUCT_SIZE(pjrt::ExecuteOptions, multi_slice_config);
  std::vector<pjrt::Buffer*> outputs(num_outputs_, nullptr);
  pjrt::Buffer* const* arg_list = args.data();
  pjrt::Buffer** out_list = outputs.data();
  pjrt::Event* done = nullptr;
  pjrt::LoadedExecutableExecuteArgs a{};
  a.struct_size = RLX_PJRT_STRUCT_SIZE(pjrt::LoadedExecutableExecuteArgs, execute_device);
  a.executable = exe_;
  a.options = &options;
  a.argument_lists = &arg_list;
  a.num_devices = 1;
  a.num_args = args.size();
  a.output_lists = &out_list;
  a.device_complete_events = &done;
  client_->check(client_->api().loaded_executable_execute(&a), "running the program");
  std::vector<PjrtBuffer> results;
  results.reserve(outputs.size());
  for (pjrt::Buffer* b : outputs) results.emplace_back(client_, b);  // owned before any throw
  client_->await(done, "running the program");
  return results;
}

pjrt::BufferType pjrt_type(DType t) {
  switch (t) {
    case DType::kBool:
      return pjrt::kPred;
    case DType::kI8:
      return pjrt::kS8;
    case DType::kU8:
      return pjrt::kU8;
    case DType::kI16:
      return pjrt::kS16;
    case DType::kI32:
      return pjrt::kS32;
    case DType::kI64:
      return pjrt::kS64;
    case DType::kF16:
      return pjrt::kF16;
    case DType::kBF16:
      return pjrt::kBF16;
    case DType::kF32:
      return pjrt::kF32;
    case DType::kF64:
      return pjrt::kF64;
    case DType::kC64:
      return pjrt::kC64;
    case DType::kU16:
      return pjrt::kU16;
    case DType::kU32:
      return pjrt::kU32;
    case DType::kU64:
      return pjrt::kU64;
  }
  return pjrt::kInvalid;
}

}  // namespace rlx::tpu
