// The host end of typed errors: a failed sdk::Status becomes the rlx::Error of the matching kind,
// so the CLI advises by kind (a user error is the user's to fix, an unsupported request asks for
// another target or precision, a device failure points at the device, anything else at the
// plugin).
#include <fmt/format.h>

#include "internal.h"
#include "rlx/core/error.h"
#include "rlx/sdk/boundary.h"

namespace rlx::registry::detail {

ErrorKind error_kind_of(sdk::StatusKind kind) {
  switch (kind) {
    case sdk::StatusKind::kUser:
      return ErrorKind::kUser;
    case sdk::StatusKind::kUnsupported:
      return ErrorKind::kUnsupported;
    case sdk::StatusKind::kDevice:
      return ErrorKind::kDevice;
    case sdk::StatusKind::kOk:
    case sdk::StatusKind::kInternal:
      break;
  }
  return ErrorKind::kPlugin;  // unclassified, or a kind newer than this host knows
}

void check_status(const std::string& plugin, const sdk::Status& status) {
  if (status.ok()) return;
  throw Error(error_kind_of(status.kind), fmt::format("{} plugin: {}", plugin, status.message));
}

}  // namespace rlx::registry::detail
