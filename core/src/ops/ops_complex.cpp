// Complex numbers at their boundary: Real, Imag, Complex and Conj. Each decomposes into the
// bitcast view of a c64 tensor as f32 pairs plus f32 slices and concats (pair_views.h), so these
// are legal on every target that has f32, and the split-complex rewrite
// (dispatch/rewrite_complex.cpp) builds every other c64 op from them and real arithmetic.
#include "ops/op_family.h"
#include "ops/op_helpers.h"
#include "ops/pair_views.h"
#include "rlx/core/builder.h"

namespace rlx {
using namespace ops;

namespace {

ValueId part(GraphBuilder& b, ValueId x, int64_t k) {
  return pair_part(b, x, DType::kF32, k);
}

ValueId combine(GraphBuilder& b, ValueId re, ValueId im) {
  return pair_join(b, re, im, DType::kC64);
}

void expect_parts_of(const char* op, ValueId x, GraphBuilder& b) {
  const DType d = b.type(x).dtype;
  if (d != DType::kC64 && d != DType::kF32)
    fail("{} takes c64 or f32, got {}: c64 holds two f32, so convert other dtypes explicitly", op,
         dtype_name(d));
}

OpDef complex_op(const char* name, int arity, DecomposeFn dec, SampleFn sample,
                 const char* summary) {
  OpDef d{name, OpLevel::kHir, OpClass::kOpaque, arity, arity, 1};
  d.infer = infer_by_decomposition(dec);
  d.decompose = std::move(dec);
  d.sample = std::move(sample);
  d.summary = summary;
  return d;
}

std::optional<OpSample> c64_sample(DType d) {
  if (d != DType::kC64) return std::nullopt;
  return sample_of({tt(d, {2, 3})});
}

}  // namespace

void complex_ops(OpFamily& r) {
  // Real and Imag of an f32 tensor are the tensor and zeros (numpy.real, numpy.imag).
  r.add(complex_op(
      "Real", 1,
      [](GraphBuilder& b, const Node&, const std::vector<ValueId>& in) {
        expect_parts_of("Real", in[0], b);
        if (b.type(in[0]).dtype == DType::kF32) return std::vector<ValueId>{in[0]};
        return std::vector<ValueId>{part(b, in[0], 0)};
      },
      c64_sample, "real part of a complex tensor (f32)"));
  r.add(complex_op(
      "Imag", 1,
      [](GraphBuilder& b, const Node&, const std::vector<ValueId>& in) {
        expect_parts_of("Imag", in[0], b);
        if (b.type(in[0]).dtype == DType::kF32)
          return std::vector<ValueId>{b.full_like(in[0], 0.0)};
        return std::vector<ValueId>{part(b, in[0], 1)};
      },
      c64_sample, "imaginary part of a complex tensor (f32)"));
  r.add(complex_op(
      "Complex", 2,
      [](GraphBuilder& b, const Node&, const std::vector<ValueId>& in) {
        for (ValueId v : in)
          if (b.type(v).dtype != DType::kF32)
            fail(
                "Complex takes f32 real and imaginary parts, got {}: c64 holds two f32, so "
                "convert explicitly",
                dtype_name(b.type(v).dtype));
        return std::vector<ValueId>{combine(b, in[0], in[1])};
      },
      [](DType d) -> std::optional<OpSample> {
        if (d != DType::kF32) return std::nullopt;
        return sample_of({tt(d, {2, 3}), tt(d, {2, 3})});
      },
      "c64 from f32 real and imaginary parts, with numpy broadcasting"));
  r.add(complex_op(
      "Conj", 1,
      [](GraphBuilder& b, const Node&, const std::vector<ValueId>& in) {
        expect_parts_of("Conj", in[0], b);
        if (b.type(in[0]).dtype == DType::kF32) return std::vector<ValueId>{in[0]};
        return std::vector<ValueId>{
            combine(b, part(b, in[0], 0), b.unary("neg", part(b, in[0], 1)))};
      },
      c64_sample, "complex conjugate"));
}

}  // namespace rlx
