// The body of rlx-plugin-probe, the helper that loads one plugin in a process of its own before
// rlx loads it: the manifest, then load_record() exactly as rlx's first use of the plugin does,
// announcing each step on the report descriptor before taking it, then the result. Everything
// after the result (destructors, exit) is a step too, because rlx runs it as well.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "probe.h"

namespace rlx::registry::detail {
namespace {

// Unbuffered, so a report stops exactly where the plugin stopped the process.
void send(int fd, std::string_view tag, std::string_view value) {
  const std::string bytes = encode_record(tag, value);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the registry stopped listening (time limit): nothing to tell
    done += static_cast<size_t>(n);
  }
}

void send_stage(int fd, LoadStage stage) {
  send(fd, "stage", std::to_string(static_cast<int>(stage)));
}

}  // namespace

int probe_main(int argc, char** argv) {
  if (argc != 3) {
    std::fputs(
        "usage: rlx-plugin-probe MANIFEST LIBRARY\n"
        "Loads one rlx plugin as rlx would and reports on descriptor 3 (stdout when it is "
        "not open); rlx runs it before loading a plugin itself.\n",
        stderr);
    return 2;
  }
  const int fd = fcntl(kReportFd, F_GETFD) >= 0 ? kReportFd : STDOUT_FILENO;
  PluginRecord rec;
  rec.manifest_path = argv[1];
  rec.library_path = argv[2];
  auto parsed = parse_manifest(rec.manifest_path);
  if (auto* reason = std::get_if<std::string>(&parsed)) {
    rec.detail = "its manifest could not be read: " + *reason;
  } else {
    const Manifest& m = std::get<Manifest>(parsed);
    rec.abi = m.abi;
    rec.version = m.version;
    std::vector<std::shared_ptr<void>> libraries;
    load_record(m, rec, /*build_legality=*/true, libraries,
                [fd](LoadStage stage) { send_stage(fd, stage); });
  }
  send(fd, "status", status_name(rec.status));
  send(fd, "abi", rec.abi);
  send(fd, "version", rec.version);
  send(fd, "detail", rec.detail);
  send(fd, "end", "");
  send_stage(fd, LoadStage::kExit);
  return 0;  // the plugin's objects and static destructors go now, as at rlx's exit
}

}  // namespace rlx::registry::detail
