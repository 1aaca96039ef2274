#include "rlx/sdk/rendezvous.h"

#include <fmt/format.h>

#include "rlx/core/error.h"

namespace rlx::sdk {

Rendezvous parse_rendezvous(const std::string& text, const std::string& who,
                            const std::string& form) {
  const std::string scheme = "file://";
  if (text.rfind(scheme, 0) != 0)
    throw_user_error(fmt::format("{}: rendezvous \"{}\" is not understood; {}", who, text, form));
  Rendezvous r;
  const std::string rest = text.substr(scheme.size());
  const size_t q = rest.find('?');
  r.folder = rest.substr(0, q);
  if (r.folder.empty())
    throw_user_error(fmt::format("{}: rendezvous {} names no folder", who, text));
  std::string query = q == std::string::npos ? "" : rest.substr(q + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string item = query.substr(0, amp);
    query = amp == std::string::npos ? "" : query.substr(amp + 1);
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq),
                      value = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (key == "timeout") {
      try {
        r.timeout_s = std::stod(value);
      } catch (const std::exception&) {
        r.timeout_s = -1;
      }
      if (!(r.timeout_s > 0))
        throw_user_error(
            fmt::format("{}: timeout={} is not a positive number of seconds", who, value));
    } else if (key == "host") {
      r.host = value;
    } else if (key == "transport") {
      r.transport = value;
    } else {
      throw_user_error(fmt::format(
          "{}: rendezvous option \"{}\" is not known (timeout, host, transport)", who, key));
    }
  }
  return r;
}

}  // namespace rlx::sdk
