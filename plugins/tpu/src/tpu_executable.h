// One specialisation of a graph compiled by XLA through PJRT: the StableHLO module, its loaded
// executable and its weights on the device (from the target's WeightCache: uploaded once for all
// specialisations). Bindings are host memory: the graph's
// inputs in order, then its outputs.
#pragma once
#include <memory>
#include <vector>

#include "pjrt_client.h"
#include "rlx/core/graph.h"
#include "rlx/core/target.h"
#include "stablehlo_emitter.h"
#include "weight_cache.h"

namespace rlx::tpu {

class TpuExecutable final : public Executable {
 public:
  TpuExecutable(std::shared_ptr<PjrtClient> client, WeightCache& weights, const Graph& g);
  void run(const std::vector<void*>& buffers) override;
  void run_bound(const std::vector<BufferBinding>& buffers, QueueId queue) override;

 private:
  struct Io {
    DType dtype;
    std::vector<int64_t> shape;
    size_t bytes;
  };
  void raise_index_errors(const std::vector<PjrtBuffer>& results) const;

  std::shared_ptr<PjrtClient> client_;
  EmittedModule module_;
  std::unique_ptr<PjrtExecutable> exe_;
  std::vector<std::shared_ptr<const DeviceWeight>> weights_;
  std::vector<Io> inputs_, outputs_;
};

}  // namespace rlx::tpu
