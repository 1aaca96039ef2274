#include "coremltools_runner.h"

#include <fmt/format.h>

#include "rlx/core/error.h"
#include "rlx/core/safetensors.h"
#include "rlx/sdk/process.h"

namespace rlx::ane::test {

namespace fs = std::filesystem;

namespace {

constexpr int kTimeoutS = 600;

std::string last_line(const std::string& s) {
  const size_t end = s.find_last_not_of('\n');
  if (end == std::string::npos) return "";
  const size_t newline = s.rfind('\n', end);
  const size_t start = newline == std::string::npos ? 0 : newline + 1;
  return s.substr(start, end - start + 1);
}

// Runs a script of this folder; returns its JSON line (coremltools may print notices before it).
std::string run_script(const char* script, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {RLX_ANE_PYTHON, script};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string output;
  const int rc = sdk::run_command(argv, &output, kTimeoutS);
  if (rc != 0) throw_device_error(fmt::format("{} failed ({}): {}", script, rc, output));
  return last_line(output);
}

std::string run_checker(const std::vector<std::string>& args) {
  return run_script(RLX_ANE_CHECKER, args);
}

class CoreMlToolsRunner final : public PackageRunner {
 public:
  std::vector<Tensor> run(const fs::path& dir, const MilProgram& program,
                          const std::vector<Tensor>& inputs) override {
    TensorMap given;
    for (size_t i = 0; i < inputs.size(); ++i) given.emplace(program.inputs[i].name, inputs[i]);
    write_safetensors(dir / "inputs.safetensors", given);
    run_checker({(dir / kPackageName).string(), "--inputs", (dir / "inputs.safetensors").string(),
                 "--outputs", (dir / "outputs.safetensors").string()});
    TensorMap got = read_safetensors(dir / "outputs.safetensors");
    std::vector<Tensor> out;
    auto take = [&](const std::string& name) {
      auto it = got.find(name);
      if (it == got.end()) throw_device_error("coremltools_check.py returned no " + name);
      out.push_back(it->second);
    };
    for (const IoValue& io : program.outputs) take(io.name);
    for (const IndexCheck& c : program.checks) {
      take(c.position);
      take(c.value);
    }
    return out;
  }
};

}  // namespace

std::string coremltools_missing() {
  std::string output;
  const int rc = sdk::run_command({RLX_ANE_PYTHON, "-c", "import coremltools"}, &output, 120);
  if (rc == 0) return "";
  return fmt::format(
      "{} cannot import coremltools (scripts/test.sh installs it into the test "
      "venv): {}",
      RLX_ANE_PYTHON, output.substr(0, 300));
}

std::string check_package(const fs::path& package) {
  return run_checker({package.string()});
}

TensorMap evaluate_package(const fs::path& package, const TensorMap& inputs,
                           const fs::path& scratch) {
  const fs::path in = scratch / "inputs.safetensors", out = scratch / "outputs.safetensors";
  write_safetensors(in, inputs);
  run_checker({package.string(), "--inputs", in.string(), "--outputs", out.string()});
  return read_safetensors(out);
}

std::string builder_reference_ops() {
  return run_script(RLX_ANE_BUILDER, {});
}

std::shared_ptr<PackageRunner> AneOnCoreMlTools::open_runner() {
  return std::make_shared<CoreMlToolsRunner>();
}

std::shared_ptr<Target> ane_on_coremltools() {
  static auto target = std::make_shared<AneOnCoreMlTools>();
  return target;
}

}  // namespace rlx::ane::test
