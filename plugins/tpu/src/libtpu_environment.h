// What libtpu needs in the environment before it is initialized off a TPU host.
#pragma once
#include <string>

namespace rlx::tpu {

// libtpu asks Google Compute Engine's metadata server for the TPU topology, retrying each key
// about thirty times: off GCE that takes minutes per process, so `rlx --list-targets` would hang
// on a machine that merely has the wheel installed. When `plugin_path` is libtpu, the process is
// not on GCE (DMI product name) and the user has not set TPU_SKIP_MDS_QUERY, this sets it to 1;
// libtpu then fails fast with its own "no TPU" message. Returns a note for the status text when
// it set the variable, else "".
std::string prepare_libtpu_environment(const std::string& plugin_path);

}  // namespace rlx::tpu
