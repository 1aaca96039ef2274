// One specialisation of a graph for MLX: the graph as a function of MLX arrays (graph_builder.h),
// passed through mlx::core::compile once (graphs with loops run uncompiled: their trip count is
// decided on the host), with its weights and constants as arrays made once. Bindings are host
// memory: the graph's inputs in order, then its outputs; each run copies the inputs in,
// evaluates lazily built outputs and copies them out.
#pragma once
#include <mlx/array.h>

#include <functional>
#include <memory>
#include <vector>

#include "graph_builder.h"
#include "rlx/core/graph.h"
#include "rlx/core/target.h"
#include "weight_cache.h"

namespace rlx::mlx_target {

class MlxExecutable final : public Executable {
 public:
  MlxExecutable(WeightCache& weights, const Graph& g);
  void run(const std::vector<void*>& buffers) override;
  void run_bound(const std::vector<BufferBinding>& buffers, QueueId queue) override;

 private:
  struct Io {
    DType dtype;
    std::vector<int64_t> shape;
    size_t bytes;
  };
  void raise_index_errors(const std::vector<mlx::core::array>& results) const;

  std::shared_ptr<const Graph> graph_;
  std::function<std::vector<mlx::core::array>(const std::vector<mlx::core::array>&)> fn_;
  std::vector<std::shared_ptr<const mlx::core::array>> weights_;
  std::vector<mlx::core::array> constants_;
  std::vector<IndexCheck> checks_;
  std::vector<Io> inputs_, outputs_;
};

}  // namespace rlx::mlx_target
