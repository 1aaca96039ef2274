// A PJRT client: one PJRT plugin (dlopen'ed, checked against the API version this client was
// written for) and one PJRT_Client on it, with RAII handles for what it creates. Every
// PJRT_Error becomes an rlx::Error carrying the plugin's own message.
//
// Which plugin: RLX_PJRT_PLUGIN=/path/to/plugin.so, else libtpu (plugin_search_order()). A
// plugin library is never closed again: PJRT plugins do not support unloading.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pjrt_c_api.h"
#include "rlx/core/dtype.h"
#include "rlx/core/error.h"

namespace rlx::tpu {

// The libraries tried when RLX_PJRT_PLUGIN is not set, in order (docs/targets.md, "tpu").
std::vector<std::string> plugin_search_order();

class PjrtClient;

// A device buffer; destroyed with its handle (before the client, which it keeps alive).
class PjrtBuffer {
 public:
  PjrtBuffer() = default;
  PjrtBuffer(std::shared_ptr<const PjrtClient> client, pjrt::Buffer* b)
      : client_(std::move(client)), buffer_(b) {}
  PjrtBuffer(PjrtBuffer&& o) noexcept { *this = std::move(o); }
  PjrtBuffer& operator=(PjrtBuffer&& o) noexcept;
  ~PjrtBuffer();
  pjrt::Buffer* get() const { return buffer_; }
  // Copies the buffer into `dst` (`bytes`, the buffer's dense row-major size) and waits.
  void download(void* dst, size_t bytes) const;

 private:
  std::shared_ptr<const PjrtClient> client_;
  pjrt::Buffer* buffer_ = nullptr;
};

// A compiled program loaded on the client's first device.
class PjrtExecutable {
 public:
  PjrtExecutable(std::shared_ptr<const PjrtClient> client, pjrt::LoadedExecutable* e,
                 size_t num_outputs)
      : client_(std::move(client)), exe_(e), num_outputs_(num_outputs) {}
  PjrtExecutable(const PjrtExecutable&) = delete;
  PjrtExecutable& operator=(const PjrtExecutable&) = delete;
  ~PjrtExecutable();
  // Runs on the arguments in order and waits for the device; returns the results in order.
  std::vector<PjrtBuffer> execute(const std::vector<pjrt::Buffer*>& args) const;

 private:
  std::shared_ptr<const PjrtClient> client_;
  pjrt::LoadedExecutable* exe_;
  size_t num_outputs_;
};

class PjrtClient : public std::enable_shared_from_this<PjrtClient> {
 public:
  // The client on the chosen plugin, shared while anything holds it; nullptr with the reason in
  // *why when no plugin is found, it fails the version check or it has no device.
  static std::shared_ptr<PjrtClient> shared(std::string* why);
  // Whether a plugin library is found at all (without creating a client), and which.
  static bool plugin_found(std::string* path, std::string* why);

  PjrtClient(const PjrtClient&) = delete;
  PjrtClient& operator=(const PjrtClient&) = delete;
  ~PjrtClient();

  const std::string& platform() const { return platform_; }  // "cpu", "cuda", "tpu"
  const std::string& plugin_path() const { return plugin_path_; }
  std::string api_version() const;  // "0.115"
  // The StableHLO versions the plugin reads ("1.0.0 to 1.13.5"), from its attributes; "" when
  // it does not say.
  std::string stablehlo_versions() const;
  size_t device_count() const { return devices_.size(); }

  // Compiles MLIR text (the StableHLO module) for one device; errors carry XLA's message.
  std::unique_ptr<PjrtExecutable> compile(const std::string& mlir, size_t num_outputs) const;
  // Copies host data of `dtype` and `dims` (dense, row-major) to the device and waits.
  PjrtBuffer upload(const void* data, DType dtype, const std::vector<int64_t>& dims) const;

  // Throws an rlx::Error of `kind` for a non-null PJRT error (destroying it), naming `what`.
  void check(pjrt::Error* error, const char* what, ErrorKind kind = ErrorKind::kDevice) const;
  void await(pjrt::Event* event, const char* what) const;
  const pjrt::Api& api() const { return *api_; }

 private:
  PjrtClient(const pjrt::Api* api, std::string plugin_path);

  const pjrt::Api* api_;
  std::string plugin_path_;
  pjrt::Client* client_ = nullptr;
  std::vector<pjrt::Device*> devices_;
  std::string platform_;
};

// The PJRT element type of an rlx dtype; kInvalid for those PJRT has no type for.
pjrt::BufferType pjrt_type(DType t);

}  // namespace rlx::tpu
