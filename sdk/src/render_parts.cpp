#include "render_parts.h"

#include <fmt/format.h>

namespace rlx::sdk::detail {

std::string read_element(const Dialect& d, const std::string& ptr, const std::string& index,
                         DType dtype) {
  const std::string& packed = d.load_element[static_cast<int>(dtype)];
  if (packed.empty()) return fmt::format("{}[{}]", ptr, index);
  return fmt::format(fmt::runtime(packed), fmt::arg("ptr", ptr), fmt::arg("i", index));
}

std::string write_element(const Dialect& d, const std::string& ptr, const std::string& index,
                          DType dtype, const std::string& bits) {
  const std::string& packed = d.store_element[static_cast<int>(dtype)];
  if (packed.empty()) return fmt::format("{}[{}] = {};", ptr, index, bits);
  return fmt::format(fmt::runtime(packed), fmt::arg("ptr", ptr), fmt::arg("i", index),
                     fmt::arg("x", bits));
}

std::string buffer_param(const Dialect& d, const std::string& storage_type, bool written,
                         const std::string& name) {
  return fmt::format("{}{}{}* {}{}", d.global_space.empty() ? "" : d.global_space + " ",
                     written ? "" : "const ", storage_type,
                     d.restrict_kw.empty() ? "" : d.restrict_kw + " ", name);
}

}  // namespace rlx::sdk::detail
