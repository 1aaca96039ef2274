// Defaults of the contract 2.0 methods: what a target that computes in host memory on LIR, with
// no collectives and no extensions, answers.
#include "rlx/core/target.h"

#include <fmt/format.h>

#include "rlx/core/error.h"

namespace rlx {

void Executable::run_bound(const std::vector<BufferBinding>& buffers, QueueId) {
  std::vector<void*>& host = host_table_;  // kept, so steady-state runs allocate nothing
  host.assign(buffers.size(), nullptr);
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].device.valid())
      throw_unsupported(
          "this executable runs on host memory only; bind its inputs and outputs as host tensors");
    host[i] = buffers[i].host;
  }
  run(host);
}

std::unique_ptr<Executable> Target::compile_mir(const Graph&) {
  throw_internal_error(fmt::format("target {} compiles LIR, yet was asked to compile MIR", name()));
}

std::vector<Artifact> Target::emit_mir(const Graph&, const std::filesystem::path&) {
  throw_internal_error(fmt::format("target {} emits LIR, yet was asked to emit MIR", name()));
}

std::shared_ptr<Device> Target::device() { return nullptr; }

std::unique_ptr<Channel> Target::open_channel(const ChannelOptions&) {
  throw_unsupported(fmt::format("target {} has no collectives (it opens no channel)", name()));
}

const void* Target::extension(const std::string&, uint32_t) const { return nullptr; }

}  // namespace rlx
