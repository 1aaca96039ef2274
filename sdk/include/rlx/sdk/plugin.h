// Everything a plugin author includes. Implement rlx::sdk::TargetPlugin (or ImporterPlugin) with
// ordinary C++ that may throw rlx::Error, then put one line in a .cpp file:
//
//   RLX_DEFINE_TARGET_PLUGIN(MyTarget)
//
// It exports the ABI handshake and a factory whose objects catch every exception inside the
// plugin, so nothing but a Status crosses into the host.
#pragma once
#include <exception>
#include <memory>
#include <string>

#include "rlx/core/error.h"
#include "rlx/core/target.h"
#include "rlx/sdk/abi.h"
#include "rlx/sdk/boundary.h"

namespace rlx::sdk {

class TargetPlugin : public rlx::Target {
 public:
  virtual std::string version() const = 0;
};

class ImporterPlugin {
 public:
  virtual ~ImporterPlugin() = default;
  virtual std::string name() const = 0;
  virtual std::string version() const = 0;
  // Reads the model at `path` (a file, or a folder for formats stored as several files).
  virtual Model load(const std::filesystem::path& path) = 0;
  // Reads the model with what the caller knows besides the path (ImportOptions in
  // rlx/core/model.h). A format whose dims stay symbolic ignores the sizes; the default refuses
  // input values, which only an importer that specialises a graph on them can use.
  virtual Model load_with(const std::filesystem::path& path, const ImportOptions& options) {
    if (!options.input_values.empty())
      throw_user_error(name() + " importer: cannot fix the values of graph inputs at import (" +
                       options.input_values.begin()->first + "); this format has no such inputs");
    return load(path);
  }
};

namespace detail {

inline std::string describe_current_exception() {
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

template <typename F>
Status guarded(F&& f) noexcept {
  try {
    f();
    return Status::good();
  } catch (...) {
    return Status::fail(describe_current_exception());
  }
}

template <typename F>
Verdict guarded_verdict(F&& f) noexcept {
  try {
    return f();
  } catch (...) {
    return Verdict::no("the plugin failed while deciding: " + describe_current_exception());
  }
}

class GuardedExecutable final : public ExecutableBoundary {
 public:
  explicit GuardedExecutable(std::unique_ptr<Executable> e) : impl_(std::move(e)) {}
  Status run(const std::vector<void*>& buffers) noexcept override {
    return guarded([&] { impl_->run(buffers); });
  }

 private:
  std::unique_ptr<Executable> impl_;
};

class GuardedTarget final : public TargetBoundary {
 public:
  explicit GuardedTarget(std::unique_ptr<TargetPlugin> t) : impl_(std::move(t)) {}
  std::string name() const noexcept override { return impl_->name(); }
  std::string version() const noexcept override { return impl_->version(); }
  Verdict can_execute() const noexcept override {
    return guarded_verdict([&] { return impl_->can_execute(); });
  }
  Verdict claim_native(const NodeSignature& s) const noexcept override {
    return guarded_verdict([&] { return impl_->claim_native(s); });
  }
  Verdict accepts_primitive(const NodeSignature& s) const noexcept override {
    return guarded_verdict([&] { return impl_->accepts_primitive(s); });
  }
  Status compile(const lir::Program& p, std::unique_ptr<ExecutableBoundary>* out) noexcept override {
    return guarded([&] { *out = std::make_unique<GuardedExecutable>(impl_->compile(p)); });
  }
  Status emit(const lir::Program& p, const std::filesystem::path& dir,
              std::vector<Artifact>* out) noexcept override {
    return guarded([&] { *out = impl_->emit(p, dir); });
  }

 private:
  std::unique_ptr<TargetPlugin> impl_;
};

class GuardedImporter final : public ImporterBoundary {
 public:
  explicit GuardedImporter(std::unique_ptr<ImporterPlugin> i) : impl_(std::move(i)) {}
  std::string name() const noexcept override { return impl_->name(); }
  std::string version() const noexcept override { return impl_->version(); }
  Status load(const std::filesystem::path& path, Model* out) noexcept override {
    return guarded([&] { *out = impl_->load(path); });
  }
  Status load_with_options(const std::filesystem::path& path, const ImportOptions& options,
                           Model* out) noexcept override {
    return guarded([&] { *out = impl_->load_with(path, options); });
  }

 private:
  std::unique_ptr<ImporterPlugin> impl_;
};

}  // namespace detail
}  // namespace rlx::sdk

#define RLX_DEFINE_PLUGIN_ABI_(kind_str)                                            \
  RLX_PLUGIN_EXPORT const RlxPluginAbi* rlx_plugin_abi() {                          \
    static const RlxPluginAbi abi{RLX_ABI_MAJOR, RLX_ABI_MINOR, RLX_TOOLCHAIN_TAG, kind_str}; \
    return &abi;                                                                    \
  }

#define RLX_DEFINE_TARGET_PLUGIN(Class)                                                   \
  RLX_DEFINE_PLUGIN_ABI_("target")                                                        \
  RLX_PLUGIN_EXPORT void rlx_plugin_factory(::rlx::sdk::PluginObjects* out) noexcept {    \
    try {                                                                                 \
      out->target = std::make_unique<::rlx::sdk::detail::GuardedTarget>(std::make_unique<Class>()); \
    } catch (...) {                                                                       \
      out->error = ::rlx::sdk::detail::describe_current_exception();                      \
    }                                                                                     \
  }

#define RLX_DEFINE_IMPORTER_PLUGIN(Class)                                                 \
  RLX_DEFINE_PLUGIN_ABI_("importer")                                                      \
  RLX_PLUGIN_EXPORT void rlx_plugin_factory(::rlx::sdk::PluginObjects* out) noexcept {    \
    try {                                                                                 \
      out->importer = std::make_unique<::rlx::sdk::detail::GuardedImporter>(std::make_unique<Class>()); \
    } catch (...) {                                                                       \
      out->error = ::rlx::sdk::detail::describe_current_exception();                      \
    }                                                                                     \
  }
