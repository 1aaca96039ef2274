// Collectives over the ranks of one job (docs/parallel.md). Every rank runs the same graph; a
// collective node exchanges its operand with the other ranks of the communicator named by its
// `comm` attribute (rlx/core/communicator.h: "world", the default, every rank of the job;
// "block:G" and "stride:S", groups of it; Send and Recv name world ranks and take "world" only):
//   AllReduce(x) {reduce = "sum"|"max"|"min"|"mean"}      -> x's type, the reduction over ranks
//   AllGather(x) {world = N}                           -> [N*d0, ...], rank r's x at block r
//   ReduceScatter(x) {reduce, world = N}               -> [d0/N, ...], block r of the reduction
//   AllToAll(x) {world = N}                            -> x's type; block j of rank i becomes
//                                                         block i of rank j (d0 divisible by N)
//   Broadcast(x) {root}                                -> root's x on every rank
//   Send(x) {peer}                                     -> x (sent to peer; the result orders it)
//   Recv(x) {peer}                                     -> x's type, filled from peer (x's values
//                                                         are not read: it carries the type)
// `world` is the communicator's size where it decides a shape (a group's size for a group); the
// run checks it against the channel. Broadcast's root is an index within the group. There is no MIR decomposition: only a target with a native collective engine claims
// them (cpu: Gloo), every other target refuses them by name; a collective is never staged
// through the host silently (only where the user allows it: rlx/core/host_collectives.h).
#include "ops/op_family.h"
#include "ops/op_helpers.h"
#include "rlx/core/communicator.h"

namespace rlx {
using namespace ops;

namespace {

bool collective_dtype(DType d) {
  switch (d) {
    case DType::kI8:
    case DType::kU8:
    case DType::kI32:
    case DType::kI64:
    case DType::kF16:
    case DType::kBF16:
    case DType::kF32:
    case DType::kF64:
      return true;
    default:
      return false;
  }
}

void check_operand(const Node& n, const TensorType& x) {
  if (!collective_dtype(x.dtype))
    fail("{}: {} is not a collective dtype (i8, u8, i32, i64, f16, bf16, f32, f64)", n.op, x.str());
  const std::string comm = n.attr_string("comm", "world");
  if (!parse_communicator(comm))
    fail("{}: communicator \"{}\" is not known: \"world\" (every rank), \"block:G\" (consecutive "
         "groups of G ranks) or \"stride:S\" (the ranks equal modulo S)",
         n.op, comm);
  if ((n.op == "Send" || n.op == "Recv") && comm != "world")
    fail("{}: peer is a rank of the job, so the communicator must be \"world\", got \"{}\"", n.op,
         comm);
}

void check_reduce(const Node& n, const TensorType& x) {
  const std::string r = n.attr_string("reduce", "sum");
  if (r != "sum" && r != "max" && r != "min" && r != "mean")
    fail("{}: reduce must be \"sum\", \"max\", \"min\" or \"mean\", got \"{}\"", n.op, r);
  if (r == "mean" && !float_like(x.dtype))
    fail("{}: reduce = \"mean\" needs a floating dtype, got {}", n.op, x.str());
}

// The static leading dim of x and the communicator size `world`, for ops that cut or stack
// blocks along dim 0.
std::pair<int64_t, int64_t> blocks(const Node& n, const TensorType& x) {
  const int64_t world = n.attr_int("world", 0);
  if (world < 1) fail("{}: attribute world (the communicator's size) must be >= 1", n.op);
  if (x.rank() < 1 || !x.shape[0].is_static())
    fail("{}: x needs a static leading dim to split or stack blocks on, got {}", n.op, x.str());
  return {x.shape[0].value, world};
}

std::vector<TensorType> infer_same(const std::vector<TensorType>& in, const Node& n) {
  check_operand(n, in[0]);
  if (n.op == "AllReduce") check_reduce(n, in[0]);
  if (n.op == "Broadcast" && n.attr_int("root", 0) < 0) fail("Broadcast: root must be a rank >= 0");
  if ((n.op == "Send" || n.op == "Recv") && n.attr_int("peer", -1) < 0)
    fail("{}: attribute peer (the other rank) must be given, >= 0", n.op);
  if (n.op == "AllToAll") {
    auto [d0, world] = blocks(n, in[0]);
    if (d0 % world) fail("AllToAll: leading dim {} is not divisible by world = {}", d0, world);
  }
  return one(in[0]);
}

std::vector<TensorType> infer_all_gather(const std::vector<TensorType>& in, const Node& n) {
  check_operand(n, in[0]);
  auto [d0, world] = blocks(n, in[0]);
  TensorType out = in[0];
  out.shape[0] = Dim(d0 * world);
  return one(out);
}

std::vector<TensorType> infer_reduce_scatter(const std::vector<TensorType>& in, const Node& n) {
  check_operand(n, in[0]);
  check_reduce(n, in[0]);
  auto [d0, world] = blocks(n, in[0]);
  if (d0 % world) fail("ReduceScatter: leading dim {} is not divisible by world = {}", d0, world);
  TensorType out = in[0];
  out.shape[0] = Dim(d0 / world);
  return one(out);
}

OpDef collective(const char* name, InferFn infer, Attrs sample_attrs, const char* summary) {
  OpDef d{name, OpLevel::kHir, OpClass::kOpaque, 1, 1, 1};
  d.infer = std::move(infer);
  d.sample = [sample_attrs](DType dt) -> std::optional<OpSample> {
    if (!collective_dtype(dt)) return std::nullopt;
    Attrs a = sample_attrs;
    if (a.count("reduce") && !float_like(dt)) a["reduce"] = std::string("sum");
    return sample_of({tt(dt, {4, 2})}, a);
  };
  d.summary = summary;
  d.communicates = true;
  return d;
}

}  // namespace

void collective_ops(OpFamily& f) {
  const Attrs none;
  f.add(collective("AllReduce", infer_same, {{"reduce", std::string("mean")}},
                   "the reduction {reduce} of x over the ranks of {comm}, on every rank; native "
                   "only (a collective engine: cpu uses Gloo)"));
  f.add(collective("AllGather", infer_all_gather, {{"world", int64_t{2}}},
                   "every rank's x stacked along dim 0 in rank order; native only"));
  f.add(collective("ReduceScatter", infer_reduce_scatter,
                   {{"world", int64_t{2}}, {"reduce", std::string("sum")}},
                   "block r (along dim 0) of the reduction over ranks, on rank r; native only"));
  f.add(collective("AllToAll", infer_same, {{"world", int64_t{2}}},
                   "block j of rank i's x becomes block i on rank j; native only"));
  f.add(collective("Broadcast", infer_same, none, "{root}'s x on every rank; native only"));
  f.add(collective("Send", infer_same, {{"peer", int64_t{1}}},
                   "sends x to rank {peer} and returns x; native only"));
  f.add(collective("Recv", infer_same, {{"peer", int64_t{0}}},
                   "a tensor of x's type received from rank {peer}; native only"));
}

}  // namespace rlx
