#include "rlx/core/error.h"

#include <fmt/format.h>

namespace rlx {

Error::Error(ErrorKind kind, std::string message, SourceLocation where)
    : std::runtime_error(std::move(message)), kind_(kind), where_(where) {}

std::string Error::where_string() const {
  return fmt::format("{}:{}", where_.file_name(), where_.line());
}

void throw_user_error(std::string message, SourceLocation where) {
  throw Error(ErrorKind::kUser, std::move(message), where);
}

void throw_index_error(const std::string& op, int64_t index, int64_t position, int64_t axis_size,
                       SourceLocation where) {
  throw Error(ErrorKind::kUser,
              fmt::format("{}: index {} (at position {} of the indices) is out of range for an "
                          "axis of size {}",
                          op, index, position, axis_size),
              where);
}

void throw_unsupported(std::string message, SourceLocation where) {
  throw Error(ErrorKind::kUnsupported, std::move(message), where);
}

void throw_device_error(std::string message, SourceLocation where) {
  throw Error(ErrorKind::kDevice, std::move(message), where);
}

void throw_internal_error(std::string message, SourceLocation where) {
  throw Error(ErrorKind::kInternal, std::move(message), where);
}

}  // namespace rlx
