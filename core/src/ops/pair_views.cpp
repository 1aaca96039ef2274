#include "ops/pair_views.h"

namespace rlx::ops {

ValueId pair_part(GraphBuilder& b, ValueId x, DType half, int64_t k) {
  const TensorType t = b.type(x);
  ValueId pairs = b.op("bitcast", {x}, {{"dtype", half}});
  IntList start(t.rank() + 1, 0), limit(t.rank() + 1, -1);
  start.back() = k;
  limit.back() = k + 1;
  return b.reshape(b.slice(pairs, start, limit), t.shape);
}

ValueId pair_join(GraphBuilder& b, ValueId first, ValueId second, DType whole) {
  Shape s = broadcast_shapes(b.type(first).shape, b.type(second).shape);
  Shape col = s;
  col.push_back(Dim(1));
  ValueId x = b.reshape(b.broadcast_to(first, s), col),
          y = b.reshape(b.broadcast_to(second, s), col);
  return b.op("bitcast", {b.concat({x, y}, static_cast<int64_t>(s.size()))}, {{"dtype", whole}});
}

}  // namespace rlx::ops
