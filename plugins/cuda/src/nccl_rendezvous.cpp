#include "nccl_rendezvous.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

#include "rlx/core/error.h"

namespace rlx::cuda {

namespace fs = std::filesystem;

NcclEndpoint parse_nccl_rendezvous(const std::string& text) {
  const std::string scheme = "file://";
  if (text.rfind(scheme, 0) != 0)
    throw_user_error(fmt::format(
        "cuda collectives: rendezvous \"{}\" is not understood; the cuda target (NCCL) takes "
        "file:///FOLDER[?timeout=SECONDS], a folder every rank can read",
        text));
  NcclEndpoint e;
  const std::string rest = text.substr(scheme.size());
  const size_t q = rest.find('?');
  e.folder = rest.substr(0, q);
  if (e.folder.empty())
    throw_user_error("cuda collectives: rendezvous " + text + " names no folder");
  std::string query = q == std::string::npos ? "" : rest.substr(q + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string item = query.substr(0, amp);
    query = amp == std::string::npos ? "" : query.substr(amp + 1);
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (key == "timeout") {
      try {
        e.timeout_s = std::stod(value);
      } catch (const std::exception&) {
        e.timeout_s = -1;
      }
      if (!(e.timeout_s > 0))
        throw_user_error(
            fmt::format("cuda collectives: timeout={} is not a positive number of seconds", value));
    } else if (key != "host" && key != "transport") {
      throw_user_error(fmt::format(
          "cuda collectives: rendezvous option \"{}\" is not known (timeout, host, transport)",
          key));
    }
  }
  return e;
}

fs::path unique_id_path(const fs::path& folder, const std::string& key) {
  return folder / fmt::format("nccl-{}-id", key);
}

void publish_unique_id(const fs::path& folder, const std::string& key, const std::string& id) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  const fs::path final_path = unique_id_path(folder, key);
  // The pid keeps two writers (a stale rank of another job) from sharing a temporary file.
  const fs::path temp = final_path.string() + fmt::format(".tmp.{}", ::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(id.data(), static_cast<std::streamsize>(id.size()));
    out.close();
    if (!out)
      throw_device_error(fmt::format(
          "cuda collectives: cannot write the NCCL unique id to {}: check that the rendezvous "
          "folder is writable",
          temp.string()));
  }
  fs::rename(temp, final_path, ec);
  if (ec)
    throw_device_error(fmt::format("cuda collectives: cannot rename {} to {}: {}", temp.string(),
                                   final_path.string(), ec.message()));
}

std::string await_unique_id(const fs::path& folder, const std::string& key, size_t bytes,
                            double timeout_s, const std::string& who) {
  const fs::path path = unique_id_path(folder, key);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(timeout_s));
  // Short polls first (ranks usually start together), then at most every 50 ms.
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    std::error_code ec;
    if (fs::file_size(path, ec) == bytes && !ec) {
      std::ifstream in(path, std::ios::binary);
      std::string id((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (id.size() == bytes) return id;
    }
    if (std::chrono::steady_clock::now() >= deadline)
      throw_device_error(fmt::format(
          "{}: no NCCL unique id appeared in the rendezvous folder {} within {} s (waited for "
          "{}): the communicator's first rank did not start, failed before it wrote the id, or "
          "was given another folder. Every rank must start with the same world size and "
          "rendezvous folder",
          who, folder.string(), timeout_s, path.filename().string()));
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

}  // namespace rlx::cuda
