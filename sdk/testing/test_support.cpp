#include "test_support.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "rlx/core/error.h"
#include "rlx/core/ir_text.h"
#include "rlx/registry/registry.h"

namespace rlx::test {

std::shared_ptr<Target> target_named(const std::string& name) {
  // Never destroyed, like the CLI's registry: unloading the plugin at exit while oneTBB worker
  // threads may still run its code would crash after the tests passed.
  static auto* targets = new std::map<std::string, std::shared_ptr<Target>>;
  auto it = targets->find(name);
  if (it != targets->end()) return it->second;
  registry::Options o;
  // RLX_TEST_PLUGIN_DIR is a ':'-separated list (rlx_add_target_tests: the target's build folder,
  // then the installed rlx's plugins).
  std::stringstream dirs(RLX_TEST_PLUGIN_DIR);
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty()) o.plugin_paths.push_back(dir);
  o.build_legality = false;
  return (*targets)[name] = registry::Registry::discover(o).target(name);
}

std::shared_ptr<Target> cpu_target() { return target_named("cpu"); }

std::shared_ptr<Target> target_under_test() {
  const char* name = std::getenv("RLX_TEST_TARGET");
  return name && *name ? target_named(name) : cpu_target();
}

NamedTensors run_text(const std::string& ir, const NamedTensors& inputs, std::shared_ptr<Target> target) {
  Graph g = parse_graph(ir, "test.rlx");
  Session s(std::move(target));
  CompiledModel model = s.compile(g);
  NamedTensors fresh = model.run(inputs);
  // Every suite also checks the steady-state path: outputs written in place into tensors that
  // hold garbage (all bits set: NaN for floats, -1 for integers), as a loop that reuses its
  // output map runs. A kernel that leaves an element unwritten or accumulates into its output
  // shows up here.
  NamedTensors reused;
  for (const auto& [name, t] : fresh) {
    Tensor garbage(t.dtype(), t.shape());
    std::memset(garbage.data(), 0xFF, garbage.nbytes());
    reused[name] = garbage;
  }
  model.run(inputs, reused);
  expect_all_close(fresh, reused, 1e-6, "a second run writing into reused outputs");
  return fresh;
}

std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.scalar_at(i));
  return v;
}

Tensor f32(std::vector<int64_t> shape, std::vector<float> v) { return Tensor::from<float>(DType::kF32, std::move(shape), v); }

std::string compile_error(const std::string& ir, std::shared_ptr<Target> target) {
  try {
    Session s(std::move(target));
    s.compile(parse_graph(ir, "test.rlx"));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void expect_all_close(const NamedTensors& want, const NamedTensors& got, double rel_tol, const std::string& what) {
  for (const auto& [name, t] : want) {
    auto it = got.find(name);
    ASSERT_NE(it, got.end()) << what << " has no output " << name;
    auto w = values(t), g = values(it->second);
    ASSERT_EQ(w.size(), g.size()) << what << " " << name;
    for (size_t i = 0; i < w.size(); ++i) {
      if (std::isnan(w[i]))
        EXPECT_TRUE(std::isnan(g[i])) << what << " " << name << "[" << i << "] = " << g[i];
      else if (std::isinf(w[i]))
        EXPECT_EQ(g[i], w[i]) << what << " " << name << "[" << i << "]";
      else
        EXPECT_NEAR(g[i], w[i], rel_tol * std::max(1.0, std::fabs(w[i]))) << what << " " << name << "[" << i << "]";
    }
  }
}

TempDir::TempDir() {
  std::string t = (std::filesystem::temp_directory_path() / "rlx-test-XXXXXX").string();
  if (!mkdtemp(t.data())) throw Error(ErrorKind::kUser, "cannot make a temporary folder " + t);
  path_ = t;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Emitted::Emitted(const std::string& ir, std::shared_ptr<Target> target) {
  Session s(target);
  artifacts_ = target->emit(s.compile(parse_graph(ir, "test.rlx")).lir_for({}), dir_.path());
}

}  // namespace rlx::test
