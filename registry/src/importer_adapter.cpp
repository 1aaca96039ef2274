// Host side of the importer boundary: presents a plugin's ImporterBoundary as a
// registry::Importer and turns a failed sdk::Status back into an rlx::Error of kind kPlugin.
#include <fmt/format.h>

#include "internal.h"
#include "rlx/core/error.h"
#include "rlx/sdk/boundary.h"

namespace rlx::registry::detail {
namespace {

class ImporterAdapter final : public Importer {
 public:
  ImporterAdapter(LibraryHandle library, std::unique_ptr<sdk::ImporterBoundary> impl)
      : library_(std::move(library)), impl_(std::move(impl)), name_(impl_->name()) {}

  std::string name() const override { return name_; }

  Model load(const std::filesystem::path& path) override {
    Model model;
    sdk::Status s = impl_->load(path, &model);
    if (!s.ok) throw Error(ErrorKind::kPlugin, fmt::format("{} plugin: {}", name_, s.message));
    return model;
  }

 private:
  LibraryHandle library_;  // first, so destroyed after impl_ whose code lives in the library
  std::unique_ptr<sdk::ImporterBoundary> impl_;
  std::string name_;
};

}  // namespace

std::shared_ptr<Importer> make_importer_adapter(LibraryHandle library,
                                                std::unique_ptr<sdk::ImporterBoundary> importer) {
  return std::make_shared<ImporterAdapter>(std::move(library), std::move(importer));
}

}  // namespace rlx::registry::detail
