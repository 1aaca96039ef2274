#include "nccl_rendezvous.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

#include "rlx/core/error.h"
#include "rlx/sdk/rendezvous.h"

namespace rlx::cuda {

namespace fs = std::filesystem;

NcclEndpoint parse_nccl_rendezvous(const std::string& text) {
  const sdk::Rendezvous r = sdk::parse_rendezvous(
      text, "cuda collectives",
      "the cuda target (NCCL) takes file:///FOLDER[?timeout=SECONDS], a folder every rank can "
      "read");
  return {r.folder, r.timeout_s};
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
