// Host side of the importer boundary: presents a plugin's ImporterBoundary as a
// registry::Importer; a failed Status comes back as the rlx::Error of its kind.
#include "internal.h"
#include "rlx/sdk/boundary.h"

namespace rlx::registry::detail {
namespace {

class ImporterAdapter final : public Importer {
 public:
  ImporterAdapter(LibraryHandle library, std::unique_ptr<sdk::ImporterBoundary> impl,
                  uint32_t abi_minor)
      : library_(std::move(library)),
        impl_(std::move(impl)),
        name_(impl_->name()),
        abi_minor_(abi_minor) {}

  std::string name() const override { return name_; }

  Model load(const std::filesystem::path& path, const ImportOptions& options) override {
    Model model;
    check_status(name_, impl_->load(path, options, &model));
    return model;
  }

  std::map<std::string, Tensor> read_inputs(const std::filesystem::path& model_path,
                                            const std::filesystem::path& folder) override {
    // A 2.0 plugin's vtable ends before read_inputs: calling it would jump into nothing.
    if (abi_minor_ < 1)
      throw Error(ErrorKind::kUnsupported,
                  "the " + name_ + " importer predates ABI 2.1 and reads no input files (" +
                      folder.string() + ")");
    std::map<std::string, Tensor> inputs;
    check_status(name_, impl_->read_inputs(model_path, folder, &inputs));
    return inputs;
  }

 private:
  LibraryHandle library_;  // first, so destroyed after impl_ whose code lives in the library
  std::unique_ptr<sdk::ImporterBoundary> impl_;
  std::string name_;
  uint32_t abi_minor_;
};

}  // namespace

std::shared_ptr<Importer> make_importer_adapter(LibraryHandle library,
                                                std::unique_ptr<sdk::ImporterBoundary> importer,
                                                uint32_t abi_minor) {
  return std::make_shared<ImporterAdapter>(std::move(library), std::move(importer), abi_minor);
}

}  // namespace rlx::registry::detail
