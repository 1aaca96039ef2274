// Shared test helpers.
#pragma once
#include <filesystem>
#include <functional>
#include <optional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "rlx/core/runtime.h"
#include "rlx/core/target.h"
#include "rlx/core/tensor.h"

namespace rlx::test {

// The in-tree cpu target, loaded through the registry exactly as the CLI loads it.
std::shared_ptr<Target> cpu_target();
// The cpu target with some of its answers refused: where `refuse` returns a reason for a
// signature, claim_native (native = true) or accepts_primitive (false) says no with it; the cpu
// answers the rest. Lets a test take the path a target without that kernel takes (CG's
// decomposition, complex products on real parts, i64 on i32 words), run by the cpu.
using Refusal = std::function<std::optional<std::string>(const NodeSignature&, bool native)>;
std::shared_ptr<Target> cpu_refusing(Refusal refuse);
// Any in-tree target by name, the same way (throws the registry's error when it cannot run).
std::shared_ptr<Target> target_named(const std::string& name);
// Makes target_named(name) (and so RLX_TEST_TARGET and the suites) answer `target` instead of
// the registry's plugin: a target object only the test program can build, such as a plugin's
// target class given a stand-in device (plugins/metal/tests runs the suites on MSL compiled as
// C++). Call it before the first target_named(name).
void provide_target(const std::string& name, std::shared_ptr<Target> target);
// The target the suites run on: the one RLX_TEST_TARGET names, cpu when unset. Lets one suite
// of primitive tests check every target (plugins/gpu/tests runs the cpu suites on gpu).
std::shared_ptr<Target> target_under_test();
// Parses IR text, compiles it for `target` and runs it.
NamedTensors run_text(const std::string& ir, const NamedTensors& inputs,
                      std::shared_ptr<Target> target = target_under_test());
std::vector<double> values(const Tensor& t);
Tensor f32(std::vector<int64_t> shape, std::vector<float> v);
// An f32 tensor of `shape` with values drawn uniformly from [-bound, bound).
Tensor uniform_f32(std::mt19937& rng, std::vector<int64_t> shape, float bound);
// The message of the error compiling IR text for `target` throws, or "" when it compiles.
std::string compile_error(const std::string& ir, std::shared_ptr<Target> target);
// Every output of `want` is in `got` with its element count, each element within
// rel_tol * max(1, |want|) (NaN where want is NaN, the same infinity where want is infinite).
void expect_all_close(const NamedTensors& want, const NamedTensors& got, double rel_tol,
                      const std::string& what = "");

// A KV-cache step on `target` (present = scatter(past, position, k), read by a reduction too),
// three steps with the output given the input's memory, on the host and, where the target has
// a device, on it: the output must come back in that memory (updated in place) with the
// hand-computed values. GoogleTest assertions inside.
void check_in_place_cache_update(std::shared_ptr<Target> target);

// A while loop that counts i to 10 and sums 1..10 into acc, then returns i and acc + n: the
// shared suite runs it, and targets whose compiled forms have no loop show they refuse it.
inline constexpr const char* kWhileSumsOneToTen = R"(graph @t(%n: i64[]) {
  %zero = constant() {value = dense<i64[]: [0]>} : i64[]
  %i, %acc = while(%zero, %zero) : i64[], i64[] [
    graph @cond(%ci: i64[], %ca: i64[]) {
      %lim = constant() {value = dense<i64[]: [10]>} : i64[]
      %go = lt(%ci, %lim) : bool[]
      return %go
    },
    graph @body(%bi: i64[], %ba: i64[]) {
      %one = constant() {value = dense<i64[]: [1]>} : i64[]
      %next = add(%bi, %one) : i64[]
      %sum = add(%ba, %next) : i64[]
      return %next, %sum
    }
  ]
  %y = add(%acc, %n) : i64[]
  return %i, %y
}
)";

// A fresh folder under the system's temporary folder, removed with its contents at scope exit.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// A whole file's bytes ("" when it cannot be read).
std::string read_file(const std::filesystem::path& path);

// IR text compiled for `target` (static shapes) and emitted into a fresh folder, kept until the
// object goes out of scope.
// How many times `needle` occurs in `text` (a kernel header in an emitted source, ...).
size_t occurrences(const std::string& text, const std::string& needle);

class Emitted {
 public:
  Emitted(const std::string& ir, std::shared_ptr<Target> target);
  const std::vector<Artifact>& artifacts() const { return artifacts_; }
  const std::filesystem::path& dir() const { return dir_.path(); }
  std::string text(const std::string& file) const { return read_file(dir() / file); }

 private:
  TempDir dir_;
  std::vector<Artifact> artifacts_;
};

}  // namespace rlx::test
