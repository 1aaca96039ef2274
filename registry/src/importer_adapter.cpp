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
  ImporterAdapter(LibraryHandle library, std::unique_ptr<sdk::ImporterBoundary> impl,
                  uint32_t abi_minor)
      : library_(std::move(library)), impl_(std::move(impl)), name_(impl_->name()),
        abi_minor_(abi_minor) {}

  std::string name() const override { return name_; }

  Model load(const std::filesystem::path& path) override {
    Model model;
    check(impl_->load(path, &model));
    return model;
  }

  Model load(const std::filesystem::path& path, const ImportOptions& options) override {
    if (options.empty()) return load(path);
    if (abi_minor_ < 1) {  // no load_with_options in its vtable
      if (!options.input_values.empty())
        throw Error(ErrorKind::kUser,
                    fmt::format("the {} importer was built for ABI 1.{}, which cannot take input "
                                "values at import; rebuild it against this SDK",
                                name_, abi_minor_));
      return load(path);
    }
    Model model;
    check(impl_->load_with_options(path, options, &model));
    return model;
  }

 private:
  void check(const sdk::Status& s) const {
    if (!s.ok) throw Error(ErrorKind::kPlugin, fmt::format("{} plugin: {}", name_, s.message));
  }

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
