// Private helpers shared by the op definition files.
#pragma once
#include <fmt/format.h>

#include <optional>

#include "rlx/core/error.h"
#include "rlx/core/op_registry.h"

namespace rlx::ops {

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw_user_error(fmt::format(f, std::forward<Args>(args)...));
}

// Normalises a possibly negative axis against `rank`; throws when out of range.
int64_t norm_axis(int64_t axis, int64_t rank, const char* what = "axis");
void expect_same_dtype(const std::vector<TensorType>& in, const char* op);
std::vector<TensorType> one(TensorType t);

// Sample signatures for legality tables.
std::optional<OpSample> sample_of(std::vector<TensorType> in, Attrs attrs = {});
TensorType tt(DType d, Shape s);
bool float_like(DType d);  // floats and complex

// Infers a HIR op by running its decomposition on a scratch graph: the decomposition is the op's
// definition, so inference can never disagree with the lowering.
InferFn infer_by_decomposition(DecomposeFn dec);

}  // namespace rlx::ops
