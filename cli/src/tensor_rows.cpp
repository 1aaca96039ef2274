#include "tensor_rows.h"

#include <cstring>

#include "rlx/core/host_memory.h"

namespace rlx::cli {

Tensor rows(const Tensor& t, int64_t at, int64_t count, const std::shared_ptr<Target>& target) {
  std::vector<int64_t> shape = t.shape();
  const size_t width = shape[0] ? t.nbytes() / static_cast<size_t>(shape[0]) : 0;
  shape[0] = count;
  Tensor out = target ? output_tensor(target, t.dtype(), shape) : Tensor(t.dtype(), shape);
  std::memcpy(out.data(), static_cast<const char*>(t.data()) + static_cast<size_t>(at) * width,
              static_cast<size_t>(count) * width);
  return out;
}

Tensor join_rows(const std::vector<Tensor>& parts) {
  std::vector<int64_t> shape = parts.front().shape();
  shape[0] = 0;
  for (const Tensor& p : parts) shape[0] += p.shape()[0];
  Tensor out(parts.front().dtype(), shape);
  size_t at = 0;
  for (const Tensor& p : parts) {
    std::memcpy(static_cast<char*>(out.data()) + at, p.data(), p.nbytes());
    at += p.nbytes();
  }
  return out;
}

}  // namespace rlx::cli
