// The rendezvous text every collectives backend of rlx takes (docs/parallel.md): how the ranks
// of one job find each other, "file:///FOLDER[?timeout=SECONDS&host=ADDR&transport=NAME]", one
// launcher line for every target (`rlx --nproc`, mpirun, srun all write it). A backend uses what
// it needs: the cpu target's Gloo all of it, the cuda target's NCCL the folder and the timeout.
#pragma once
#include <filesystem>
#include <string>

namespace rlx::sdk {

struct Rendezvous {
  std::filesystem::path folder;
  double timeout_s = 60;  // the rendezvous and every collective
  std::string host = "127.0.0.1";
  std::string transport = "tcp";
};

// Parses `text`; throws a user error starting with `who` ("cpu collectives") that quotes `form`
// (what the backend takes) when the scheme is not file://, the folder is missing, the timeout
// is not a positive number, or an option is not one of timeout, host and transport.
Rendezvous parse_rendezvous(const std::string& text, const std::string& who,
                            const std::string& form);

}  // namespace rlx::sdk
