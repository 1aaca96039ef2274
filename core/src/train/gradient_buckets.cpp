// Why buckets: each AllReduce pays the engine's fixed cost (Gloo over loopback TCP: 0.4-1.5 ms
// for a small message on the 2-core dev machine, docs/parallel.md "Bandwidth"), so a model's
// dozens of small gradients (biases, norm scales) cost more in calls than in bytes. One call per
// bucket pays it once; the concatenation and the slices are one extra pass over the gradients.
#include "train/gradient_buckets.h"

#include <algorithm>
#include <map>

namespace rlx::train {

namespace {

int64_t numel_of(const TensorType& t) {
  int64_t n = 1;
  for (const Dim& d : t.shape) n *= d.value;
  return n;
}

void reduce_bucket(GraphBuilder& b, std::vector<ValueId>& values,
                   const std::vector<size_t>& members, const std::string& comm) {
  Attrs mean{{"reduce", std::string("mean")}};
  if (comm != "world") mean["comm"] = comm;
  if (members.size() == 1) {
    values[members[0]] = b.op("AllReduce", {values[members[0]]}, mean);
    return;
  }
  std::vector<ValueId> flat;
  for (size_t i : members) flat.push_back(b.reshape(values[i], {Dim(numel_of(b.type(values[i])))}));
  ValueId reduced = b.op("AllReduce", {b.concat(flat, 0)}, mean);
  int64_t at = 0;
  for (size_t i : members) {
    const TensorType t = b.type(values[i]);
    const int64_t n = numel_of(t);
    values[i] = b.reshape(b.slice(reduced, {at}, {at + n}), t.shape);
    at += n;
  }
}

}  // namespace

void all_reduce_mean_in_buckets(GraphBuilder& b, std::vector<ValueId>& values,
                                int64_t bucket_bytes, const std::string& comm,
                                int64_t first_bucket_bytes) {
  // Symbolic shapes cannot be concatenated at a known offset: those go alone.
  std::map<DType, std::vector<size_t>> open;
  std::map<DType, int64_t> bytes;
  std::map<DType, bool> first_done;
  for (size_t k = values.size(); k-- > 0;) {
    const TensorType& t = b.type(values[k]);
    if (!is_static(t.shape)) {
      reduce_bucket(b, values, {k}, comm);
      continue;
    }
    const int64_t size = numel_of(t) * static_cast<int64_t>(dtype_size(t.dtype));
    std::vector<size_t>& bucket = open[t.dtype];
    const int64_t cap = first_done[t.dtype] ? bucket_bytes : std::min(first_bucket_bytes, bucket_bytes);
    if (!bucket.empty() && bytes[t.dtype] + size > cap) {
      reduce_bucket(b, values, bucket, comm);
      bucket.clear();
      bytes[t.dtype] = 0;
      first_done[t.dtype] = true;
    }
    bucket.push_back(k);
    bytes[t.dtype] += size;
  }
  for (auto& [dtype, bucket] : open)
    if (!bucket.empty()) reduce_bucket(b, values, bucket, comm);
}

}  // namespace rlx::train
