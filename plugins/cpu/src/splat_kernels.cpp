// Claims and runs the splatting ops' call kernels ("native:<Op>"); the kernels are in
// splat_project.cpp, splat_bin.cpp and splat_rasterize.cpp.
#include "splat_kernels.h"

#include <fmt/format.h>

#include <algorithm>

namespace rlx::cpu {

namespace {

const char* const kOps[] = {"ProjectGaussians", "ProjectGaussiansBackward", "TileBin", "Rasterize",
                            "RasterizeBackward"};

template <typename T>
void run_typed(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
               const std::vector<void*>& ptrs) {
  auto at = [&](size_t i) { return ptrs[k.inputs[i]]; };
  auto f = [&](size_t i) { return static_cast<const T*>(at(i)); };
  auto i32 = [&](size_t i) { return static_cast<const int32_t*>(at(i)); };
  auto out = [&](size_t i) { return static_cast<T*>(ptrs[k.outputs[i]]); };
  auto out_i32 = [&](size_t i) { return static_cast<int32_t*>(ptrs[k.outputs[i]]); };
  const std::string op = k.callee.substr(std::string("native:").size());
  const int64_t n = in[0].shape[0];
  if (op == "ProjectGaussians")
    return splat::project<T>(k.attrs, n, f(0), f(1), f(2), f(3), f(4), out(0), out(1), out(2),
                             out_i32(3), out_i32(4));
  if (op == "ProjectGaussiansBackward")
    return splat::project_backward<T>(k.attrs, n, f(0), f(1), f(2), f(3), f(4), i32(5), f(6), f(7),
                                      f(8), out(0), out(1), out(2));
  if (op == "TileBin")
    return splat::tile_bin<T>(k.attrs, n, f(0), f(1), i32(2),
                              std::get<int64_t>(k.attrs.at("capacity")), out_i32(0), out_i32(1));
  splat::RasterArgs r{n, in[2].shape[1], at(0), at(1), at(2), at(3), at(4), i32(5), i32(6)};
  if (op == "Rasterize") return splat::rasterize<T>(k.attrs, r, out(0), out(1), out_i32(2));
  splat::rasterize_backward<T>(k.attrs, r, f(7), i32(8), f(9), f(10), out(0), out(1), out(2),
                               out(3), out(4));
}

}  // namespace

std::optional<Verdict> claim_splat_op(const NodeSignature& s) {
  if (std::none_of(std::begin(kOps), std::end(kOps), [&](const char* o) { return s.op == o; }))
    return std::nullopt;
  const DType dt = s.inputs.empty() ? DType::kBool : s.inputs[0].dtype;
  if (dt != DType::kF32 && dt != DType::kF64)
    return Verdict::no(fmt::format("cpu's {} kernel computes in f32 or f64", s.op));
  return Verdict{true, fmt::format("tiled splatting kernel ({}, oneTBB)", dtype_name(dt))};
}

bool is_splat_callee(const std::string& callee) {
  return std::any_of(std::begin(kOps), std::end(kOps),
                     [&](const char* o) { return callee == fmt::format("native:{}", o); });
}

void run_splat_kernel(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                      const std::vector<void*>& ptrs) {
  if (in[0].dtype == DType::kF64) return run_typed<double>(k, in, ptrs);
  run_typed<float>(k, in, ptrs);
}

}  // namespace rlx::cpu
