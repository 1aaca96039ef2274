// Host side of the importer boundary: presents a plugin's ImporterBoundary as a
// registry::Importer; a failed Status comes back as the rlx::Error of its kind.
#include "internal.h"
#include "rlx/sdk/boundary.h"

namespace rlx::registry::detail {
namespace {

class ImporterAdapter final : public Importer {
 public:
  ImporterAdapter(LibraryHandle library, std::unique_ptr<sdk::ImporterBoundary> impl)
      : library_(std::move(library)), impl_(std::move(impl)), name_(impl_->name()) {}

  std::string name() const override { return name_; }

  Model load(const std::filesystem::path& path, const ImportOptions& options) override {
    Model model;
    check_status(name_, impl_->load(path, options, &model));
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
