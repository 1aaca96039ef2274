// Each call builds its module once (shapes and attributes are constants of the text) and owns a
// small status buffer, zeroed at the start of every run, that the kernels report into; TileBin
// also owns its per-tile counters and the scratch half of its per-tile radix sort. Nothing in a
// run waits for the host, so a run may be recorded as a CUDA graph and replayed.
#include "splat_call.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>

#include "rlx/core/error.h"
#include "splat_cuda_kernels.h"

namespace rlx::cuda {

namespace {

constexpr std::array<const char*, 5> kOps = {"ProjectGaussians", "ProjectGaussiansBackward",
                                             "TileBin", "Rasterize", "RasterizeBackward"};

bool is_splat_op(const std::string& op) {
  return std::find(kOps.begin(), kOps.end(), op) != kOps.end();
}

int64_t int_attr(const lir::CallKernel& k, const char* key) {
  auto it = k.attrs.find(key);
  if (it == k.attrs.end())
    throw_internal_error(fmt::format("cuda: {} has no attribute {}", k.callee, key));
  return std::get<int64_t>(it->second);
}

// The near plane: a float attribute, or an integer one, 0.01 when absent (as on the cpu).
double near_attr(const lir::CallKernel& k) {
  auto it = k.attrs.find("near");
  if (it == k.attrs.end()) return 0.01;
  if (const auto* d = std::get_if<double>(&it->second)) return *d;
  return static_cast<double>(std::get<int64_t>(it->second));
}

class SplatCall final : public gpu_host::VendorCall {
 public:
  SplatCall(CudaDevice& device, const lir::CallKernel& call, const lir::Program& program)
      : device_(device), op_(call.callee.substr(7)) {
    where_ = call.loc.empty() ? op_ : fmt::format("{} ('{}')", op_, call.loc);
    auto buffer = [&](const std::vector<int32_t>& list, size_t i) -> const lir::Buffer& {
      return program.buffers.at(list.at(i));
    };
    const lir::Buffer& first = buffer(call.inputs, 0);
    shape_.op = op_;
    shape_.f64 = first.dtype == DType::kF64;
    shape_.gaussians = first.shape.at(0);
    shape_.width = int_attr(call, "width");
    shape_.height = int_attr(call, "height");
    shape_.near = near_attr(call);
    if (op_ == "TileBin") shape_.capacity = buffer(call.outputs, 1).numel();
    if (op_ == "Rasterize" || op_ == "RasterizeBackward") {
      shape_.channels = buffer(call.inputs, 2).shape.at(1);
      shape_.capacity = buffer(call.inputs, 6).numel();
    }
    if (shape_.gaussians > std::numeric_limits<int32_t>::max())
      throw_user_error(fmt::format(
          "{}: {} Gaussians are more than the tile lists' i32 indices can name; split the scene",
          where_, shape_.gaussians));
    for (int32_t b : call.outputs)
      output_bytes_.push_back(static_cast<size_t>(program.buffers.at(b).nbytes()));
    module_ = device_.build(splat_kernel_source(shape_));
    status_ = device_.allocate(sizeof(Status));
    if (op_ == "TileBin") {
      counts_ = device_.allocate(static_cast<size_t>(shape_.tiles()) * sizeof(uint32_t));
      scratch_ = device_.allocate(
          std::max<size_t>(static_cast<size_t>(shape_.capacity) * sizeof(int32_t), 1));
    }
  }

  ~SplatCall() override {
    for (gpu_host::DeviceBuffer* b : {&status_, &counts_, &scratch_})
      if (b->valid()) device_.release(*b);
  }
  SplatCall(const SplatCall&) = delete;
  SplatCall& operator=(const SplatCall&) = delete;

  void run(const std::vector<const gpu_host::DeviceBuffer*>& operands) override {
    const size_t inputs = operands.size() - output_bytes_.size();
    const auto in = [&](size_t i) { return operands.at(i); };
    const auto out = [&](size_t i) { return operands.at(inputs + i); };
    const int64_t n = shape_.gaussians, tiled = shape_.tiles() * kSplatBlock;
    device_.zero(status_, sizeof(Status));
    if (op_ == "ProjectGaussians") {
      launch("project", {in(0), in(1), in(2), in(3), in(4), out(0), out(1), out(2), out(3), out(4)},
             n);
    } else if (op_ == "ProjectGaussiansBackward") {
      launch(
          "project_backward",
          {in(0), in(1), in(2), in(3), in(4), in(5), in(6), in(7), in(8), out(0), out(1), out(2)},
          n);
    } else if (op_ == "TileBin") {
      device_.zero(counts_, static_cast<size_t>(shape_.tiles()) * sizeof(uint32_t));
      launch("bin_count", {in(0), in(2), &counts_}, n);
      launch("bin_scan", {&counts_, out(0), &status_}, kSplatBlock);
      launch("bin_fill", {in(0), in(2), &counts_, out(1), &status_}, n);
      launch("bin_sort", {in(1), out(0), out(1), &scratch_, &status_}, tiled);
      launch("bin_tail", {out(0), out(1)}, shape_.capacity);
    } else if (op_ == "Rasterize") {
      launch("rasterize",
             {in(0), in(1), in(2), in(3), in(4), in(5), in(6), out(0), out(1), out(2), &status_},
             tiled);
    } else {
      // The gradients are sums of atomic additions: they start from zero on every run.
      for (size_t i = 0; i < output_bytes_.size(); ++i)
        if (output_bytes_[i] > 0) device_.zero(*out(i), output_bytes_[i]);
      launch("rasterize_backward",
             {in(0), in(1), in(2), in(3), in(4), in(5), in(6), in(7), in(8), in(9), in(10), out(0),
              out(1), out(2), out(3), out(4), &status_},
             tiled);
    }
  }

  void check() override {
    Status st{};
    device_.download(status_, st.data(), sizeof st);
    const auto as_int = [](uint64_t bits) { return static_cast<int64_t>(bits); };
    switch (static_cast<SplatStatus>(st[0])) {
      case SplatStatus::kOk:
        return;
      case SplatStatus::kOverCapacity:
        throw_user_error(fmt::format(
            "{}: the Gaussians cover {} (tile, Gaussian) pairs but capacity is {}; build the graph "
            "with capacity >= {} (the sum of ProjectGaussians' tile_counts bounds it)",
            where_, st[1], shape_.capacity, st[1]));
      case SplatStatus::kTooManyPairs:
        throw_user_error(
            fmt::format("{}: {} (tile, Gaussian) pairs do not fit i32 offsets; render fewer or "
                        "smaller Gaussians, or a smaller image",
                        where_, st[1]));
      case SplatStatus::kBadOffsets:
        throw_user_error(fmt::format(
            "{}: tile_offsets[{}] = {} and tile_offsets[{}] = {} are not a range of gaussian_ids "
            "(of length {}); pass the tile_offsets and gaussian_ids of a TileBin of the same "
            "width and height",
            where_, st[1], as_int(st[2]), st[1] + 1, as_int(st[3]), shape_.capacity));
      case SplatStatus::kBadId:
        throw_user_error(fmt::format(
            "{}: gaussian_ids[{}] = {} inside a tile's list is not one of the {} Gaussians; pass "
            "the gaussian_ids TileBin made for these Gaussians",
            where_, st[1], as_int(st[2]), shape_.gaussians));
      case SplatStatus::kBadLast:
        throw_user_error(fmt::format(
            "{}: last_index of pixel {} (row {}, column {}) is {}, not a position in its tile's "
            "list; pass the last_index of the Rasterize this is the gradient of",
            where_, st[1], st[1] / static_cast<uint64_t>(shape_.width),
            st[1] % static_cast<uint64_t>(shape_.width), as_int(st[2])));
      case SplatStatus::kBadBlock:
        throw_internal_error(
            fmt::format("cuda: {}: a splatting kernel ran in blocks of {} threads; it is written "
                        "for {} (__launch_bounds__)",
                        where_, st[1], kSplatBlock));
    }
    throw_internal_error(fmt::format("cuda: {}: unknown splatting status {}", where_, st[0]));
  }

  bool recordable() const override { return true; }

 private:
  using Status = std::array<uint64_t, 4>;  // SplatStatus and its three numbers

  CudaDevice& device_;
  std::string op_, where_;
  SplatCallShape shape_;
  std::vector<size_t> output_bytes_;
  std::unique_ptr<gpu_host::Module> module_;
  gpu_host::DeviceBuffer status_, counts_, scratch_;

  void launch(const std::string& symbol, const std::vector<const gpu_host::DeviceBuffer*>& args,
              int64_t work) {
    if (work > 0) device_.launch(*module_, symbol, args, work);
  }
};

}  // namespace

std::optional<Verdict> claim_splat(const NodeSignature& s) {
  if (!is_splat_op(s.op)) return std::nullopt;
  const DType dt = s.inputs.empty() ? DType::kBool : s.inputs[0].dtype;
  if (dt != DType::kF32 && dt != DType::kF64)
    return Verdict::no(fmt::format("cuda's {} kernel computes in f32 or f64", s.op));
  return Verdict{true, fmt::format("CUDA splatting kernel ({})", dtype_name(dt))};
}

std::string splat_vendor(const lir::CallKernel& call) {
  if (call.callee.rfind("native:", 0) != 0 || !is_splat_op(call.callee.substr(7))) return "";
  return "rlx splat kernels";
}

std::unique_ptr<gpu_host::VendorCall> plan_splat(CudaDevice& device, const lir::CallKernel& call,
                                                 const lir::Program& program) {
  return std::make_unique<SplatCall>(device, call, program);
}

}  // namespace rlx::cuda
