#include "ane_target.h"

#include <fmt/format.h>

#include <cstring>
#include <random>

#include "rlx/core/error.h"

namespace rlx::ane {

namespace fs = std::filesystem;

namespace {

// A program written to a folder of its own and run by a PackageRunner: inputs cross into the
// package's layout (i64 as its words, which is the same bytes; bool as int32), outputs cross
// back, and the index checks become the error the cpu target raises.
class PackageExecutable final : public Executable {
 public:
  PackageExecutable(std::shared_ptr<PackageRunner> runner, const Graph& g, const PackageOptions& o)
      : runner_(std::move(runner)), program_(lower_to_mil(g, o.deployment)) {
    std::random_device rd;
    dir_ = fs::temp_directory_path() / fmt::format("rlx-ane-{:08x}{:08x}", rd(), rd());
    fs::create_directories(dir_);
    write_package(program_, o, dir_);
  }
  ~PackageExecutable() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  void run(const std::vector<void*>& buffers) override {
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < program_.inputs.size(); ++i) {
      const IoValue& io = program_.inputs[i];
      Tensor t(io.mil.dtype == mil::FLOAT16   ? DType::kF16
               : io.mil.dtype == mil::FLOAT32 ? DType::kF32
                                              : DType::kI32,
               io.mil.shape);
      if (io.dtype == DType::kBool) {
        for (int64_t k = 0; k < t.numel(); ++k)
          t.as<int32_t>()[k] = static_cast<const uint8_t*>(buffers[i])[k] != 0;
      } else {
        std::memcpy(t.data(), buffers[i], t.nbytes());
      }
      inputs.push_back(std::move(t));
    }
    std::vector<Tensor> results = runner_->run(dir_, program_, inputs);
    const size_t n = program_.outputs.size();
    if (results.size() != n + 2 * program_.checks.size())
      throw_device_error("ane: the package runner returned the wrong number of outputs");
    for (size_t c = 0; c < program_.checks.size(); ++c) {
      const IndexCheck& check = program_.checks[c];
      const int64_t position = static_cast<int64_t>(results[n + 2 * c].scalar_at(0));
      if (position >= check.count) continue;
      throw_index_error(check.op, static_cast<int64_t>(results[n + 2 * c + 1].scalar_at(0)),
                        position, check.axis_size);
    }
    for (size_t j = 0; j < n; ++j) {
      const IoValue& io = program_.outputs[j];
      void* dst = buffers[program_.inputs.size() + j];
      const Tensor& r = results[j];
      if (io.dtype == DType::kBool) {
        for (int64_t k = 0; k < r.numel(); ++k)
          static_cast<uint8_t*>(dst)[k] = r.as<int32_t>()[k] != 0;
      } else {
        std::memcpy(dst, r.data(), r.nbytes());
      }
    }
  }

 private:
  std::shared_ptr<PackageRunner> runner_;
  MilProgram program_;
  fs::path dir_;
};

}  // namespace

AneTarget::AneTarget() {
  static const std::string kChoices = std::string(deployment_names()) + "," + kComputeUnits;
  choices_.cpus = kChoices.c_str();
  choices_.context = this;
  choices_.select = [](void* self, const char* choice) noexcept -> const char* {
    try {
      return static_cast<AneTarget*>(self)->select(choice);
    } catch (...) {
      return "ane: the choice could not be applied";
    }
  };
}

const char* AneTarget::select(const std::string& choice) {
  if (const Deployment* d = find_deployment(choice)) {
    options_.deployment = *d;
    return nullptr;
  }
  for (const char* units : {"ALL", "CPU_AND_NE", "CPU_ONLY", "CPU_AND_GPU"})
    if (choice == units) {
      options_.compute_units = units;
      return nullptr;
    }
  choice_error_ =
      fmt::format("ane takes a deployment target ({}) or a compute-unit preference ({})",
                  deployment_names(), kComputeUnits);
  return choice_error_.c_str();
}

const void* AneTarget::extension(const std::string& name, uint32_t version) const {
  if (name == kTargetCpuExtension && version == kTargetCpuVersion) return &choices_;
  return nullptr;
}

Verdict AneTarget::claim_native(const NodeSignature& s) const {
  // constexpr_affine_dequantize, which holds QMatMul's int8 weights, came with iOS16.
  if (s.op == "QMatMul" && options_.deployment.spec_version < 7)
    return Verdict::no(fmt::format(
        "ane holds int8 weights with constexpr_affine_dequantize, which {} lacks: "
        "--deployment-target ios16 (or macos13) or later",
        options_.deployment.name));
  return claim(s);
}

Verdict AneTarget::can_execute() const {
  return Verdict::no(kNoCoreMl);
}

std::unique_ptr<Executable> AneTarget::compile_mir(const Graph& g) {
  std::shared_ptr<PackageRunner> runner = open_runner();
  if (!runner) throw_unsupported(std::string("ane cannot run here: ") + kNoCoreMl);
  return std::make_unique<PackageExecutable>(std::move(runner), g, options_);
}

std::vector<Artifact> AneTarget::emit_mir(const Graph& g, const fs::path& dir) {
  MilProgram program = lower_to_mil(g, options_.deployment);
  return write_package(program, options_, dir);
}

std::unique_ptr<Executable> AneTarget::compile(const lir::Program&) {
  throw_internal_error("ane takes MIR (program_level); compile(LIR) must not be called");
}

std::vector<Artifact> AneTarget::emit(const lir::Program&, const fs::path&) {
  throw_internal_error("ane takes MIR (program_level); emit(LIR) must not be called");
}

}  // namespace rlx::ane
