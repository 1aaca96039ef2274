// Host side of the target boundary: presents a plugin's TargetBoundary as an rlx::Target and turns
// each failed sdk::Status back into an rlx::Error of kind kPlugin.
#include <fmt/format.h>

#include "internal.h"
#include "rlx/core/error.h"
#include "rlx/sdk/boundary.h"

namespace rlx::registry::detail {
namespace {

[[noreturn]] void plugin_error(const std::string& target, const std::string& message) {
  throw Error(ErrorKind::kPlugin, fmt::format("{} plugin: {}", target, message));
}

class ExecutableAdapter final : public Executable {
 public:
  ExecutableAdapter(LibraryHandle library, std::string target,
                    std::unique_ptr<sdk::ExecutableBoundary> impl)
      : library_(std::move(library)), target_(std::move(target)), impl_(std::move(impl)) {}

  void run(const std::vector<void*>& buffers) override {
    sdk::Status s = impl_->run(buffers);
    if (!s.ok) plugin_error(target_, s.message);
  }

 private:
  // Declared first so it is destroyed last: impl_'s destructor is code inside the library.
  LibraryHandle library_;
  std::string target_;
  std::unique_ptr<sdk::ExecutableBoundary> impl_;
};

class TargetAdapter final : public Target {
 public:
  TargetAdapter(LibraryHandle library, std::unique_ptr<sdk::TargetBoundary> impl)
      : library_(std::move(library)), impl_(std::move(impl)), name_(impl_->name()) {}

  std::string name() const override { return name_; }
  Verdict claim_native(const NodeSignature& sig) const override { return impl_->claim_native(sig); }
  Verdict accepts_primitive(const NodeSignature& sig) const override {
    return impl_->accepts_primitive(sig);
  }
  Verdict can_execute() const override { return impl_->can_execute(); }

  std::unique_ptr<Executable> compile(const lir::Program& program) override {
    std::unique_ptr<sdk::ExecutableBoundary> exe;
    sdk::Status s = impl_->compile(program, &exe);
    if (!s.ok) plugin_error(name_, s.message);
    if (!exe) plugin_error(name_, "compile reported success but returned no executable");
    return std::make_unique<ExecutableAdapter>(library_, name_, std::move(exe));
  }

  std::vector<Artifact> emit(const lir::Program& program,
                             const std::filesystem::path& dir) override {
    std::vector<Artifact> artifacts;
    sdk::Status s = impl_->emit(program, dir, &artifacts);
    if (!s.ok) plugin_error(name_, s.message);
    return artifacts;
  }

 private:
  LibraryHandle library_;  // first, so destroyed after impl_
  std::unique_ptr<sdk::TargetBoundary> impl_;
  std::string name_;  // cached: name() is called for every message and report line
};

}  // namespace

std::shared_ptr<Target> make_target_adapter(LibraryHandle library,
                                            std::unique_ptr<sdk::TargetBoundary> target) {
  return std::make_shared<TargetAdapter>(std::move(library), std::move(target));
}

}  // namespace rlx::registry::detail
