// The collective HIR ops (core/src/ops/ops_collective.cpp: AllReduce, AllGather, ReduceScatter,
// AllToAll, Broadcast, Send, Recv) on the cuda target: claimed natively where NCCL loads, run as
// library calls (gpu_host::VendorCall) on the process's NCCL communicator (nccl_comm.h) in the
// device's stream, recordable into the CUDA graph of a run from NCCL 2.9.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "cuda_device.h"
#include "rlx/core/target.h"

namespace rlx::cuda {

// The claim for `s` when it is a collective op, nullopt otherwise: refused by name where
// libnccl.so.2 is missing, for dtypes NCCL has no type for, and for mean before NCCL 2.10.
std::optional<Verdict> claim_collective(const NodeSignature& s);

// "NCCL" when `call` is a collective, else "".
std::string collective_vendor(const lir::CallKernel& call);

// Plans `call` on `device`; the communicator is looked up at the first run (the channel may be
// opened after compiling). Throws rlx::Error (kCompile) when NCCL cannot be loaded here.
std::unique_ptr<gpu_host::VendorCall> plan_collective(CudaDevice& device,
                                                      const lir::CallKernel& call,
                                                      const lir::Program& program);

}  // namespace rlx::cuda
