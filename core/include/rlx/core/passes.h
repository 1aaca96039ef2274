// Graph passes over MIR (and native nodes). Each returns whether it changed the graph.
#pragma once
#include "rlx/core/graph.h"
#include "rlx/core/lir.h"

namespace rlx {

bool canonicalize(Graph& g);      // identity reshapes/transposes/converts, x*1, x+0
bool fold_constants(Graph& g);    // evaluates MIR nodes whose inputs are all constants
bool eliminate_common_subexpressions(Graph& g);
bool eliminate_dead_code(Graph& g);
void run_default_passes(Graph& g);  // the four above to a fixed point

// Reorders nodes so each AllReduce (with the reshapes and concat that only flatten its operand)
// comes right after its operand is computed, every other node keeping its order and collectives
// keeping theirs: a target running AllReduce in the background then overlaps it with the nodes
// after it (data parallelism's gradient buckets with the rest of the backward pass).
bool schedule_collectives_early(Graph& g);

// The activations of every DequantMatMul of g (and of its regions) over a block format:
// "f32" (the default: x as it is, the weights decoded exactly) or "q8" (x rounded to 8-bit
// blocks as llama.cpp does, so block products are integer sums: faster on CPUs with integer dot
// products, at about 1% of a logit's size in error). Returns how many nodes changed; another
// mode is a user error.
int set_quantized_activations(Graph& g, const std::string& mode);

// --allow-tf32: marks every f32 product of g and its regions (MatMul, Linear, dot_general) with
// {tf32 = 1}, allowing a target with TF32 tensor cores (cuda) to round their operands to TF32's
// 10-bit mantissa and accumulate in f32; every other target computes them in f32 as before.
// Returns the descriptions of the nodes marked ("%y (MatMul 'fc1')"), for the report.
std::vector<std::string> allow_tf32(Graph& g);

// Substitutes symbol bindings into every shape and shape attribute.
Graph specialize(const Graph& g, const Bindings& bindings);

// The default of LoweringOptions::max_ops_per_kernel. A kernel's code grows with its fused ops and
// the time of an optimising compiler faster than that: one function of 2000 fused ONNX Relu nodes
// took 5 s of `cc -O3`, 5000 more than a minute. 256 keeps every kernel of the model fixtures in
// tests/data whole (their largest has 14 expressions) and bounds what one function costs.
inline constexpr uint32_t kDefaultMaxOpsPerKernel = 256;

// What the device a program will run on allows (from Device::limits()), and how large one kernel
// may grow; 0 means no limit.
struct LoweringOptions {
  // Storage buffers one loop kernel may bind (webgpu: maxStorageBuffersPerShaderStage): a fused
  // chain that would read more is cut into several kernels.
  uint32_t max_buffers_per_kernel = 0;
  // Ops fused into one loop kernel (each op of its expression tree, loads and constants
  // included): a longer chain is cut into several kernels.
  uint32_t max_ops_per_kernel = kDefaultMaxOpsPerKernel;
};

// MIR -> LIR: fuses elementwise chains, index maps and reductions into loop kernels, emits
// library calls for the rest, then plans buffers. The graph must have static shapes.
lir::Program lower_to_lir(const Graph& g, const LoweringOptions& options = {});

}  // namespace rlx
