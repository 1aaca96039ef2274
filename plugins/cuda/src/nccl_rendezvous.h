// How the ranks of a cuda job share an NCCL unique id (docs/parallel.md, "NCCL on cuda"), with
// the rendezvous text the cpu target's Gloo takes ("file:///FOLDER?timeout=SECONDS"), so
// `rlx --nproc N` and mpirun start cuda ranks the same way: the communicator's first rank asks
// NCCL for an id and writes it to FOLDER/nccl-<key>-id (a temporary file renamed into place, so
// no rank ever reads half an id); the others poll for the file until the timeout. Pure file
// logic, no NCCL: the id is opaque bytes here.
#pragma once
#include <filesystem>
#include <string>

namespace rlx::cuda {

struct NcclEndpoint {
  std::filesystem::path folder;
  double timeout_s = 60;  // the rendezvous and every collective
};

// "file:///FOLDER[?timeout=SECONDS&host=ADDR&transport=NAME]". host and transport choose Gloo's
// (cpu) network and are accepted so one launcher line serves both targets; NCCL chooses its own
// transports (NVLink, PCIe, InfiniBand, sockets). Throws a user error naming the form otherwise.
NcclEndpoint parse_nccl_rendezvous(const std::string& text);

// FOLDER/nccl-<key>-id.
std::filesystem::path unique_id_path(const std::filesystem::path& folder, const std::string& key);

// Writes `id` to unique_id_path(folder, key) atomically (the folder is created if missing).
// Throws a device error naming the file when it cannot be written.
void publish_unique_id(const std::filesystem::path& folder, const std::string& key,
                       const std::string& id);

// The `bytes` bytes of the id published under `key`, waiting for them up to timeout_s. Throws a
// device error naming `who` ("rank 1 of 2"), the folder and the file on timeout.
std::string await_unique_id(const std::filesystem::path& folder, const std::string& key,
                            size_t bytes, double timeout_s, const std::string& who);

}  // namespace rlx::cuda
